"""The rows of the live benchmark (``bench.live``): bare ``run_live`` (:class:`LiveFloor`),
``WS /live`` called in this process without a socket (:class:`InProcess`), and ``WS /live`` on
a uvicorn server process (:class:`LiveClient`).

The rows measure, on the same agent (``bench.agent``):

* ``text(n)``: a user text asking for n text deltas, timed to the end of the turn;
* ``speech(n)``: the same in audio mode, where each delta is one 20 ms frame of output audio;
* ``listen(n)``: n 20 ms frames of microphone audio pushed as fast as possible between
  ``activity-start`` and ``activity-end``, timed to the first frame of the spoken answer (which
  only comes once the model has taken in every frame: the queue is first in, first out);
  not in-process.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx
import msgspec
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types
from websockets.asyncio.client import ClientConnection, connect

from adk_asgi import AdkApp
from adk_asgi.live import AUDIO_IN_MIME
from bench.agent import APP_NAME, DELTA_CHARS, SPEECH_FRAME_BYTES, USER_ID, make_agent, user_message

SHORT_ANSWER: Final = 5
"""Deltas of the untimed warm-up turns."""
FRAME_SECONDS: Final = 0.020
MIC_FRAME_BYTES: Final = 640
"""20 ms of PCM16 mono at 16 kHz, what a browser microphone sends."""
_noise = random.Random(1)
MIC_FRAMES: Final = [_noise.randbytes(MIC_FRAME_BYTES) for _ in range(64)]
"""Noise (not UTF-8, so the scripted model "hears" ``[x s of audio]`` and answers with
``SHORT_ANSWER`` frames), differing from frame to frame as speech does."""
TEXT_DELTA: Final = '"type":"text-delta"'
_FRAME = msgspec.json.Decoder(dict[str, Any])


@dataclass(frozen=True, slots=True)
class Run:
    seconds: float
    units: int
    """Text deltas (``text``), output audio frames (``speech``) or microphone frames
    (``listen``) of the run, checked against what was asked."""
    audio_bytes: int
    server_cpu: float
    """CPU seconds of the process that runs the agent (the floor: this one)."""
    client_cpu: float
    pushed: float = 0.0
    """``listen`` over ``WS /live``: seconds the client took to send every frame."""


def _check(row: str, what: str, got: int, expected: int) -> None:
    if got != expected:
        raise RuntimeError(f"{row}: {got} {what}, expected {expected}")


async def on_cpus(cpus: set[int] | None, measure: Callable[[int], Awaitable[Run]], n: int) -> Run:
    """Run ``measure(n)`` in this process on ``cpus`` (the servers' CPU), after a short untimed
    run that warms that CPU's caches, as a server's are warm; then move back."""
    if not cpus:
        return await measure(n)
    home = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        await measure(SHORT_ANSWER)
        return await measure(n)
    finally:
        os.sched_setaffinity(0, home)


# --- floor: Runner.run_live in this process -------------------------------------------------


def _is_audio(event: Event) -> bool:
    parts = event.content.parts or [] if event.content else []
    return any(part.inline_data is not None for part in parts)


class LiveFloor:
    """Bare ``Runner.run_live``, iterated here: what ADK costs before any transport.

    With ``cpus`` set, this process moves to the server's CPU for each run (:func:`on_cpus`), as
    :class:`bench.throughput.Floor` does.
    """

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.sessions = InMemorySessionService()
        app = App(name=APP_NAME, root_agent=make_agent())
        self.runner = Runner(app=app, session_service=self.sessions)

    @asynccontextmanager
    async def _live(self, *, audio: bool) -> AsyncIterator[tuple[LiveRequestQueue, Events]]:
        """A fresh session, its queue and its ``run_live``; closed at the end (untimed)."""
        session = await self.sessions.create_session(app_name=APP_NAME, user_id=USER_ID)
        queue = LiveRequestQueue()
        modality = types.Modality.AUDIO if audio else types.Modality.TEXT
        run = self.runner.run_live(
            user_id=USER_ID,
            session_id=session.id,
            live_request_queue=queue,
            run_config=RunConfig(response_modalities=[modality]),
        )
        try:
            yield queue, Events(run)
        finally:
            queue.close()
            await run.aclose()

    async def text(self, deltas: int) -> Run:
        return await on_cpus(self.cpus, self._text, deltas)

    async def speech(self, frames: int) -> Run:
        return await on_cpus(self.cpus, self._speech, frames)

    async def listen(self, frames: int) -> Run:
        return await on_cpus(self.cpus, self._listen, frames)

    async def _text(self, deltas: int) -> Run:
        cpu = time.process_time()
        start = time.perf_counter()
        async with self._live(audio=False) as (queue, events):
            queue.send_content(user_message(deltas))
            partials = await events.until_turn_complete()
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu
        _check("floor", "text deltas", partials.text, deltas)
        return Run(seconds, partials.text, 0, cpu, 0.0)

    async def _speech(self, frames: int) -> Run:
        cpu = time.process_time()
        start = time.perf_counter()
        async with self._live(audio=True) as (queue, events):
            queue.send_content(user_message(frames))
            seen = await events.until_turn_complete()
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu
        _check("floor", "audio frames", seen.audio, frames)
        return Run(seconds, seen.audio, seen.audio_bytes, cpu, 0.0)

    async def _listen(self, frames: int) -> Run:
        async with self._live(audio=True) as (queue, events):
            queue.send_content(user_message(SHORT_ANSWER))  # the session is up and answering
            await events.until_turn_complete()
            cpu = time.process_time()
            start = time.perf_counter()
            queue.send_activity_start()
            for i in range(frames):  # one frame per loop turn, as a server's reader hands them
                blob = types.Blob(mime_type=AUDIO_IN_MIME, data=MIC_FRAMES[i % len(MIC_FRAMES)])
                queue.send_realtime(blob)
                await asyncio.sleep(0)
            queue.send_activity_end()
            await events.until(_is_audio)
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu
        return Run(seconds, frames, frames * MIC_FRAME_BYTES, cpu, 0.0)


@dataclass(slots=True)
class _Seen:
    text_chars: int = 0
    frames: int = 0
    """``text-delta`` frames: fewer than the deltas when adk_asgi merges them."""
    audio: int = 0
    audio_bytes: int = 0

    @property
    def text(self) -> int:
        """Text deltas made by the model (each ``DELTA_CHARS`` long), however they were framed."""
        return self.text_chars // DELTA_CHARS

    def take(self, message: str | bytes) -> bool:
        """Count one ``WS /live`` message; true at the ``finish`` chunk of the response."""
        if isinstance(message, bytes):
            self.audio += 1
            self.audio_bytes += len(message)
            return False
        if TEXT_DELTA in message:
            self.text_chars += len(_FRAME.decode(message)["chunk"]["delta"])
            self.frames += 1
            return False
        frame: dict[str, Any] = _FRAME.decode(message)
        chunk = frame.get("chunk") or {}
        if frame["type"] == "error" or chunk.get("type") == "error":
            raise RuntimeError(f"adk_asgi: {message[:500]}")
        return bool(chunk.get("type") == "finish")


class Events:
    """A ``run_live`` iterated in steps (it never ends by itself)."""

    def __init__(self, run: AsyncIterator[Event]) -> None:
        self.run = run

    async def until(self, stop: Callable[[Event], bool]) -> Event:
        async for event in self.run:
            if stop(event):
                return event
        raise RuntimeError("run_live ended")

    async def until_turn_complete(self) -> _Seen:
        seen = _Seen()
        async for event in self.run:
            if event.turn_complete:
                return seen
            for part in event.content.parts or [] if event.content else []:
                if part.inline_data is not None and part.inline_data.data:
                    seen.audio += 1
                    seen.audio_bytes += len(part.inline_data.data)
                elif part.text and event.partial:
                    seen.text_chars += len(part.text)
        raise RuntimeError("run_live ended")


# --- adk_asgi in this process, no socket ----------------------------------------------------


class InProcess:
    """``WS /live`` of an ``AdkApp`` called as an ASGI app in this process, with a ``send`` that
    only counts frames: adk_asgi's own work (connection tasks, bridge, converter, frame encoding,
    Starlette's ``WebSocket``) on top of ``run_live``, without uvicorn, the network or a client.
    Pinned like the floor (:func:`on_cpus`)."""

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.app = AdkApp(make_agent(), identify=lambda conn: USER_ID)

    async def text(self, deltas: int) -> Run:
        return await on_cpus(self.cpus, self._text, deltas)

    async def speech(self, frames: int) -> Run:
        return await on_cpus(self.cpus, self._speech, frames)

    async def _text(self, deltas: int) -> Run:
        seen, seconds, cpu = await self._request(str(deltas), audio=False)
        _check("in-process", "text deltas", seen.text, deltas)
        return Run(seconds, seen.text, 0, cpu, 0.0)

    async def _speech(self, frames: int) -> Run:
        seen, seconds, cpu = await self._request(str(frames), audio=True)
        _check("in-process", "audio frames", seen.audio, frames)
        return Run(seconds, seen.audio, seen.audio_bytes, cpu, 0.0)

    async def _request(self, text: str, *, audio: bool) -> tuple[_Seen, float, float]:
        incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        incoming.put_nowait({"type": "websocket.connect"})
        accepted, finished = asyncio.Event(), asyncio.Event()
        seen = _Seen()

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "websocket.accept":
                accepted.set()
            elif message["type"] == "websocket.send" and not finished.is_set():
                data = message.get("bytes")
                if seen.take(message["text"] if data is None else data):
                    finished.set()

        query = b"audio=1" if audio else b""
        scope = {"type": "websocket", "path": "/live", "query_string": query, "headers": []}
        connection = asyncio.create_task(self.app(scope, incoming.get, send))
        await accepted.wait()
        cpu = time.process_time()
        start = time.perf_counter()
        incoming.put_nowait({"type": "websocket.receive", "text": send_frame(_chat(), text)})
        await finished.wait()
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu
        incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})
        await connection
        return seen, seconds, cpu


def _chat() -> str:
    return uuid.uuid4().hex


# --- adk_asgi: WS /live on the server process -----------------------------------------------


def send_frame(chat_id: str, text: str) -> str:
    """A ``send`` frame as ``WebSocketChatTransport`` sends it, for a one-message chat."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    frame: dict[str, Any] = {
        "type": "send",
        "requestId": "r1",
        "id": chat_id,
        "trigger": "submit-message",
        "messageId": None,
        "messages": [message],
        "headers": {},
        "body": {},
        "metadata": None,
    }
    return msgspec.json.encode(frame).decode()


