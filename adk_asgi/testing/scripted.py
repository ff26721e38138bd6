"""A scripted ``BaseLlm`` that streams like Gemini, for tests and the offline demo.

No machine in CI reaches Gemini, yet the bridge must be exercised against the exact shape of
events ADK produces for a real streaming model: delta-only partials, then one aggregated final
response sharing the partials' event id, function calls with stable ids, usage on the final.
``ScriptedLlm`` produces that shape from a tiny script language (``Text``, ``Thought``, ``Call``,
``Code``, ``CodeResult``, ``Image``, ``Fail``…) so tests state *what* the model says and the model
takes care of *how* Gemini says it.

The turn machinery (:meth:`ScriptedLlm.next_turn`, :func:`assign_call_ids`,
:func:`turn_to_responses`) is public and free of I/O so the live connection (``connect()``, in
:mod:`.live`) reuses it instead of re-deriving Gemini's streaming rules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias
from uuid import uuid4

from google.adk.models.llm_response import LlmResponse
from google.genai import types

from adk_asgi.adk.private import json_to_partial_args

__all__ = [
    "DEFAULT_MODEL_NAME",
    "Blocked",
    "Call",
    "Code",
    "CodeResult",
    "Fail",
    "Image",
    "Responder",
    "ScriptExhaustedError",
    "ScriptedModelError",
    "Segment",
    "Source",
    "Text",
    "Thought",
    "Turn",
    "assign_call_ids",
    "code_execution_part",
    "grounding_of",
    "new_call_id",
    "prompt_tokens",
    "turn_to_responses",
]

DEFAULT_MODEL_NAME = "scripted"
"""Deliberately not Gemini-like: ADK's name-based Gemini fallbacks would otherwise warn."""


class ScriptedModelError(RuntimeError):
    """Raised by the scripted model, like a backend failing mid-stream."""


class ScriptExhaustedError(ScriptedModelError):
    """The model was called more often than turns were scripted."""


@dataclass(frozen=True, slots=True)
class Text:
    """Visible answer text; streamed in ``chunk_size`` deltas."""

    text: str


@dataclass(frozen=True, slots=True)
class Thought:
    """Reasoning text (``Part.thought=True``); streamed like text."""

    text: str


@dataclass(frozen=True, slots=True)
class Call:
    """A function call. Without an ``id`` the model assigns one (see ``id_factory``).

    ``stream_args``: the call's arguments stream, as ADK's Anthropic, OpenAI and LiteLLM models
    stream them (and Vertex with ``stream_function_call_arguments``): a partial response that
    opens the call (``will_continue=True``), then one per ``chunk_size`` characters of the
    arguments' JSON text (``json_text``, or ``json.dumps(args)``), each with the
    ``partial_args`` ADK's own tracker makes of that text; the final response has the whole
    call, as always. (SSE only: ADK's live flow runs any call it gets, partial or not.)"""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    stream_args: bool = False
    json_text: str | None = None


@dataclass(frozen=True, slots=True)
class Source:
    """A web page the answer is grounded in (Google Search grounding): the turn's
    ``grounding_metadata`` cites it (``grounding_chunks[].web``), as Gemini's does. Not
    streamed: it comes with the end of the turn."""

    url: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class Blocked:
    """Gemini stops the answer here and says why (``finishReason``: ``SAFETY``,
    ``MALFORMED_FUNCTION_CALL``…), with no content of its own: ADK reports it as the response's
    ``error_code``, and ``message`` as its ``error_message``."""

    reason: str = "SAFETY"
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Code:
    """Code the model runs with Gemini's code execution (ADK's ``BuiltInCodeExecutor``): an
    ``executable_code`` part, which Gemini streams in a chunk of its own. Gemini runs it, so
    the script says what it printed with a :class:`CodeResult` after it."""

    code: str
    language: str = "PYTHON"


@dataclass(frozen=True, slots=True)
class CodeResult:
    """What the code before it printed (a ``code_execution_result`` part, in a chunk of its
    own); ``outcome`` as Gemini says it (``OUTCOME_OK``, ``OUTCOME_FAILED``,
    ``OUTCOME_DEADLINE_EXCEEDED``)."""

    output: str
    outcome: str = "OUTCOME_OK"


@dataclass(frozen=True, slots=True)
class Image:
    """An image the model returns inline (an ``inline_data`` part, in a chunk of its own): what
    Gemini sends after a code result for a chart the code drew. ADK's ``BuiltInCodeExecutor``
    saves it as an artifact of the chat."""

    data: bytes
    mime_type: str = "image/png"


