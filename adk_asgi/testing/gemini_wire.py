"""What the Gemini API sends for a scripted turn, as JSON on the wire (sans-I/O).

The stand-in server (:mod:`.gemini_server`) answers ADK's own ``Gemini`` model through
google-genai's unchanged HTTP and Live clients, so the JSON it sends must be the JSON Gemini
sends, in Gemini's order. This module renders a turn of the script language of
:mod:`.scripted` (``Text``, ``Thought``, ``Call``, ``Code``, ``CodeResult``, ``Image``, ``Fail``…)
into those messages; it does no I/O. The REST and Live dialects render the same segments with
the same parts and token counts, side by side, so where they differ (call ids, usage fields,
where calls and the ending go) reads in one place; the servers that send them are apart
(:mod:`.gemini_server`, :mod:`.gemini_live`).

Where each shape comes from:

* ``streamGenerateContent?alt=sse`` (``generate_stream``): the REST reference's
  ``GenerateContentResponse`` (candidates[].content.parts, ``finishReason`` on the last chunk,
  ``usageMetadata`` on every chunk with ``candidatesTokenCount`` / ``thoughtsTokenCount`` once
  the answer has them, ``modelVersion``, ``responseId``), and google-genai's replay files of
  streamed calls. Gemini's REST API gives function calls **no id** (ADK mints ``adk-…`` ids and
  strips them again before the next request); a thinking model's first call part carries a
  ``thoughtSignature``.
* ``BidiGenerateContent`` (:class:`LiveTurn`): the Live API reference's
  ``BidiGenerateContentServerMessage``: ``serverContent.modelTurn`` deltas, then
  ``generationComplete``, then ``turnComplete`` *in the same message as* ``usageMetadata``
  (``promptTokenCount``, ``responseTokenCount``, ``totalTokenCount``); a call comes as a
  top-level ``toolCall`` message (Live calls *do* carry ids), then ``turnComplete`` (ADK's
  ``GeminiLlmConnection.receive`` buffers calls until it, "2.5 models send turn_complete after
  tool calls"); in audio mode ``inlineData`` (``audio/pcm;rate=24000``) and
  ``outputTranscription`` deltas in messages of their own; ``interrupted`` when the user spoke
  over the answer; ``sessionResumptionUpdate`` (``newHandle``, ``resumable``) after each turn
  when the setup asked for resumption.
* Code execution (the ``codeExecution`` tool, which ADK's ``BuiltInCodeExecutor`` asks for):
  the API reference's ``Part`` fields ``executableCode`` (``language``: ``PYTHON``, ``code``)
  and ``codeExecutionResult`` (``outcome``: ``OUTCOME_OK``…, ``output``), camelCase like every
  field, and a chart the code drew as ``inlineData`` (``mimeType``, base64 ``data``), as the
  code execution guide's streamed examples show them: each part in a chunk of its own
  (``candidates[].content.parts``), in the order the model produced them; in a Live session each
  in a ``serverContent.modelTurn`` message of its own (the Live API's tool use guide).
"""

from __future__ import annotations

import base64
import math
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from google.genai import types

from adk_asgi.testing.scripted import (
    Blocked,
    Call,
    Code,
    CodeResult,
    Fail,
    Image,
    Segment,
    Source,
    Text,
    Thought,
    Turn,
    code_execution_part,
    prompt_tokens,
)

__all__ = [
    "LIVE_AUDIO_MIME_TYPE",
    "THOUGHT_SIGNATURE",
    "LiveTurn",
    "WireFailure",
    "contents_of",
    "error_body",
    "generate_once",
    "generate_stream",
    "live_call_id",
    "pairing_error",
]

LIVE_AUDIO_MIME_TYPE = "audio/pcm;rate=24000"
"""What Gemini Live speaks (PCM16 mono, 24 kHz)."""
THOUGHT_SIGNATURE = base64.b64encode(b"adk-asgi stand-in thought signature").decode()
"""An opaque signature, sent back by the client with the call it signs (as Gemini asks)."""

JSON = dict[str, Any]


class WireFailure(Exception):
    """A ``Fail`` segment: the stream stops here with Gemini's error (after what preceded it)."""

    def __init__(self, message: str, sent: list[JSON]) -> None:
        super().__init__(message)
        self.message = message
        self.sent = sent


def error_body(code: int, message: str, status: str) -> JSON:
    """Google's error shape (``google.rpc.Status`` as JSON), which google-genai raises as
    ``APIError``: ``{"error": {"code": 500, "message": "...", "status": "INTERNAL"}}``."""
    return {"error": {"code": code, "message": message, "status": status}}


