"""The scripted model's live connection: ``Runner.run_live`` offline, shaped like Gemini Live.

``ScriptedLlm.connect()`` yields a :class:`ScriptedLiveConnection`. It answers the same turns
(or responder, e.g. the demo grammar) as ``generate_content_async``, rendered the way
``GeminiLlmConnection.receive()`` yields them:

* text (``response_modalities=["TEXT"]``): ``partial=True`` text deltas, then one non-partial
  full-text response per text run (thoughts separate), then the function calls as one response,
  then a usage response, then ``turn_complete=True``; ``receive()`` returns after each turn.
  Code execution (``Code``, ``CodeResult``, ``Image``) comes where the script has it, each part a
  complete response of its own; the text run before a code part or a result ends first (ADK's
  connection ends it at any part but inline data).
* audio (``response_modalities`` contains ``AUDIO``, ADK's default): each answer delta becomes
  an ``inline_data`` chunk (``audio/pcm;rate=24000``, ``synthesize(delta)``) followed by an
  ``output_transcription`` partial; after the last one, the ``finished=True`` transcription of
  the whole answer. Thoughts stay text. Calls, usage and ``turn_complete`` as above.
  Transcriptions are emitted only when the connect config enables them (ADK's default).

**Audio convention.** Speech in is "transcribed" by ``transcribe(pcm_bytes)``; the default,
:func:`transcribe_utf8`, reads the PCM payload as the UTF-8 text the user says, so a test sends
``types.Blob(data="weather in Paris".encode(), mime_type="audio/pcm;rate=16000")``. Audio blobs
accumulate until ``ActivityEnd`` (client VAD) or ``audio_stream_end``; then the connection
emits the input transcription (partials, then ``finished=True``) and answers it as a user turn.
Audio out is ``synthesize(text_delta)``; the default, :func:`synthesize_utf8`, is the delta's
UTF-8, so concatenated output audio decodes back to the answer.

**Barge-in.** User input (text, ``ActivityStart``, heard speech) arriving while a turn's deltas
are still streaming stops that turn: the text so far (or the finished output transcription, in
audio mode) is flushed, ``interrupted=True`` then ``turn_complete=True`` are yielded and
``receive()`` returns; the conversation keeps only what was said. Function responses never
interrupt.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from google.adk.models.base_llm_connection import BaseLlmConnection, RealtimeInput
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from adk_asgi.convert.adk_values import client_signals_activity
from adk_asgi.testing.scripted import (
    ScriptedModelError,
    Turn,
    new_call_id,
    prompt_tokens,
    turn_to_responses,
)

if TYPE_CHECKING:
    from google.adk.models.llm_request import LlmRequest


class _Model(Protocol):
    """What a live connection needs of its :class:`~.ScriptedLlm` (a protocol,
    so this module does not import the model that imports it)."""

    chunk_size: int
    delay: float

    def next_turn(self, contents: list[types.Content]) -> Turn: ...


__all__ = [
    "OUTPUT_AUDIO_MIME_TYPE",
    "ScriptedLiveConnection",
    "synthesize_utf8",
    "transcribe_utf8",
]

OUTPUT_AUDIO_MIME_TYPE = "audio/pcm;rate=24000"
"""What Gemini Live sends (PCM16 mono, 24 kHz)."""
_INPUT_BYTES_PER_SECOND = 32_000  # PCM16 mono at 16 kHz, what Gemini Live takes in


def transcribe_utf8(audio: bytes) -> str:
    """The default "speech recognition": the PCM payload is the UTF-8 of what the user says.

    Real microphone audio (not printable UTF-8) becomes ``[1.5 s of audio]``, so the offline
    demo still answers something readable.
    """
    try:
        text = audio.decode("utf-8")
    except UnicodeDecodeError:
        text = "\x00"
    if all(ch.isprintable() or ch.isspace() for ch in text):
        return text.strip()
    return f"[{len(audio) / _INPUT_BYTES_PER_SECOND:.1f} s of audio]"


def synthesize_utf8(text: str) -> bytes:
    """The default "speech synthesis": the UTF-8 of the text, so tests can decode it back."""
    return text.encode("utf-8")


@dataclass(frozen=True, slots=True)
class _Reply:
    """One model turn to produce; ``heard`` is speech to transcribe back first."""

    heard: str | None = None


def _model(*parts: types.Part) -> types.Content:
    return types.Content(role="model", parts=list(parts))


def _transcription(text: str, *, finished: bool, output: bool) -> LlmResponse:
    transcription = types.Transcription(text=text, finished=finished)
    if output:
        return LlmResponse(output_transcription=transcription, partial=not finished)
    return LlmResponse(input_transcription=transcription, partial=not finished)


class ScriptedLiveConnection(BaseLlmConnection):
    """A live session with a :class:`~.ScriptedLlm` (see the module docstring).

    State is per connection: the conversation as the model saw it (history, user text, heard
    speech, its own turns, function responses) and the queue of turns to produce.
    """

    def __init__(
        self,
        llm: _Model,
        llm_request: LlmRequest,
        *,
        id_factory: Callable[[], str] = new_call_id,
        transcribe: Callable[[bytes], str] | None = None,
        synthesize: Callable[[str], bytes] | None = None,
    ) -> None:
        """``transcribe`` / ``synthesize`` default to :func:`transcribe_utf8` /
        :func:`synthesize_utf8`."""
        config = llm_request.live_connect_config
        self._llm = llm
        self._id_factory = id_factory
        self._transcribe = transcribe or transcribe_utf8
        self._synthesize = synthesize or synthesize_utf8
        self._audio_out = types.Modality.AUDIO in (config.response_modalities or ())
        self._input_transcription = config.input_audio_transcription is not None
        self._output_transcription = config.output_audio_transcription is not None
        self.client_activity = client_signals_activity(config.realtime_input_config)
        """The setup turned the model's voice activity detection off: the client signals it."""
        self._contents: list[types.Content] = []
        self._inbox: deque[_Reply] = deque()
        self._wakeup = asyncio.Event()
        self._audio = bytearray()
        self._streaming = False
        self._barge_in = False
        self._closed = False

    @property
    def conversation(self) -> list[types.Content]:
        """The conversation as the model sees it now (a copy)."""
        return list(self._contents)

    @property
    def closed(self) -> bool:
        return self._closed

    # --- input -------------------------------------------------------------------------------

    def _schedule(self, reply: _Reply, *, user_input: bool) -> None:
        if user_input and self._streaming:
            self._barge_in = True
        self._inbox.append(reply)
        self._wakeup.set()

    async def send_history(self, history: list[types.Content]) -> None:
        """Remember the history; answer at once if it ends with a user turn (as Gemini does)."""
        self._contents.extend(history)
        if history and history[-1].role == "user":
            self._schedule(_Reply(), user_input=False)

    async def send_content(self, content: types.Content) -> None:
        """User text or function responses: added to the conversation, then answered."""
        await self._send_content(content)

    async def _send_content(self, content: types.Content, *, partial: bool = False) -> None:
        if not content.role:
            content = content.model_copy(update={"role": "user"})
        self._contents.append(content)
        if not partial:
            parts = content.parts or []
            tool_results = bool(parts) and all(p.function_response for p in parts)
            self._schedule(_Reply(), user_input=not tool_results)

    async def send_realtime(self, blob: RealtimeInput) -> None:
        """Audio blobs accumulate; ``ActivityEnd`` / ``audio_stream_end`` make them a turn.

        ``blob`` is any ``RealtimeInput`` (the base class's parameter name, kept for callers
        passing it by keyword)."""
        if isinstance(blob, types.Blob):
            if blob.data and (blob.mime_type or "").startswith("audio/"):
                self._audio += blob.data
        elif isinstance(blob, types.ActivityStart | types.ActivityEnd) and not self.client_activity:
            # As Gemini Live: activity signals only when its own detection is off (it closes
            # the session with 1007, "Explicit activity control is not enabled.")
            raise ScriptedModelError("Explicit activity control is not enabled.")
        elif isinstance(blob, types.ActivityStart):
            self._audio.clear()
            self._barge_in = self._barge_in or self._streaming
        elif isinstance(blob, types.ActivityEnd) or (
            isinstance(blob, types.LiveClientRealtimeInput) and blob.audio_stream_end
        ):
            audio, self._audio = bytes(self._audio), bytearray()
            text = self._transcribe(audio) if audio else ""
            if text:
                self._contents.append(types.Content(role="user", parts=[types.Part(text=text)]))
                self._schedule(_Reply(heard=text), user_input=True)

    async def close(self) -> None:
        """End the session: a waiting or streaming ``receive()`` returns. Idempotent."""
        self._closed = True
        self._wakeup.set()

    # --- output ------------------------------------------------------------------------------

    async def _next_reply(self) -> _Reply | None:
        while not self._inbox and not self._closed:
            self._wakeup.clear()
            await self._wakeup.wait()
        return None if self._closed else self._inbox.popleft()

    def _chunks(self, text: str) -> Iterator[str]:
        size = self._llm.chunk_size
        return (text[i : i + size] for i in range(0, len(text), size))

    async def receive(self) -> AsyncGenerator[LlmResponse, None]:
        """Yield one model turn like Gemini Live, then return; wait while idle; return without
        yielding once closed (which ADK takes as the end of the session)."""
        reply = await self._next_reply()
        if reply is None:
            return
        delay = self._llm.delay
        if reply.heard is not None and self._input_transcription:
            for chunk in self._chunks(reply.heard):
                await asyncio.sleep(delay)
                yield _transcription(chunk, finished=False, output=False)
            await asyncio.sleep(delay)
            yield _transcription(reply.heard, finished=True, output=False)
            if self._closed:
                return

        contents = list(self._contents)
        rendered: list[LlmResponse] = []
        failure: ScriptedModelError | None = None
        try:
            rendered.extend(
                turn_to_responses(
                    self._llm.next_turn(contents),
                    stream=True,
                    chunk_size=self._llm.chunk_size,
                    prompt_token_count=prompt_tokens(contents),
                    id_factory=self._id_factory,
                )
            )
        except ScriptedModelError as error:  # a Fail segment: stream what precedes it, then raise
            failure = error
        final = None if failure else rendered.pop()
        # The turn joins the conversation as it starts, so function responses (sent while the
        # calls are being handled) and barge-in input land after it.
        said = [final.content] if final is not None and final.content else []
        at = len(self._contents)
        self._contents.extend(said)

        spoken = ""
        run = _TextRun()
        self._streaming, self._barge_in = True, False
        try:
            for response in rendered:
                assert response.content and response.content.parts
                part = response.content.parts[0]
                if part.function_call:  # Gemini delivers calls at the end, as one response
                    continue
                await asyncio.sleep(delay)
                if self._closed:
                    return
                if self._barge_in:  # the conversation keeps only what was said
                    truncated = [_model(types.Part(text=spoken))] if spoken else []
                    self._contents[at : at + len(said)] = truncated
                    for interruption in self._interruption(spoken):
                        yield interruption
                    return
                if part.text is None:  # code, its result, an image: a message of its own
                    if part.inline_data is None and (whole := run.flush()) is not None:
                        yield whole
                    yield LlmResponse(content=response.content)
                    continue
                if self._audio_out and not part.thought:
                    spoken += part.text or ""
                    blob = types.Blob(
                        mime_type=OUTPUT_AUDIO_MIME_TYPE, data=self._synthesize(part.text or "")
                    )
                    yield LlmResponse(content=_model(types.Part(inline_data=blob)))
                    if self._output_transcription:
                        yield _transcription(part.text or "", finished=False, output=True)
                else:
                    spoken += "" if part.thought else part.text or ""
                    if (whole := run.add(part.text or "", thought=bool(part.thought))) is not None:
                        yield whole  # (a run of the other kind ended: Gemini's full text)
                    yield response
        finally:
            self._streaming = False
        if failure is not None:
            raise failure
        assert final is not None
        if final.grounding_metadata is not None:
            # Gemini Live sends it in a message of its own: ADK yields it alone, then again
            # with the turn's full text
            yield LlmResponse(grounding_metadata=final.grounding_metadata)
            run.grounding = final.grounding_metadata
        for closing in self._closing(final, spoken, run):
            await asyncio.sleep(delay)
            yield closing

    def _interruption(self, spoken: str) -> Iterator[LlmResponse]:
        """Gemini Live's ``interrupted`` (with the text so far, in text mode), then its
        ``turnComplete``."""
        if self._audio_out:
            if spoken and self._output_transcription:
                yield _transcription(spoken, finished=True, output=True)
            yield LlmResponse(interrupted=True)
        elif spoken:
            yield LlmResponse(content=_model(types.Part(text=spoken)), interrupted=True)
        else:
            yield LlmResponse(interrupted=True)
        yield LlmResponse(turn_complete=True)

    def _closing(self, final: LlmResponse, spoken: str, run: _TextRun) -> Iterator[LlmResponse]:
        """The end of a turn in the order ``GeminiLlmConnection.receive`` yields it for Gemini
        Live's messages: with calls, the ``toolCall`` message flushes the text run, then
        ``turnComplete`` (which carries the usage) yields the usage, the finished
        transcription, the calls and ``turn_complete``; without, ``generationComplete``
        flushes the transcription, then the usage comes *before* the turn's last full text."""
        parts = final.content.parts or [] if final.content else []
        usage = LlmResponse(usage_metadata=final.usage_metadata, model_version=final.model_version)
        transcript = self._audio_out and bool(spoken) and self._output_transcription
        if calls := [part for part in parts if part.function_call]:
            if (whole := run.flush()) is not None:
                yield whole
            yield usage
            if transcript:
                yield _transcription(spoken, finished=True, output=True)
            yield LlmResponse(content=_model(*calls))
        else:
            if transcript:
                yield _transcription(spoken, finished=True, output=True)
            yield usage
            if (whole := run.flush()) is not None:
                yield whole
        yield LlmResponse(turn_complete=True)


class _TextRun:
    """The text Gemini Live's connection accumulates until a run of the other kind (thought or
    answer) starts, a call comes or the turn completes; then it yields the run's full text."""

    def __init__(self) -> None:
        self.text = ""
        self.thought = False
        self.grounding: types.GroundingMetadata | None = None

    def add(self, text: str, *, thought: bool) -> LlmResponse | None:
        whole = self.flush() if self.text and thought != self.thought else None
        self.text += text
        self.thought = thought
        return whole

    def flush(self) -> LlmResponse | None:
        if not self.text:
            return None
        part = types.Part(text=self.text, thought=self.thought or None)
        grounding, self.grounding = self.grounding, None
        self.text, self.thought = "", False
        return LlmResponse(content=_model(part), grounding_metadata=grounding, partial=False)
