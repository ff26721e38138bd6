"""A scripted ``BaseLlm`` that streams like Gemini, for tests and the offline demo.

No machine in CI reaches Gemini, yet the bridge must be exercised against the exact shape of
events ADK produces for a real streaming model: delta-only partials, then one aggregated final
response sharing the partials' event id, function calls with stable ids, usage on the final.
``ScriptedLlm`` produces that shape from a tiny script language (``Text``, ``Thought``, ``Call``,
``Fail``) so tests state *what* the model says and the model takes care of *how* Gemini says it.

The turn machinery (:meth:`ScriptedLlm.next_turn`, :func:`assign_call_ids`,
:func:`turn_to_responses`) is public and free of I/O so the live connection (``connect()``, in
:mod:`adk_asgi.testing.live`) reuses it instead of re-deriving Gemini's streaming rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias
from uuid import uuid4

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field, PrivateAttr

if TYPE_CHECKING:
    from google.adk.models.llm_request import LlmRequest

    from adk_asgi.testing.live import ScriptedLiveConnection

__all__ = [
    "DEFAULT_MODEL_NAME",
    "Call",
    "Fail",
    "Responder",
    "ScriptExhaustedError",
    "ScriptedLlm",
    "ScriptedModelError",
    "Segment",
    "Text",
    "Thought",
    "Turn",
    "assign_call_ids",
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
    """A function call. Without an ``id`` the model assigns one (see ``id_factory``)."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """Raise :class:`ScriptedModelError` here, after the preceding segments were streamed."""

    message: str = "scripted model failure"


Segment: TypeAlias = Text | Thought | Call | Fail
Turn: TypeAlias = Sequence[Segment]
Responder: TypeAlias = Callable[[list[types.Content]], Turn]
"""A function of the conversation as the model sees it (``llm_request.contents``)."""


def new_call_id() -> str:
    """Default call id; not ``adk-`` prefixed because ADK strips those from model history."""
    return f"call_{uuid4().hex[:16]}"


def assign_call_ids(turn: Turn, id_factory: Callable[[], str] = new_call_id) -> list[Segment]:
    """Give every ``Call`` an id once, so every rendering of the turn names the same call.

    ADK assigns ``adk-…`` ids to id-less calls separately on the partial and the final event
    (docs/architecture.md#streaming-events); a real Gemini stream shares one id, and so must we.
    """
    return [
        Call(seg.name, dict(seg.args), id_factory())
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

    ``stream=True``: one ``partial=True`` response per text/thought delta and per call (each
    carrying only its delta), then one ``partial=False`` response with everything aggregated.
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
    for seg in segments:
        if isinstance(seg, Fail):
            raise ScriptedModelError(seg.message)
        if stream:
            if isinstance(seg, Call):
                yield LlmResponse(
                    content=types.Content(role="model", parts=[_call_part(seg)]), partial=True
                )
            else:
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
    yield LlmResponse(
        # Like Gemini's aggregator: no parts at all means no content.
        content=types.Content(role="model", parts=parts) if parts else None,
        partial=False,
        finish_reason=types.FinishReason.STOP,
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt_token_count,
            candidates_token_count=candidates,
            thoughts_token_count=thoughts or None,
            total_token_count=prompt_token_count + candidates + thoughts,
        ),
        model_version=DEFAULT_MODEL_NAME,
    )


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


REQUEST_LOG_SIZE = 1000
"""How many requests a ScriptedLlm remembers: enough for any test, bounded for a long demo."""


class ScriptedLlm(BaseLlm):
    """A deterministic stand-in for Gemini, scripted by turns or by a responder.

    ``ScriptedLlm(turns=[[Text("hi")], [Call("f", {"x": 1})]])`` answers model call *n* with
    turn *n*; ``ScriptedLlm(responder=fn)`` answers with ``fn(llm_request.contents)``. One
    instance may serve concurrent calls (ADK shares model instances): per-call state is local,
    and the only shared state is the turn cursor and the request log, both updated
    synchronously. ``connect()`` serves ``Runner.run_live`` from the same script (see
    :mod:`adk_asgi.testing.live` for the live shapes and the audio convention).
    """

    model: str = DEFAULT_MODEL_NAME
    chunk_size: int = Field(default=8, ge=1)
    """Characters per streamed text/thought delta."""
    delay: float = Field(default=0.0, ge=0.0)
    """Seconds to sleep before each response; 0 still yields to the event loop, like I/O."""

    # Callables live in private attributes so the model stays serialisable (model_dump).
    # (A factory, not default=new_call_id: pydantic would bind a plain function default.)
    _id_factory: Callable[[], str] = PrivateAttr(default_factory=lambda: new_call_id)
    _turns: list[Turn] | None = PrivateAttr(default=None)
    _responder: Responder | None = PrivateAttr(default=None)
    _transcribe: Callable[[bytes], str] | None = PrivateAttr(default=None)
    _synthesize: Callable[[str], bytes] | None = PrivateAttr(default=None)
    _cursor: int = PrivateAttr(default=0)
    _requests: deque[LlmRequest] = PrivateAttr(
        default_factory=lambda: deque(maxlen=REQUEST_LOG_SIZE)
    )

    def __init__(
        self,
        *,
        turns: Sequence[Turn] | None = None,
        responder: Responder | None = None,
        id_factory: Callable[[], str] = new_call_id,
        transcribe: Callable[[bytes], str] | None = None,
        synthesize: Callable[[str], bytes] | None = None,
        **fields: Any,
    ) -> None:
        """``id_factory`` mints ids for calls scripted without one; ``transcribe`` (PCM16 16 kHz
        bytes → what the user said) and ``synthesize`` (answer text → output audio bytes) are
        the live connection's speech stand-ins, UTF-8 by default; ``fields`` are pydantic fields
        (``model``, ``chunk_size``, ``delay``)."""
        if (turns is None) == (responder is None):
            raise ValueError("ScriptedLlm needs exactly one of turns= or responder=")
        super().__init__(**fields)
        self._id_factory = id_factory
        self._turns = [list(turn) for turn in turns] if turns is not None else None
        self._responder = responder
        self._transcribe = transcribe
        self._synthesize = synthesize

    @property
    def requests(self) -> list[LlmRequest]:
        """Every request received (model calls and live connects), in order (a copy)."""
        return list(self._requests)

    def next_turn(self, contents: list[types.Content]) -> Turn:
        """The turn answering ``contents``: the responder's answer, or the next scripted turn."""
        if self._responder is not None:
            return self._responder(contents)
        assert self._turns is not None
        index = self._cursor
        if index >= len(self._turns):
            raise ScriptExhaustedError(
                f"ScriptedLlm has no turn left for model call #{index + 1}: "
                f"only {len(self._turns)} turn(s) were scripted"
            )
        self._cursor = index + 1
        return self._turns[index]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Answer one model call the way ``Gemini.generate_content_async`` does (see
        :func:`turn_to_responses`), yielding to the event loop before each response."""
        self._requests.append(llm_request)
        contents = list(llm_request.contents)
        turn = self.next_turn(contents)
        responses = turn_to_responses(
            turn,
            stream=stream,
            chunk_size=self.chunk_size,
            prompt_token_count=prompt_tokens(contents),
            id_factory=self._id_factory,
        )
        for response in responses:
            await asyncio.sleep(self.delay)
            yield response

    @contextlib.asynccontextmanager
    async def connect(self, llm_request: LlmRequest) -> AsyncIterator[ScriptedLiveConnection]:
        """A live session answering like Gemini Live (see :mod:`adk_asgi.testing.live`);
        closed on exit."""
        from adk_asgi.testing.live import ScriptedLiveConnection  # live imports this module

        self._requests.append(llm_request)
        connection = ScriptedLiveConnection(
            self,
            llm_request,
            id_factory=self._id_factory,
            transcribe=self._transcribe,
            synthesize=self._synthesize,
        )
        try:
            yield connection
        finally:
            await connection.close()