def contents_of(body: JSON) -> list[types.Content]:
    """The conversation a REST request sends (``contents``), as the responder reads it."""
    return [types.Content.model_validate(c) for c in body.get("contents") or []]


def pairing_error(contents: Sequence[types.Content]) -> str | None:
    """Gemini's 400 for a conversation whose calls and results do not pair up: a turn of
    function responses must come right after the model's turn of function calls, with as many
    parts. (The API's ``INVALID_ARGUMENT`` messages, word for word.) A call may stay without
    its response while the user goes on: a long-running tool answers later, and ADK keeps such
    a call in the history on purpose, with the user's turns after it, until its response comes
    (then ADK moves the response next to the call)."""
    for index, content in enumerate(contents):
        responses = sum(1 for p in content.parts or [] if p.function_response is not None)
        if not responses:
            continue
        before = contents[index - 1] if index else None
        calls = sum(1 for p in before.parts or [] if p.function_call is not None) if before else 0
        if not calls or before is None or before.role != "model":
            return (
                "Please ensure that function response turn comes immediately after a function"
                " call turn."
            )
        if responses != calls:
            return (
                "Please ensure that the number of function response parts is equal to the number"
                " of function call parts of the function call turn."
            )
    return None


def live_call_id() -> str:
    """A Live API call id (the Live API names its calls; REST does not)."""
    return f"function-call-{secrets.randbelow(10**19)}"


def _tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _text_part(text: str, *, thought: bool) -> JSON:
    return {"text": text, "thought": True} if thought else {"text": text}


def _code_part(segment: Code | CodeResult | Image) -> JSON:
    """A code execution part as the API sends it (see the module docstring)."""
    if isinstance(segment, Code):
        return {"executableCode": {"language": segment.language, "code": segment.code}}
    if isinstance(segment, CodeResult):
        return {"codeExecutionResult": {"outcome": segment.outcome, "output": segment.output}}
    data = base64.b64encode(segment.data).decode()
    return {"inlineData": {"mimeType": segment.mime_type, "data": data}}


def _call_part(call: Call, *, with_id: bool, signed: bool) -> JSON:
    function_call: JSON = {"name": call.name, "args": dict(call.args)}
    if with_id and call.id:
        function_call = {"id": call.id, **function_call}
    part: JSON = {"functionCall": function_call}
    if signed:
        part["thoughtSignature"] = THOUGHT_SIGNATURE
    return part


@dataclass(frozen=True, slots=True)
class _Usage:
    prompt: int
    answer: int
    thoughts: int

    def rest(self, *, done: bool) -> JSON:
        usage: JSON = {"promptTokenCount": self.prompt}
        if done:
            usage["candidatesTokenCount"] = self.answer
        if done and self.thoughts:
            usage["thoughtsTokenCount"] = self.thoughts
        total = self.prompt + (self.answer + self.thoughts if done else 0)
        usage["totalTokenCount"] = total
        usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": self.prompt}]
        return usage

    def live(self) -> JSON:
        usage: JSON = {
            "promptTokenCount": self.prompt,
            "responseTokenCount": self.answer,
            "totalTokenCount": self.prompt + self.answer + self.thoughts,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.prompt}],
            "responseTokensDetails": [{"modality": "TEXT", "tokenCount": self.answer}],
        }
        if self.thoughts:
            usage["thoughtsTokenCount"] = self.thoughts
        return usage


def _usage(turn: Sequence[Segment], contents: Sequence[types.Content]) -> _Usage:
    answer = sum(len(s.text) for s in turn if isinstance(s, Text))
    thoughts = sum(len(s.text) for s in turn if isinstance(s, Thought))
    calls = sum(1 for s in turn if isinstance(s, Call))
    return _Usage(prompt_tokens(contents), _tokens(answer) + 8 * calls, _tokens(thoughts))


def _rest_chunk(parts: list[JSON], usage: JSON, model: str, response_id: str) -> JSON:
    candidate: JSON = {"content": {"parts": parts, "role": "model"}, "index": 0}
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": response_id,
    }


