"""``WS /live`` as the live benches drive it: what they send and count (the ``send`` frame, the
microphone's frames, a response's text deltas and audio frames: :class:`Seen`, one :class:`Run`),
over a socket as a browser's transport drives it (:class:`LiveClient`, on a ``bench.harness.serve
adk_asgi`` server), and called in this process without a socket (:class:`InProcess`).

Shared by ``bench.live`` and ``bench.live_concurrency`` (and ``bench.starvation``'s sockets), so
every row counts a response alike.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import httpx
import msgspec
from websockets.asyncio.client import ClientConnection, connect

from adk_asgi import AdkApp
from bench.harness.agent import (
    DELTA_CHARS,
    ONE_USER_FOR_MANY,
    SPEECH_FRAME_BYTES,
    USER_ID,
    make_agent,
)
from bench.harness.placement import on_agent_cpus
from bench.harness.probes import Clocks

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

ACTIVITY_START: Final = '{"type":"activity-start"}'
ACTIVITY_END: Final = '{"type":"activity-end"}'


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


def check(row: str, what: str, got: int, expected: int) -> None:
    if got != expected:
        raise RuntimeError(f"{row}: {got} {what}, expected {expected}")


@dataclass(slots=True)
class Seen:
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


def new_chat() -> str:
    return uuid.uuid4().hex


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


# --- over a socket: WS /live on a server process --------------------------------------------


OPEN_BATCH: Final = 50
"""Connections opened at once (the listening socket's backlog is 128)."""
_T = TypeVar("_T")


async def open_in_batches(count: int, open_one: Callable[[], Awaitable[_T]]) -> list[_T]:
    """``count`` connections from ``open_one()``, ``OPEN_BATCH`` at a time."""
    found: list[_T] = []
    while len(found) < count:
        batch = min(OPEN_BATCH, count - len(found))
        found += await asyncio.gather(*(open_one() for _ in range(batch)))
    return found


class LiveClient:
    """``WS /live`` on a ``bench.harness.serve adk_asgi`` server, as a browser's transport
    drives it.

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
        """The server's CPU seconds so far (``GET /__cpu``, see ``bench.harness.serve``)."""
        response = await self.http.get(f"{self.base_url}/__cpu")
        return float(response.text)

    def connect(self, **params: str) -> Any:
        query = "&".join(f"{key}={value}" for key, value in params.items())
        return connect(
            f"{self.ws_url}?{query}", compression=self.compression, max_size=None, max_queue=None
        )

    async def text(self, deltas: int) -> Run:
        seen, seconds, server_cpu, client_cpu = await self._turn(deltas)
        check("adk_asgi", "text deltas", seen.text, deltas)
        return Run(seconds, seen.text, 0, server_cpu, client_cpu)

    async def speech(self, frames: int) -> Run:
        seen, seconds, server_cpu, client_cpu = await self._turn(frames, audio="1")
        check("adk_asgi", "audio frames", seen.audio, frames)
        check("adk_asgi", "audio bytes", seen.audio_bytes, frames * SPEECH_FRAME_BYTES)
        return Run(seconds, seen.audio, seen.audio_bytes, server_cpu, client_cpu)

    async def _turn(self, n: int, **params: str) -> tuple[Seen, float, float, float]:
        """One user text asking for ``n`` deltas on a new connection, read to its ``finish``:
        what was seen, its seconds, the server's and this process's CPU seconds."""
        async with self.connect(**params) as socket, Clocks(self.cpu) as clocks:
            await socket.send(send_frame(new_chat(), str(n)))
            seen = await _read_response(socket)
        return seen, clocks.seconds, clocks.server_cpu, clocks.client_cpu

    async def listen(self, frames: int) -> Run:
        async with self.connect(audio="1") as socket:
            await socket.send(send_frame(new_chat(), str(SHORT_ANSWER)))
            await _read_response(socket)  # the session is up and has answered once
            async with Clocks(self.cpu) as clocks:
                await socket.send(ACTIVITY_START)
                for i in range(frames):
                    await socket.send(MIC_FRAMES[i % len(MIC_FRAMES)])
                await socket.send(ACTIVITY_END)
                pushed = time.perf_counter() - clocks.start
                while not isinstance(await socket.recv(), bytes):
                    pass
            for _ in range(SHORT_ANSWER - 1):  # the rest of the answer, before closing
                while not isinstance(await socket.recv(), bytes):
                    pass
        bytes_in = frames * MIC_FRAME_BYTES
        return Run(clocks.seconds, frames, bytes_in, clocks.server_cpu, clocks.client_cpu, pushed)

    async def paced(self, streams: int, seconds: float) -> Paced:
        """``streams`` connections each sending a microphone's 50 frames/s for ``seconds``,
        staggered over the 20 ms, as that many users talking at once would."""
        sockets = [await self.connect(audio="1") for _ in range(streams)]
        try:
            await asyncio.gather(  # every session up and answered once, untimed
                *(s.send(send_frame(new_chat(), str(SHORT_ANSWER))) for s in sockets)
            )
            await asyncio.gather(*(_read_response(s) for s in sockets))
            frames = round(seconds / FRAME_SECONDS)
            async with Clocks(self.cpu) as clocks:
                await asyncio.gather(
                    *(_talk(s, frames, k * FRAME_SECONDS / streams) for k, s in enumerate(sockets))
                )
            latencies = [await _answer_time(s) for s in sockets]
        finally:
            await asyncio.gather(*(s.close() for s in sockets))
        return Paced(streams, frames * streams, clocks.seconds, clocks.server_cpu, latencies)


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
    await socket.send(ACTIVITY_START)
    start = loop.time()
    for i in range(frames):
        await socket.send(MIC_FRAMES[i % len(MIC_FRAMES)])
        await asyncio.sleep(max(0.0, start + (i + 1) * FRAME_SECONDS - loop.time()))


async def _answer_time(socket: ClientConnection) -> float:
    """Seconds from ``activity-end`` to the first frame of the spoken answer."""
    start = time.perf_counter()
    await socket.send(ACTIVITY_END)
    while not isinstance(await socket.recv(), bytes):
        pass
    return time.perf_counter() - start


async def _read_response(socket: ClientConnection) -> Seen:
    """Read one request's frames up to its ``finish`` chunk, counting text deltas and audio."""
    seen = Seen()
    while not seen.take(await socket.recv()):
        pass
    return seen


# --- in this process, no socket ------------------------------------------------------------


async def on_cpus(cpus: set[int] | None, measure: Callable[[int], Awaitable[Run]], n: int) -> Run:
    """Run ``measure(n)`` in this process on ``cpus`` (the servers' CPU), after a short untimed
    run that warms that CPU's caches, as a server's are warm; then move back."""
    if not cpus:
        return await measure(n)
    return await on_agent_cpus(cpus, lambda: measure(SHORT_ANSWER), lambda: measure(n))


class InProcess:
    """``WS /live`` of an ``AdkApp`` called as an ASGI app in this process, with a ``send`` that
    only counts frames: adk_asgi's own work (connection tasks, bridge, converter, frame encoding,
    Starlette's ``WebSocket``) on top of ``run_live``, without uvicorn, the network or a client.
    Pinned like the floor (:func:`on_cpus`)."""

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.app = AdkApp(
            make_agent(), identify=lambda conn: USER_ID, user_bounds=ONE_USER_FOR_MANY
        )

    async def text(self, deltas: int) -> Run:
        return await on_cpus(self.cpus, self._text, deltas)

    async def speech(self, frames: int) -> Run:
        return await on_cpus(self.cpus, self._speech, frames)

    async def _text(self, deltas: int) -> Run:
        seen, seconds, cpu = await self._request(str(deltas), audio=False)
        check("in-process", "text deltas", seen.text, deltas)
        return Run(seconds, seen.text, 0, cpu, 0.0)

    async def _speech(self, frames: int) -> Run:
        seen, seconds, cpu = await self._request(str(frames), audio=True)
        check("in-process", "audio frames", seen.audio, frames)
        return Run(seconds, seen.audio, seen.audio_bytes, cpu, 0.0)

    async def _request(self, text: str, *, audio: bool) -> tuple[Seen, float, float]:
        incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        incoming.put_nowait({"type": "websocket.connect"})
        accepted, finished = asyncio.Event(), asyncio.Event()
        seen = Seen()

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
        incoming.put_nowait({"type": "websocket.receive", "text": send_frame(new_chat(), text)})
        await finished.wait()
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu
        incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})
        await connection
        return seen, seconds, cpu