@dataclass(frozen=True, slots=True)
class Fail:
    """Raise :class:`ScriptedModelError` here, after the preceding segments were streamed."""

    message: str = "scripted model failure"


Segment: TypeAlias = Text | Thought | Call | Code | CodeResult | Image | Source | Blocked | Fail
Turn: TypeAlias = Sequence[Segment]
Responder: TypeAlias = Callable[[list[types.Content]], Turn]
"""A function of the conversation as the model sees it (``llm_request.contents``)."""


def new_call_id() -> str:
    """Default call id; not ``adk-`` prefixed because ADK strips those from model history."""
    return f"call_{uuid4().hex[:16]}"


def assign_call_ids(turn: Turn, id_factory: Callable[[], str] = new_call_id) -> list[Segment]:
    """Give every ``Call`` an id once, so every rendering of the turn names the same call.

    ADK assigns ``adk-…`` ids to id-less calls separately on the partial and the final event
    (docs/internals/architecture.md#streaming-events); a real Gemini stream shares one id, and so
    must we.
    """
    return [
        replace(seg, args=dict(seg.args), id=id_factory())
        if isinstance(seg, Call) and not seg.id
        else seg
        for seg in turn
    ]


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _text_part(text: str, thought: bool) -> types.Part:
    # Mirror StreamingResponseAggregator: thoughts carry thought=True, answer text leaves it unset.
    return types.Part(text=text, thought=True) if thought else types.Part.from_text(text=text)


def _call_part(call: Call) -> types.Part:
    return types.Part(
        function_call=types.FunctionCall(id=call.id, name=call.name, args=dict(call.args))
    )


def code_execution_part(segment: Code | CodeResult | Image) -> types.Part:
    """The part Gemini sends for a code execution segment (a chunk of its own, streamed or
    not), as google-genai reads it."""
    if isinstance(segment, Code):
        language = types.Language(segment.language)
        return types.Part(
            executable_code=types.ExecutableCode(code=segment.code, language=language)
        )
    if isinstance(segment, CodeResult):
        outcome = types.Outcome(segment.outcome)
        result = types.CodeExecutionResult(outcome=outcome, output=segment.output)
        return types.Part(code_execution_result=result)
    return types.Part(inline_data=types.Blob(data=segment.data, mime_type=segment.mime_type))


def _streamed_call(call: Call, chunk_size: int) -> Iterator[LlmResponse]:
    """A call whose arguments stream, as ADK's Anthropic model yields it (``anthropic_llm``:
    the opening ``will_continue`` part, then each piece of JSON text as ADK's
    ``_JsonPathTracker`` turns it into ``partial_args``,
    :func:`~adk_asgi.adk.private.json_to_partial_args`)."""

    def piece(partial_args: list[types.PartialArg] | None) -> LlmResponse:
        function_call = types.FunctionCall(
            id=call.id, name=call.name, partial_args=partial_args, will_continue=True
        )
        part = types.Part(function_call=function_call)
        return LlmResponse(content=types.Content(role="model", parts=[part]), partial=True)

    yield piece(None)
    pieces_of = json_to_partial_args()
    text = call.json_text if call.json_text is not None else json.dumps(dict(call.args))
    for delta in _chunks(text, chunk_size):
        yield piece(pieces_of(delta) or None)


def _tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def _aggregate(turn: Sequence[Segment]) -> list[types.Part]:
    """The final response's parts, as ADK's progressive ``StreamingResponseAggregator`` builds
    them: order kept, consecutive text of the same kind (thought / answer) merged, empty text
    dropped."""
    parts: list[types.Part] = []
    buffer: list[str] = []
    buffer_is_thought = False

    def flush() -> None:
        if buffer:
            parts.append(_text_part("".join(buffer), buffer_is_thought))
            buffer.clear()

    for seg in turn:
        if isinstance(seg, Text | Thought):
            if not seg.text:
                continue
            is_thought = isinstance(seg, Thought)
            if buffer and is_thought != buffer_is_thought:
                flush()
            buffer_is_thought = is_thought
            buffer.append(seg.text)
        elif isinstance(seg, Call):
            flush()
            parts.append(_call_part(seg))
        elif isinstance(seg, Code | CodeResult | Image):
            flush()
            parts.append(code_execution_part(seg))
    flush()
    return parts