def generate_stream(
    turn: Turn,
    contents: Sequence[types.Content],
    *,
    model: str,
    chunk_size: int = 8,
) -> Iterator[JSON]:
    """The chunks of ``streamGenerateContent?alt=sse`` for ``turn``: a chunk per text or
    thought delta; the last chunk holds the calls together (whole, id-less, the first one
    signed) or an empty text, with ``finishReason: STOP`` and the whole usage. Raises
    :class:`WireFailure` at a ``Fail`` segment, with the chunks before it."""
    response_id = secrets.token_urlsafe(12)
    usage = _usage(turn, contents)
    sent: list[JSON] = []
    parts: list[JSON] = []  # (one chunk's; the last one is sent with the ending)
    calls: list[JSON] = []
    for segment in turn:
        if isinstance(segment, Fail):
            if parts:  # (what was said before the failure is sent first)
                chunk = _rest_chunk(parts, usage.rest(done=False), model, response_id)
                sent.append(chunk)
                yield chunk
            raise WireFailure(segment.message, sent)
        if isinstance(segment, Call):
            calls.append(_call_part(segment, with_id=False, signed=not calls))
            continue
        if isinstance(segment, Source):
            continue
        if isinstance(segment, Blocked):
            if parts:
                yield _rest_chunk(parts, usage.rest(done=False), model, response_id)
            yield _blocked(segment, usage.rest(done=True), model, response_id)
            return
        if isinstance(segment, Code | CodeResult | Image):  # (a chunk of its own)
            if parts:
                chunk = _rest_chunk(parts, usage.rest(done=False), model, response_id)
                sent.append(chunk)
                yield chunk
            parts = [_code_part(segment)]
            continue
        for delta in _chunks(segment.text, chunk_size):
            if parts:
                chunk = _rest_chunk(parts, usage.rest(done=False), model, response_id)
                sent.append(chunk)
                yield chunk
            parts = [_text_part(delta, thought=isinstance(segment, Thought))]
    if parts:
        chunk = _rest_chunk(parts, usage.rest(done=False), model, response_id)
        sent.append(chunk)
        yield chunk
    # The last chunk holds the calls (or an empty text, as a streamed answer ends), the
    # finish reason and the whole usage.
    last = _rest_chunk(calls or [{"text": ""}], usage.rest(done=True), model, response_id)
    last["candidates"][0]["finishReason"] = "STOP"
    if grounding := _grounding(turn):  # (on the last chunk, in the candidate)
        last["candidates"][0]["groundingMetadata"] = grounding
    if calls:
        last["candidates"][0]["finishMessage"] = "Model generated function call(s)."
    yield last


def _blocked(segment: Blocked, usage: JSON, model: str, response_id: str) -> JSON:
    """The chunk that ends a blocked answer: a candidate with no content, its finish reason
    (and message), as in the API's captures of ``MALFORMED_FUNCTION_CALL``."""
    candidate: JSON = {"finishReason": segment.reason, "index": 0}
    if segment.message is not None:
        candidate["finishMessage"] = segment.message
    if segment.reason == "SAFETY":
        rating = {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}
        candidate["safetyRatings"] = [{**rating, "blocked": True}]
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": response_id,
    }


def generate_once(turn: Turn, contents: Sequence[types.Content], *, model: str) -> JSON:
    """``generateContent`` (not streamed): one response with the whole turn."""
    parts: list[JSON] = []
    for segment in turn:
        if isinstance(segment, Fail):
            raise WireFailure(segment.message, [])
        if isinstance(segment, Call):
            signed = not any("functionCall" in p for p in parts)
            parts.append(_call_part(segment, with_id=False, signed=signed))
        elif isinstance(segment, Source):
            continue
        elif isinstance(segment, Blocked):
            return _blocked(segment, _usage(turn, contents).rest(done=True), model, "")
        elif isinstance(segment, Code | CodeResult | Image):
            parts.append(_code_part(segment))
        elif segment.text:
            thought = isinstance(segment, Thought)
            if parts and parts[-1].get("thought", False) == thought and "text" in parts[-1]:
                parts[-1]["text"] += segment.text
            else:
                parts.append(_text_part(segment.text, thought=thought))
    response = _rest_chunk(
        parts, _usage(turn, contents).rest(done=True), model, secrets.token_urlsafe(12)
    )
    response["candidates"][0]["finishReason"] = "STOP"
    if grounding := _grounding(turn):
        response["candidates"][0]["groundingMetadata"] = grounding
    return response


def _grounding(turn: Sequence[Segment]) -> JSON | None:
    """``groundingMetadata`` citing the turn's sources (``groundingChunks[].web``), as Google
    Search grounding sends it, or ``None``."""
    chunks = [{"web": {"uri": s.url, "title": s.title}} for s in turn if isinstance(s, Source)]
    return {"groundingChunks": chunks} if chunks else None


def interruption() -> Iterator[JSON]:
    """A client message cut the answer under way: Gemini says so, then ends the turn (the
    API reference: ``interrupted``, then ``turnComplete``, without ``generationComplete``)."""
    yield {"serverContent": {"interrupted": True}}
    yield {"serverContent": {"turnComplete": True}}


