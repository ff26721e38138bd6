"""``bench.live_concurrency``'s active rows: many ``WS /live`` turns at once, and the same work in
this process, each returning a :class:`Batch` of N turns started together; every response read
over a socket checked frame by frame (:func:`check_response`); the row names and the part's
:class:`ActiveResult`.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import msgspec
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types

from bench.harness.agent import APP_NAME, USER_ID, answer_text, make_agent, user_message
from bench.harness.live import SHORT_ANSWER, InProcess, LiveClient, open_in_batches, send_frame
from bench.harness.placement import on_agent_cpus
from bench.harness.probes import Clocks, GcClock, Probe
from bench.harness.rows import Timed

FLOOR: Final = "floor"
IN_PROCESS: Final = "adk_asgi in-process"
OURS: Final = "adk_asgi"
FRAME_PER_DELTA: Final = "adk_asgi, frame per delta"
"""``live_write_interval=0`` (``bench.harness.serve``'s second mount): what coalescing still
saves at this concurrency."""
NO_DEFLATE: Final = "adk_asgi, no deflate"
"""The client offers no permessage-deflate: what compressing every frame costs."""
CHECKED: Final = (OURS, FRAME_PER_DELTA, NO_DEFLATE)

_FRAME = msgspec.json.Decoder(dict[str, Any])
_TEXT_DELTA: Final = '"type":"text-delta"'


@dataclass(frozen=True, slots=True)
class Checked:
    """One response against what it must be."""

    complete: bool
    """``start``, chunks, ``finish`` then ``end``; no error frame or chunk."""
    exact: bool
    """Complete, text as asked, chunk types as in a response read alone, and no chunk lost,
    duplicated or out of order."""
    lost: int
    """``sequence`` numbers missing below the highest one seen."""
    duplicated: int
    reordered: int
    """Chunks received out of ``sequence`` order."""
    text_ok: bool
    first: float | None
    """Seconds from the ``send`` frame (the floor: the run's start) to the first text delta."""


def skeleton(chunk_types: Sequence[str]) -> list[str]:
    """Chunk types with each run of ``text-delta`` collapsed to one: what must not depend on
    how the deltas were coalesced."""
    return [kind for kind, _ in itertools.groupby(chunk_types)]


@dataclass(frozen=True, slots=True)
class Response:
    """One live response as the client read it (frames decoded after the clocks stop)."""

    sent: float
    messages: list[tuple[float, str]]


def check_response(response: Response, deltas: int, reference: Sequence[str] | None) -> Checked:
    frames = [(at, _FRAME.decode(message)) for at, message in response.messages]
    kinds = [frame["type"] for _, frame in frames]
    chunks = [(at, frame) for at, frame in frames if frame["type"] == "chunk"]
    sequences = [frame["sequence"] for _, frame in chunks]
    chunk_types = [frame["chunk"].get("type", "") for _, frame in chunks]
    text = "".join(
        frame["chunk"]["delta"] for _, frame in chunks if frame["chunk"].get("type") == "text-delta"
    )
    seen = set(sequences)
    duplicated = len(sequences) - len(seen)
    lost = (max(seen) + 1 - len(seen)) if seen else 0
    reordered = sum(a > b for a, b in itertools.pairwise(sequences))
    complete = (
        bool(kinds)
        and kinds[0] == "start"
        and kinds[-1] == "end"
        and bool(chunk_types)
        and chunk_types[-1] == "finish"
        and "error" not in kinds
        and "error" not in chunk_types
    )
    text_ok = text == answer_text(deltas)
    shape_ok = reference is None or skeleton(chunk_types) == list(reference)
    exact = complete and text_ok and shape_ok and not (lost or duplicated or reordered)
    first = next(
        (at - response.sent for at, frame in chunks if frame["chunk"].get("type") == "text-delta"),
        None,
    )
    return Checked(complete, exact, lost, duplicated, reordered, text_ok, first)


@dataclass(frozen=True, slots=True)
class Batch(Timed):
    """N turns started together."""

    gc_seconds: float
    """Of ``server_cpu``: in the cyclic garbage collector."""
    checked: list[Checked]
    frames: int = 0
    """Chunk frames received (ours): fewer than the deltas when coalesced."""


class LiveUsers:
    """N ``WS /live`` connections, one per user, each on a new chat (opened untimed), on
    ``mount`` of the server; each response checked against ``reference`` once it is set."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        mount: str = "/agent",
        compression: str | None = "deflate",
    ) -> None:
        self.client = LiveClient(http, base_url, compression=compression, mount=mount)
        self.probe = Probe(http, base_url)
        self.reference: list[str] | None = None

    async def _open(self, n: int) -> list[Any]:
        return await open_in_batches(n, self.client.connect)

    async def read_alone(self, deltas: int) -> list[str]:
        """The chunk types of one response read alone, deltas collapsed (:func:`skeleton`)."""
        (socket,) = await self._open(1)
        try:
            response = await _read(socket, deltas)
        finally:
            await socket.close()
        checked = check_response(response, deltas, None)
        if not checked.exact:
            raise RuntimeError(f"reference response is not whole: {checked}")
        chunks = [_FRAME.decode(m) for _, m in response.messages]
        return skeleton([f["chunk"].get("type", "") for f in chunks if f["type"] == "chunk"])

    async def batch(self, n: int, deltas: int) -> Batch:
        sockets = await self._open(n)
        try:
            async with Clocks(self.probe.cpu, self.probe.gc) as clocks:
                responses = await asyncio.gather(*(_read(socket, deltas) for socket in sockets))
        finally:
            await asyncio.gather(*(socket.close() for socket in sockets))
        reference = self.reference if deltas != SHORT_ANSWER else None
        checked = [check_response(response, deltas, reference) for response in responses]
        frames = sum(
            sum(_TEXT_DELTA in message for _, message in response.messages)
            for response in responses
        )
        return Batch(
            n,
            deltas,
            clocks.seconds,
            clocks.server_cpu,
            clocks.client_cpu,
            clocks.gc_seconds,
            checked,
            frames,
        )


async def _read(socket: Any, deltas: int) -> Response:
    """Send one ``send`` frame on a new chat and read the response up to its ``end`` frame."""
    sent = time.perf_counter()
    await socket.send(send_frame(uuid.uuid4().hex, str(deltas)))
    messages: list[tuple[float, str]] = []
    while True:
        message = await socket.recv()
        messages.append((time.perf_counter(), message))
        if message.startswith('{"type":"end"') or message.startswith('{"type":"error"'):
            return Response(sent, messages)


class _InThisProcess:
    """A row of N turns run in this process, on the server's CPU (``cpus``) with a warm-up turn
    there first; its own garbage collector clock."""

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.gc = GcClock()
        self.gc.install()

    async def batch(self, n: int, deltas: int) -> Batch:
        return await on_agent_cpus(
            self.cpus, lambda: self._batch(1, SHORT_ANSWER), lambda: self._batch(n, deltas)
        )

    async def _batch(self, n: int, deltas: int) -> Batch:
        raise NotImplementedError

    async def _timed(
        self, n: int, deltas: int, turns: Callable[[], Awaitable[Sequence[Checked]]]
    ) -> Batch:
        """``turns()`` timed: wall clock, this process's CPU and its garbage collector."""
        gc_before = self.gc.read()["seconds"]
        cpu = time.process_time()
        start = time.perf_counter()
        checked = await turns()
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        gc_seconds = self.gc.read()["seconds"] - gc_before
        return Batch(n, deltas, wall, cpu, 0.0, gc_seconds, list(checked))


class ConcurrentLiveFloor(_InThisProcess):
    """N concurrent bare ``Runner.run_live`` calls in this process, on the server's CPU
    (``cpus``) with a warm-up turn there first: what ADK alone costs at that concurrency."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions = InMemorySessionService()
        self.runner = Runner(
            app=App(name=APP_NAME, root_agent=make_agent()), session_service=self.sessions
        )

    async def _batch(self, n: int, deltas: int) -> Batch:
        sessions = [
            await self.sessions.create_session(app_name=APP_NAME, user_id=USER_ID) for _ in range(n)
        ]
        opened: list[tuple[LiveRequestQueue, Any]] = []
        batch = await self._timed(
            n,
            deltas,
            lambda: asyncio.gather(*(self._run(s.id, deltas, opened) for s in sessions)),
        )
        for queue, run in opened:
            queue.close()
            await run.aclose()
        return batch

    async def _run(
        self, session_id: str, deltas: int, opened: list[tuple[LiveRequestQueue, Any]]
    ) -> Checked:
        started = time.perf_counter()
        queue = LiveRequestQueue()
        run = self.runner.run_live(
            user_id=USER_ID,
            session_id=session_id,
            live_request_queue=queue,
            run_config=RunConfig(response_modalities=[types.Modality.TEXT]),
        )
        opened.append((queue, run))
        queue.send_content(user_message(deltas))
        text: list[str] = []
        first = None
        async for event in run:
            if event.turn_complete:
                break
            if event.partial and event.content:
                piece = "".join(part.text or "" for part in event.content.parts or [])
                if piece and first is None:
                    first = time.perf_counter() - started
                text.append(piece)
        if "".join(text) != answer_text(deltas):
            raise RuntimeError(f"floor: {len(text)} partial events, not the answer asked for")
        return Checked(True, True, 0, 0, 0, True, first)


class ConcurrentInProcess(_InThisProcess):
    """N concurrent ``WS /live`` requests of an ``AdkApp`` called in this process, without a
    socket (``bench.harness.live.InProcess``): adk_asgi's own layer at that concurrency, without
    uvicorn, the network or a client; on the server's CPU, like the floor."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = InProcess()

    async def _batch(self, n: int, deltas: int) -> Batch:
        return await self._timed(n, deltas, lambda: self._turns(n, deltas))

    async def _turns(self, n: int, deltas: int) -> list[Checked]:
        await asyncio.gather(*(self.rows.text(deltas) for _ in range(n)))  # each one checked
        return [Checked(True, True, 0, 0, 0, True, None)] * n

    async def aclose(self) -> None:
        await self.rows.app.aclose()


@dataclass
class ActiveResult:
    n: int
    deltas: int
    rows: dict[str, list[Batch]] = field(default_factory=dict)
    """Each row's batches, one per round."""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def floor(self) -> list[Batch]:
        return self.rows[FLOOR]

    @property
    def ours(self) -> list[Batch]:
        return self.rows[OURS]
