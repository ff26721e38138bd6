"""``WS /live`` on a ``bench.serve adk_asgi`` server, driven over a socket as a browser's
transport drives it: the ``adk_asgi`` rows of ``bench.live`` and the client of
``bench.live_concurrency``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench.agent import SPEECH_FRAME_BYTES
from bench.live_frames import (
    ACTIVITY_END,
    ACTIVITY_START,
    FRAME_SECONDS,
    MIC_FRAME_BYTES,
    MIC_FRAMES,
    SHORT_ANSWER,
    Run,
    Seen,
    check,
    new_chat,
    send_frame,
)
from bench.probe import Clocks

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