@dataclass(slots=True)
class LiveTurn:
    """One model turn of a Live session, as the server messages Gemini Live sends for it.

    ``audio``: the session answers in speech (``responseModalities: ["AUDIO"]``): each answer
    delta is an ``inlineData`` chunk (``synthesize(delta)``), and its words come as
    ``outputTranscription`` deltas when ``transcribe_output``; thoughts stay text. Iterate
    :meth:`deltas` (stop early for a barge-in, then :meth:`interrupted`), then :meth:`ending`.
    """

    turn: list[Segment]
    usage: _Usage
    audio: bool = False
    transcribe_output: bool = False
    synthesize: Callable[[str], bytes] = str.encode
    chunk_size: int = 8
    resumption_handle: str | None = None
    spoken: str = ""

    @classmethod
    def of(
        cls,
        turn: Turn,
        contents: Sequence[types.Content],
        *,
        id_factory: Callable[[], str] = live_call_id,
        **options: Any,
    ) -> LiveTurn:
        """The turn answering ``contents``; calls without an id get one (``id_factory``)."""
        named = [
            Call(s.name, dict(s.args), id=s.id or id_factory()) if isinstance(s, Call) else s
            for s in turn
        ]
        return cls(named, _usage(named, contents), **options)

    @property
    def calls(self) -> list[Call]:
        return [s for s in self.turn if isinstance(s, Call)]

    def deltas(self) -> Iterator[JSON]:
        """What streams before the turn ends; raises :class:`WireFailure` at a ``Fail``."""
        sent: list[JSON] = []
        for segment in self.turn:
            if isinstance(segment, Fail):
                raise WireFailure(segment.message, sent)
            if isinstance(segment, Call | Source | Blocked):
                continue  # (the Live API has no finish reasons: a blocked turn just ends)
            if isinstance(segment, Code | CodeResult | Image):
                message = {"serverContent": {"modelTurn": {"parts": [_code_part(segment)]}}}
                sent.append(message)
                yield message
                continue
            thought = isinstance(segment, Thought)
            for delta in _chunks(segment.text, self.chunk_size):
                for message in self._delta(delta, thought=thought):
                    sent.append(message)
                    yield message

    def _delta(self, delta: str, *, thought: bool) -> Iterator[JSON]:
        if not thought:
            self.spoken += delta
        if thought or not self.audio:
            yield {"serverContent": {"modelTurn": {"parts": [_text_part(delta, thought=thought)]}}}
            return
        data = base64.b64encode(self.synthesize(delta)).decode()
        blob = {"inlineData": {"mimeType": LIVE_AUDIO_MIME_TYPE, "data": data}}
        yield {"serverContent": {"modelTurn": {"parts": [blob]}}}
        if self.transcribe_output:
            yield {"serverContent": {"outputTranscription": {"text": delta}}}

    def ending(self) -> Iterator[JSON]:
        """After the deltas: the grounding (a message of its own), the calls (one
        ``toolCall``), ``generationComplete`` for an answer, ``turnComplete`` with the usage,
        and the resumption handle."""
        if grounding := _grounding(self.turn):
            yield {"serverContent": {"groundingMetadata": grounding}}
        if calls := self.calls:
            function_calls = [{"id": c.id, "name": c.name, "args": dict(c.args)} for c in calls]
            yield {"toolCall": {"functionCalls": function_calls}}
        else:
            yield {"serverContent": {"generationComplete": True}}
        yield {"serverContent": {"turnComplete": True}, "usageMetadata": self.usage.live()}
        yield from self._resumption()

    def interrupted(self) -> Iterator[JSON]:
        """The user spoke over the answer: Gemini stops and says so."""
        yield from interruption()
        yield from self._resumption()

    def _resumption(self) -> Iterator[JSON]:
        if self.resumption_handle is not None:
            handle = {"newHandle": self.resumption_handle, "resumable": True}
            yield {"sessionResumptionUpdate": handle}

    def said(self, *, cut: bool = False) -> types.Content | None:
        """What the model said, for the conversation (only what was spoken when ``cut``)."""
        if cut:
            text = self.spoken
            return types.Content(role="model", parts=[types.Part(text=text)]) if text else None
        parts: list[types.Part] = []
        for segment in self.turn:
            if isinstance(segment, Text) and segment.text:
                parts.append(types.Part(text=segment.text))
            elif isinstance(segment, Call):
                call = types.FunctionCall(id=segment.id, name=segment.name, args=dict(segment.args))
                parts.append(types.Part(function_call=call))
            elif isinstance(segment, Code | CodeResult | Image):
                parts.append(code_execution_part(segment))
        return types.Content(role="model", parts=parts) if parts else None