_ACTIVITY_START: Final = '{"type":"activity-start"}'
_ACTIVITY_END: Final = '{"type":"activity-end"}'


class LiveClient:
    """``WS /live`` on a ``bench.serve adk_asgi`` server, as a browser's transport drives it.

    ``compression="deflate"`` offers permessage-deflate as browsers do (uvicorn accepts it);
    ``None`` offers nothing. Each run opens a new connection (untimed) on a new chat.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        compression: str | None,
        mount: str = "/agent",
    ) -> None:
        self.http = http
        self.base_url = base_url
        self.ws_url = base_url.replace("http://", "ws://", 1) + mount + "/live"
        self.compression = compression

    async def cpu(self) -> float:
        """The server's CPU seconds so far (``GET /__cpu``, see ``bench.serve``)."""
        response = await self.http.get(f"{self.base_url}/__cpu")
        return float(response.text)

    def connect(self, **params: str) -> Any:
        query = "&".join(f"{key}={value}" for key, value in params.items())
        return connect(
            f"{self.ws_url}?{query}", compression=self.compression, max_size=None, max_queue=None
        )

    async def text(self, deltas: int) -> Run:
        async with self.connect() as socket:
            server_cpu = await self.cpu()
            client_cpu = time.process_time()
            start = time.perf_counter()
            await socket.send(send_frame(_chat(), str(deltas)))
            seen = await _read_response(socket)
            seconds = time.perf_counter() - start
            client_cpu = time.process_time() - client_cpu
            server_cpu = await self.cpu() - server_cpu
        _check("adk_asgi", "text deltas", seen.text, deltas)
        return Run(seconds, seen.text, 0, server_cpu, client_cpu)

    async def speech(self, frames: int) -> Run:
        async with self.connect(audio="1") as socket:
            server_cpu = await self.cpu()
            client_cpu = time.process_time()
            start = time.perf_counter()
            await socket.send(send_frame(_chat(), str(frames)))
            seen = await _read_response(socket)
            seconds = time.perf_counter() - start
            client_cpu = time.process_time() - client_cpu
            server_cpu = await self.cpu() - server_cpu
        _check("adk_asgi", "audio frames", seen.audio, frames)
        _check("adk_asgi", "audio bytes", seen.audio_bytes, frames * SPEECH_FRAME_BYTES)
        return Run(seconds, seen.audio, seen.audio_bytes, server_cpu, client_cpu)

    async def listen(self, frames: int) -> Run:
        async with self.connect(audio="1") as socket:
            await socket.send(send_frame(_chat(), str(SHORT_ANSWER)))
            await _read_response(socket)  # the session is up and has answered once
            server_cpu = await self.cpu()
            client_cpu = time.process_time()
            start = time.perf_counter()
            await socket.send(_ACTIVITY_START)
            for i in range(frames):
                await socket.send(MIC_FRAMES[i % len(MIC_FRAMES)])
            await socket.send(_ACTIVITY_END)
            pushed = time.perf_counter() - start
            while not isinstance(await socket.recv(), bytes):
                pass
            seconds = time.perf_counter() - start
            client_cpu = time.process_time() - client_cpu
            server_cpu = await self.cpu() - server_cpu
            for _ in range(SHORT_ANSWER - 1):  # the rest of the answer, before closing
                while not isinstance(await socket.recv(), bytes):
                    pass
        return Run(seconds, frames, frames * MIC_FRAME_BYTES, server_cpu, client_cpu, pushed)

    async def paced(self, streams: int, seconds: float) -> Paced:
        """``streams`` connections each sending a microphone's 50 frames/s for ``seconds``,
        staggered over the 20 ms, as that many users talking at once would."""
        sockets = [await self.connect(audio="1") for _ in range(streams)]
        try:
            await asyncio.gather(  # every session up and answered once, untimed
                *(s.send(send_frame(_chat(), str(SHORT_ANSWER))) for s in sockets)
            )
            await asyncio.gather(*(_read_response(s) for s in sockets))
            frames = round(seconds / FRAME_SECONDS)
            server_cpu = await self.cpu()
            start = time.perf_counter()
            await asyncio.gather(
                *(_talk(s, frames, k * FRAME_SECONDS / streams) for k, s in enumerate(sockets))
            )
            elapsed = time.perf_counter() - start
            server_cpu = await self.cpu() - server_cpu
            latencies = [await _answer_time(s) for s in sockets]
        finally:
            await asyncio.gather(*(s.close() for s in sockets))
        return Paced(streams, frames * streams, elapsed, server_cpu, latencies)


