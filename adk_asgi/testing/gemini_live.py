"""One Live API session of the Gemini stand-in (:mod:`.gemini_server`): the
``BidiGenerateContent`` WebSocket after its setup, the conversation so far and the turns it
answers with, in the shapes and order of :mod:`.gemini_wire`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from google.genai import types
from starlette.websockets import WebSocket, WebSocketDisconnect

from adk_asgi.testing.gemini_wire import (
    JSON,
    LiveTurn,
    WireFailure,
    interruption,
    pairing_error,
)
from adk_asgi.testing.llm import ScriptedLlm

READING_RESULTS = 0.05
"""Seconds the model takes before it answers a ``toolResponse`` (Gemini takes longer): a
client turn that comes meanwhile interrupts that answer before its first word, as a client
message interrupts any generation under way."""
_LOG = logging.getLogger("adk_asgi.testing.gemini")


class StandIn(Protocol):
    """What a session needs of its server (:class:`~.gemini_server.GeminiStandIn`)."""

    chunk_size: int
    requests: deque[JSON]
    resumable: dict[str, list[types.Content]]
    """Live conversations by resumption handle (a client may reconnect with one)."""

    def script_for(self, model: str) -> ScriptedLlm: ...
    def delay(self, contents: Sequence[types.Content]) -> float: ...
    def transcribe(self, audio: bytes, /) -> str: ...
    def synthesize(self, text: str, /) -> bytes: ...


class LiveSession:
    """One Live API WebSocket: the conversation so far, and the turns it answers with."""

    def __init__(self, stand_in: StandIn, websocket: WebSocket, setup: JSON) -> None:
        self.stand_in = stand_in
        self.script = stand_in.script_for(str(field(setup, "model") or ""))
        self.websocket = websocket
        generation = field(setup, "generation_config") or {}
        modalities = field(generation, "response_modalities") or []
        self.audio = "AUDIO" in modalities
        self.transcribe_input = field(setup, "input_audio_transcription") is not None
        self.transcribe_output = field(setup, "output_audio_transcription") is not None
        realtime = field(setup, "realtime_input_config") or {}
        detection = field(realtime, "automatic_activity_detection") or {}
        self.manual_activity = bool(field(detection, "disabled"))
        resumption = field(setup, "session_resumption")
        self.resumable = resumption is not None
        handle = field(resumption or {}, "handle")
        self.contents: list[types.Content] = list(stand_in.resumable.get(handle or "", []))
        self.audio_in = bytearray()
        self.replies: asyncio.Queue[str | None] = asyncio.Queue()
        """The replies owed: to a user turn (what was heard, ``""`` if typed) or to results
        (``None``)."""
        self.speaking: LiveTurn | None = None
        self.barge_in = asyncio.Event()

    async def run(self) -> None:
        await self.websocket.send_text(json.dumps({"setupComplete": {}}))
        try:
            async with asyncio.TaskGroup() as group:
                answering = group.create_task(self._answer())
                await self._read()
                answering.cancel()
        except* (WebSocketDisconnect, _Closed):
            pass

    async def _read(self) -> None:
        while True:
            message = await receive_json(self.websocket)
            self.stand_in.requests.append(message)
            if (content := field(message, "client_content")) is not None:
                turns = [types.Content.model_validate(t) for t in field(content, "turns") or []]
                self.contents.extend(turns)
                if field(content, "turn_complete"):
                    self._user_spoke("")
            elif (response := field(message, "tool_response")) is not None:
                answers = field(response, "function_responses") or []
                parts = [
                    types.Part(function_response=types.FunctionResponse.model_validate(a))
                    for a in answers
                ]
                self.contents.append(types.Content(role="user", parts=parts))
                if pairing_error(self.contents) is not None:
                    # Results that do not follow their calls (the user's turn came between
                    # them): Gemini pairs each call with its response, as over REST.
                    await self._close(1007, "Request contains an invalid argument.")
                self.replies.put_nowait(None)  # (a tool's answer never interrupts)
            elif (realtime := field(message, "realtime_input")) is not None:
                await self._realtime(realtime)
            else:
                await self._close(1007, "Invalid JSON payload: unknown client message.")

    async def _realtime(self, realtime: JSON) -> None:
        signals = ("activity_start", "activity_end")
        activity = [k for k in signals if field(realtime, k) is not None]
        if activity and not self.manual_activity:
            # The Live API takes activity signals only when automatic activity detection is
            # off (``realtimeInputConfig.automaticActivityDetection.disabled``).
            await self._close(
                1007,
                "Explicit activity control is not enabled.",
            )
        if (text := field(realtime, "text")) is not None:
            self.contents.append(types.Content(role="user", parts=[types.Part(text=text)]))
            self._user_spoke("")
        for blob in [field(realtime, "audio"), *(field(realtime, "media_chunks") or [])]:
            if isinstance(blob, dict) and str(field(blob, "mime_type") or "").startswith("audio/"):
                self.audio_in += types.Blob.model_validate(blob).data or b""
        if "activity_start" in activity:
            self.audio_in.clear()
            if self.speaking is not None:
                self.barge_in.set()
        if "activity_end" in activity or field(realtime, "audio_stream_end"):
            heard, self.audio_in = bytes(self.audio_in), bytearray()
            text = self.stand_in.transcribe(heard) if heard else ""
            if text:
                self.contents.append(types.Content(role="user", parts=[types.Part(text=text)]))
                self._user_spoke(text)

    def _user_spoke(self, heard: str) -> None:
        if self.speaking is not None:
            self.barge_in.set()
        self.replies.put_nowait(heard)

    async def _answer(self) -> None:
        while True:
            heard = await self.replies.get()
            if heard is None:
                await asyncio.sleep(READING_RESULTS)
                if not self.replies.empty():  # the client spoke first: that answer is dropped
                    for message in interruption():
                        await self._send(message)
                    continue
            if heard and self.transcribe_input:
                heard_all = {"text": heard, "finished": True}  # (what was heard, then done)
                await self._send({"serverContent": {"inputTranscription": heard_all}})
            contents = list(self.contents)
            try:
                turn = self.script.next_turn(contents)
            except Exception as exc:  # (a responder that raises: the session fails)
                await self._close(1011, f"Internal error encountered: {exc}")
                return
            live = LiveTurn.of(
                turn,
                contents,
                audio=self.audio,
                transcribe_output=self.transcribe_output,
                synthesize=self.stand_in.synthesize,
                chunk_size=self.stand_in.chunk_size,
                resumption_handle=secrets.token_hex(8) if self.resumable else None,
            )
            await self._speak(live, self.stand_in.delay(contents))

    async def _speak(self, live: LiveTurn, delay: float) -> None:
        self.speaking, cut = live, False
        self.barge_in.clear()
        at = len(self.contents)  # (what the user says meanwhile comes after this turn)
        try:
            for message in live.deltas():
                await asyncio.sleep(delay)
                if self.barge_in.is_set():
                    cut = True
                    break
                await self._send(message)
        except WireFailure as failure:
            await self._close(1011, failure.message)
        finally:
            self.speaking = None
        if said := live.said(cut=cut):
            self.contents.insert(at, said)
        ending = live.interrupted() if cut else live.ending()
        for message in ending:
            await asyncio.sleep(delay)
            await self._send(message)
        if live.resumption_handle is not None:
            self.stand_in.resumable[live.resumption_handle] = list(self.contents)

    async def _send(self, message: JSON) -> None:
        await self.websocket.send_text(json.dumps(message))

    async def _close(self, code: int, reason: str) -> None:
        _LOG.info("gemini stand-in: closing a live session (%s): %s", code, reason)
        with contextlib.suppress(Exception):
            await self.websocket.close(code=code, reason=reason[:120])
        raise _Closed


class _Closed(Exception):
    """The stand-in closed the session (Gemini's error close)."""


def field(message: Any, name: str) -> Any:
    """A proto3 JSON field by either of its names (``client_content`` / ``clientContent``)."""
    if not isinstance(message, dict):
        return None
    if name in message:
        return message[name]
    head, *rest = name.split("_")
    return message.get(head + "".join(word.title() for word in rest))


async def receive_json(websocket: WebSocket) -> JSON:
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    raw = message.get("text") or message.get("bytes") or b""
    try:
        decoded = json.loads(raw)
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict):
        await websocket.close(code=1007, reason="Invalid JSON payload.")
        raise _Closed
    return decoded