def turn_to_responses(
    turn: Turn,
    *,
    stream: bool,
    chunk_size: int = 8,
    prompt_token_count: int = 0,
    id_factory: Callable[[], str] = new_call_id,
) -> Iterator[LlmResponse]:
    """Render one scripted turn as the ``LlmResponse`` sequence Gemini would produce.

    ``stream=True``: one ``partial=True`` response per text/thought delta, per call and per code
    execution part (code, result, image; each carrying only its delta), then one
    ``partial=False`` response with everything aggregated.
    ``stream=False``: only the aggregated one. The final response always has
    ``finish_reason=STOP`` and ``usage_metadata``. A ``Fail`` segment raises
    :class:`ScriptedModelError` when reached, i.e. after the partials before it were yielded
    (and before anything in non-streaming mode, where nothing precedes the final response).

    Synchronous on purpose: pacing (``await asyncio.sleep``) belongs to the caller, so the SSE
    path and a live connection can pace the same sequence differently.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    segments = assign_call_ids(turn, id_factory)
    done: list[Segment] = []
    blocked: Blocked | None = None
    for seg in segments:
        if isinstance(seg, Fail):
            raise ScriptedModelError(seg.message)
        if isinstance(seg, Blocked):  # (the answer ends here)
            blocked = seg
            break
        if stream:
            if isinstance(seg, Call) and seg.stream_args:
                yield from _streamed_call(seg, chunk_size)
            elif isinstance(seg, Call):
                yield LlmResponse(
                    content=types.Content(role="model", parts=[_call_part(seg)]), partial=True
                )
            elif isinstance(seg, Code | CodeResult | Image):
                yield LlmResponse(
                    content=types.Content(role="model", parts=[code_execution_part(seg)]),
                    partial=True,
                )
            elif isinstance(seg, Text | Thought):  # (a source comes with the final response)
                for delta in _chunks(seg.text, chunk_size):
                    yield LlmResponse(
                        content=types.Content(
                            role="model", parts=[_text_part(delta, isinstance(seg, Thought))]
                        ),
                        partial=True,
                    )
        done.append(seg)

    parts = _aggregate(done)
    answer_chars = sum(len(s.text) for s in done if isinstance(s, Text))
    thought_chars = sum(len(s.text) for s in done if isinstance(s, Thought))
    calls = sum(1 for s in done if isinstance(s, Call))
    candidates = _tokens(answer_chars) + 8 * calls
    thoughts = _tokens(thought_chars)
    reason = types.FinishReason(blocked.reason) if blocked else types.FinishReason.STOP
    if blocked is not None and stream:
        # As ADK's aggregator yields Gemini's last chunk, which has no content: the finish
        # reason as the error code (the finish message is dropped on the way)
        yield LlmResponse(partial=True, finish_reason=reason, error_code=blocked.reason)
    yield LlmResponse(
        # Like Gemini's aggregator: no parts at all means no content.
        content=types.Content(role="model", parts=parts) if parts else None,
        grounding_metadata=grounding_of(done),
        partial=False,
        finish_reason=reason,
        error_code=blocked.reason if blocked else None,
        error_message=None if blocked is None or stream else blocked.message,
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt_token_count,
            candidates_token_count=candidates,
            thoughts_token_count=thoughts or None,
            total_token_count=prompt_token_count + candidates + thoughts,
        ),
        model_version=DEFAULT_MODEL_NAME,
    )


def grounding_of(turn: Sequence[Segment]) -> types.GroundingMetadata | None:
    """The grounding metadata that cites the turn's ``Source`` segments, or ``None``."""
    chunks = [
        types.GroundingChunk(web=types.GroundingChunkWeb(uri=s.url, title=s.title or None))
        for s in turn
        if isinstance(s, Source)
    ]
    return types.GroundingMetadata(grounding_chunks=chunks) if chunks else None


def _prompt_chars(contents: Sequence[types.Content]) -> int:
    total = 0
    for content in contents:
        for part in content.parts or ():
            if part.text:
                total += len(part.text)
            elif part.function_call is not None:
                call = part.function_call
                total += len(call.name or "") + len(str(call.args or {}))
            elif part.function_response is not None:
                total += len(str(part.function_response.response or {}))
    return total


def prompt_tokens(contents: Sequence[types.Content]) -> int:
    """The scripted ``prompt_token_count`` for a conversation (about 4 characters a token)."""
    return _tokens(_prompt_chars(contents))
