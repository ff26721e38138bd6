"""``bench.live``'s rows and what they measure: bare ``run_live`` in this process
(:class:`LiveFloor`; the app without a socket is ``bench.harness.live.InProcess``, the server's
rows ``bench.harness.live.LiveClient``), the plan, the idle connections of one state on a fresh
server (:func:`idle_memory`), and the :class:`Results` of a run.

The rows measure, on the same agent (``bench.harness.agent``):

* ``text(n)``: a user text asking for n text deltas, timed to the end of the turn;
* ``speech(n)``: the same in audio mode, where each delta is one 20 ms frame of output audio;
* ``listen(n)``: n 20 ms frames of microphone audio pushed as fast as possible between
  ``activity-start`` and ``activity-end``, timed to the first frame of the spoken answer (which
  only comes once the model has taken in every frame: the queue is first in, first out);
  not in-process.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types

from adk_asgi.live.microphone import AUDIO_IN_MIME
from bench.harness.agent import APP_NAME, USER_ID, make_agent, user_message
from bench.harness.live import (
    MIC_FRAME_BYTES,
    MIC_FRAMES,
    SHORT_ANSWER,
    LiveClient,
    Paced,
    Run,
    Seen,
    check,
    on_cpus,
    open_in_batches,
    send_frame,
)
from bench.harness.probes import settle
from bench.harness.procfs import rss
from bench.harness.servers import ServerProcess

OURS: Final = "adk_asgi"
"""``WS /live`` as a browser uses it (permessage-deflate negotiated): the row with the target."""
IN_PROCESS: Final = "adk_asgi in-process"
NO_DEFLATE: Final = "adk_asgi, no deflate"
FRAME_PER_DELTA: Final = "adk_asgi, frame per delta"
"""``live_write_interval=0``: what coalescing the deltas changes (text and speech rows)."""
RESUMABLE_ROW: Final = "adk_asgi, resumable"
"""The app with a stream store (``Stores(streams=)``): every answer recorded for a resume (text)."""


# --- floor: Runner.run_live in this process -------------------------------------------------


def _is_audio(event: Event) -> bool:
    parts = event.content.parts or [] if event.content else []
    return any(part.inline_data is not None for part in parts)


class LiveFloor:
    """Bare ``Runner.run_live``, iterated here: what ADK costs before any transport.

    With ``cpus`` set, this process moves to the server's CPU for each run (:func:`on_cpus`), as
    ``bench.throughput.rows.Floor`` does.
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
        partials, seconds, cpu = await self._turn(deltas, audio=False)
        check("floor", "text deltas", partials.text, deltas)
        return Run(seconds, partials.text, 0, cpu, 0.0)

    async def _speech(self, frames: int) -> Run:
        seen, seconds, cpu = await self._turn(frames, audio=True)
        check("floor", "audio frames", seen.audio, frames)
        return Run(seconds, seen.audio, seen.audio_bytes, cpu, 0.0)

    async def _turn(self, n: int, *, audio: bool) -> tuple[Seen, float, float]:
        """A user text asking for ``n`` deltas on a fresh session, to ``turn_complete``: what
        was seen, its seconds and this process's CPU seconds (the session's set-up and close
        included, as a server's connection would)."""
        cpu = time.process_time()
        start = time.perf_counter()
        async with self._live(audio=audio) as (queue, events):
            queue.send_content(user_message(n))
            seen = await events.until_turn_complete()
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu
        return seen, seconds, cpu

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


class Events:
    """A ``run_live`` iterated in steps (it never ends by itself)."""

    def __init__(self, run: AsyncIterator[Event]) -> None:
        self.run = run

    async def until(self, stop: Callable[[Event], bool]) -> Event:
        async for event in self.run:
            if stop(event):
                return event
        raise RuntimeError("run_live ended")

    async def until_turn_complete(self) -> Seen:
        seen = Seen()
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


# --- the plan and the results ---------------------------------------------------------------


class TextRow:
    """A row of the text measurement only."""

    def __init__(self, client: LiveClient) -> None:
        self.text = client.text


class TextSpeechRow:
    """A row of the text and speech measurements only (the microphone is not coalesced)."""

    def __init__(self, client: LiveClient) -> None:
        self.text = client.text
        self.speech = client.speech


Measure = Callable[[int], Awaitable[Run]]


@dataclass(frozen=True, slots=True)
class Plan:
    text: Sequence[int]
    speech: Sequence[int]
    listen: Sequence[int]
    paced: Sequence[int]
    """Microphones at once, each sending 50 frames/s for ``paced_seconds``."""
    paced_seconds: float
    idle: Sequence[int]
    reps: int


@dataclass
@dataclass
class Results:
    text: dict[int, dict[str, list[Run]]]
    speech: dict[int, dict[str, list[Run]]]
    listen: dict[int, dict[str, list[Run]]]
    paced: list[Paced]
    idle: list[Idle]


# --- idle connections, one state per fresh server ------------------------------------------


IDLE_STATES: Final = {
    "no chat yet": "connected, nothing sent: run_live not started (it starts at the first send)",
    "no chat, no deflate": "the same, without permessage-deflate",
    "chatId given": "?chatId=…: run_live started at connect, then idle",
    "after a turn": f"one {SHORT_ANSWER}-delta text turn answered, then idle (run_live open)",
}
"""Every state but "no deflate" negotiates permessage-deflate, as browsers do."""


@dataclass(frozen=True, slots=True)
class Idle:
    state: str
    count: int
    rss_before: int
    rss_after: int
    idle_cpu: float
    """Share of one CPU the server used while the connections sat idle."""


async def _settle(client: LiveClient) -> None:
    """Wait until the server is idle (under 2 % of a CPU over 0.25 s), at most 30 s."""
    await settle(client.cpu, limit=30.0, interval=0.25, busy=0.005)


async def _open_idle(client: LiveClient, state: str) -> Any:
    chat_id = f"idle-{uuid.uuid4().hex}"
    params = {"chatId": chat_id} if state == "chatId given" else {}
    socket = await client.connect(**params)
    if state == "after a turn":
        await socket.send(send_frame(chat_id, str(SHORT_ANSWER)))
        while '"type":"end"' not in await socket.recv():
            pass
    return socket


async def idle_memory(state: str, counts: Sequence[int]) -> list[Idle]:
    """RSS growth of a fresh server with K idle connections in ``state`` (K in ``counts``)."""
    found = []
    with ServerProcess("adk_asgi") as server:
        async with httpx.AsyncClient(trust_env=False, timeout=60.0) as http:
            deflate = None if "no deflate" in state else "deflate"
            client = LiveClient(http, server.url, compression=deflate)
            warm = await _open_idle(client, state)  # first-use costs are not per connection
            await warm.close()
            await _settle(client)
            before = rss(server.pid)
            sockets: list[Any] = []
            for count in counts:
                sockets += await open_in_batches(
                    count - len(sockets), lambda: _open_idle(client, state)
                )
                await _settle(client)
                after = rss(server.pid)
                cpu = await client.cpu()
                await asyncio.sleep(2.0)
                idle_cpu = (await client.cpu() - cpu) / 2.0
                found.append(Idle(state, count, before, after, idle_cpu))
            await asyncio.gather(*(socket.close() for socket in sockets))
    return found