@dataclass(frozen=True, slots=True)
class Paced:
    """``streams`` microphones at real-time pace on one server (:meth:`LiveClient.paced`)."""

    streams: int
    frames: int
    """Frames sent, all streams together."""
    seconds: float
    server_cpu: float
    """Server CPU seconds while the frames streamed (the answers are not counted)."""
    latencies: list[float]
    """Per stream, one after the other once every stream has sent its frames: seconds from
    ``activity-end`` to the first frame of the answer. The first one waits for any backlog."""


async def _talk(socket: ClientConnection, frames: int, offset: float) -> None:
    """One microphone: ``activity-start``, then ``frames`` frames, one per 20 ms."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(offset)
    await socket.send(_ACTIVITY_START)
    start = loop.time()
    for i in range(frames):
        await socket.send(MIC_FRAMES[i % len(MIC_FRAMES)])
        await asyncio.sleep(max(0.0, start + (i + 1) * FRAME_SECONDS - loop.time()))


async def _answer_time(socket: ClientConnection) -> float:
    """Seconds from ``activity-end`` to the first frame of the spoken answer."""
    start = time.perf_counter()
    await socket.send(_ACTIVITY_END)
    while not isinstance(await socket.recv(), bytes):
        pass
    return time.perf_counter() - start


async def _read_response(socket: ClientConnection) -> _Seen:
    """Read one request's frames up to its ``finish`` chunk, counting text deltas and audio."""
    seen = _Seen()
    while not seen.take(await socket.recv()):
        pass
    return seen
