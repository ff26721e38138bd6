"""Live mode at scale on ONE uvicorn worker: a thousand idle WebSockets, then a hundred busy ones.

``python -m bench.live_concurrency [--quick] [--idle N] [--active N] [--deltas D] [--rounds R]
[--no-pin]``

The agent is ``bench.agent``'s (``ScriptedLlm``, 8-character text deltas), run by
``Runner.run_live``; the server is ``bench.serve adk_asgi`` (``WS /agent/live``, uvicorn's
defaults, permessage-deflate offered by the client as browsers do).

* **Idle connections** (a fresh server, unpinned): N WebSockets (1,000) opened on new chats
  with ``?chatId=``, so each has its ``run_live`` session open, and left idle. Then every
  connection answers one short turn (5 deltas) and is left idle again; then all close. At each
  step, once the server is idle: its RSS (``VmRSS``), its CPU over a window (20 s), and a census
  of its event loop's tasks and the objects the garbage collector tracks (``/__census``).
* **Active connections** (a fresh server on one CPU, the client on the other): N connections
  (100), each on a new chat, send their ``send`` frame at once, each asking for D deltas (300);
  against the floor, N concurrent bare ``Runner.run_live`` calls in this process, moved to the
  server's CPU. Diagnostic rows: the app called in this process without a socket (its own
  layer), the server's mount with a frame per delta (no coalescing), and a client that offers no
  permessage-deflate. Rounds rotate the order of the rows. Every response read over a socket is
  checked frame by frame: ``sequence`` numbers 0, 1, 2... with none lost, duplicated or out of
  order, the merged text equal to the answer's, the chunk types in the order of a response read
  alone, ``finish`` and ``end`` last, no error.

See ``docs/performance.md`` ("Live mode at scale").
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, Final

import httpx
import msgspec
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types

from bench.agent import APP_NAME, DELTA_CHARS, USER_ID, answer_text, make_agent, quiet, user_message
from bench.live_rows import SHORT_ANSWER, InProcess, LiveClient, send_frame
from bench.report import (
    load_average,
    ms,
    paired,
    percentile,
    progress,
    table,
    verdict,
)
from bench.serve import UNMERGED, GcClock, raise_fd_limit
from bench.servers import ServerProcess
from bench.throughput import Placement, _loop_factory

IDLE: Final = 1_000
ACTIVE: Final = 100
DELTAS: Final = 300
ROUNDS: Final = 5
IDLE_WINDOW: Final = 20.0
"""Seconds over which the idle server's CPU is measured: uvicorn's WebSocket ping interval, so
the window holds one ping of every connection (a shorter one holds those of all the
connections opened together, or none)."""
OPEN_BATCH: Final = 50
"""Connections opened at once (the listening socket's backlog is 128)."""
TURN_BATCH: Final = 100
"""Short turns run at once when every idle connection answers one."""
TARGET: Final = 0.90
"""Aggregate deltas/s of ``WS /live`` over bare ``run_live`` at the same concurrency: the
single-connection target of ``bench.live``, kept at scale."""
CLIENT_BUSY: Final = 0.80
_FRAME = msgspec.json.Decoder(dict[str, Any])
_TEXT_DELTA: Final = '"type":"text-delta"'


# --- the server's memory ----------------------------------------------------------------------


def rss(pid: int) -> int:
    """Resident set size of a process, in bytes (``VmRSS`` of ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class Probe:
    """The server's probes (``bench.serve``): CPU seconds, GC time, census."""

    def __init__(self, http: httpx.AsyncClient, base_url: str) -> None:
        self.http = http
        self.base_url = base_url

    async def cpu(self) -> float:
        return float((await self.http.get(f"{self.base_url}/__cpu")).text)

    async def gc(self) -> dict[str, float]:
        found: dict[str, float] = (await self.http.get(f"{self.base_url}/__gc")).json()
        return found

    async def census(self) -> Census:
        found = (await self.http.get(f"{self.base_url}/__census")).json()
        return Census(found["tasks"], found["task_kinds"], found["objects"], found["types"])

    async def settle(self, limit: float = 120.0) -> None:
        """Wait until the server is idle (under 2 % of a CPU over 0.5 s), at most ``limit`` s."""
        async with asyncio.timeout(limit):
            before = await self.cpu()
            while True:
                await asyncio.sleep(0.5)
                now = await self.cpu()
                if now - before < 0.01:
                    return
                before = now

    async def cpu_share(self, seconds: float, slice_: float = 1.0) -> tuple[float, float]:
        """The share of one CPU the server uses over ``seconds``, and in its busiest
        ``slice_`` of them."""
        first = before = await self.cpu()
        start = last = time.perf_counter()
        peak = 0.0
        while (now := time.perf_counter()) - start < seconds - 1e-3:
            await asyncio.sleep(min(slice_, seconds - (now - start)))
            cpu, now = await self.cpu(), time.perf_counter()
            peak = max(peak, (cpu - before) / (now - last))
            before, last = cpu, now
        return (before - first) / (last - start), peak


@dataclass(frozen=True, slots=True)
class Census:
    tasks: int
    task_kinds: dict[str, int]
    """Tasks by the qualified name of their coroutine."""
    objects: int
    types: dict[str, int]


# --- idle connections ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IdleStep:
    name: str
    connections: int
    rss: int
    cpu_share: float | None
    """Of one CPU, over the window; ``None`` when not measured."""
    cpu_peak: float | None
    """Of one CPU, in the window's busiest second."""
    census: Census
    seconds: float
    """How long the step took (opening the connections, answering the turns)."""


@dataclass
class IdleResult:
    connections: int
    window: float
    fd_limit: int
    steps: list[IdleStep] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """Why connections could not be opened, if some could not (the first few)."""
    info: dict[str, Any] = field(default_factory=dict)


async def _turn(socket: Any, chat_id: str, deltas: int) -> None:
    await socket.send(send_frame(chat_id, str(deltas)))
    while True:
        message = await socket.recv()
        if '"type":"end"' in message:
            return
        if '"type":"error"' in message:
            raise RuntimeError(f"short turn: {message[:300]}")


async def idle_part(n: int, window: float) -> IdleResult:
    result = IdleResult(n, window, raise_fd_limit())
    with ServerProcess("adk_asgi") as server:
        result.info = server.info
        try:
            async with httpx.AsyncClient(trust_env=False, timeout=120.0) as http:
                await _idle(server, http, n, window, result)
        except Exception:
            print(f"--- server log ---\n{server.log_tail()}", file=sys.stderr)
            raise
    return result


async def _idle(
    server: ServerProcess, http: httpx.AsyncClient, n: int, window: float, result: IdleResult
) -> None:
    probe = Probe(http, server.url)
    client = LiveClient(http, server.url, compression="deflate")

    async def step(name: str, seconds: float, cpu: bool) -> None:
        await probe.settle()
        found = rss(server.pid)
        share, peak = await probe.cpu_share(window) if cpu else (None, None)
        census = await probe.census()
        result.steps.append(IdleStep(name, len(sockets), found, share, peak, census, seconds))

    # First use: ADK's lazy imports, the first run_live, the first deflate context.
    chat_id = f"warm-{uuid.uuid4().hex}"
    warm = await client.connect(chatId=chat_id)
    await _turn(warm, chat_id, SHORT_ANSWER)
    await warm.close()
    sockets: list[tuple[str, Any]] = []
    await step("before", 0.0, cpu=False)

    progress(f"idle: opening {n:,} connections with ?chatId= ({OPEN_BATCH} at a time)")
    start = time.perf_counter()
    while len(sockets) < n:
        ids = [f"idle-{uuid.uuid4().hex}" for _ in range(min(OPEN_BATCH, n - len(sockets)))]
        opened = await asyncio.gather(
            *(client.connect(chatId=chat) for chat in ids), return_exceptions=True
        )
        for chat, socket in zip(ids, opened, strict=True):
            if isinstance(socket, BaseException):
                result.failed.append(f"{type(socket).__name__}: {socket}")
            else:
                sockets.append((chat, socket))
        if len(result.failed) >= 3:
            progress(f"idle: stopped at {len(sockets):,} connections: {result.failed[0]}")
            break
    opened_in = time.perf_counter() - start
    progress(f"idle: {len(sockets):,} open in {opened_in:.1f} s; measuring {window:g} s idle")
    await step("run_live open, no turn yet", opened_in, cpu=True)

    progress(f"idle: one {SHORT_ANSWER}-delta turn on each ({TURN_BATCH} at a time)")
    start = time.perf_counter()
    for first in range(0, len(sockets), TURN_BATCH):
        batch = sockets[first : first + TURN_BATCH]
        await asyncio.gather(*(_turn(socket, chat, SHORT_ANSWER) for chat, socket in batch))
    turns_in = time.perf_counter() - start
    progress(f"idle: turns done in {turns_in:.1f} s; measuring {window:g} s idle")
    await step("after one turn each", turns_in, cpu=True)

    progress("idle: closing every connection")
    start = time.perf_counter()
    await asyncio.gather(*(socket.close() for _, socket in sockets))
    closed_in = time.perf_counter() - start
    sockets = []
    await step("all closed", closed_in, cpu=False)


# --- active connections -------------------------------------------------------------------


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
class Batch:
    """N turns started together."""

    streams: int
    deltas: int
    wall: float
    server_cpu: float
    """CPU seconds of the process that ran the agents (the floor: this one)."""
    client_cpu: float
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
        sockets: list[Any] = []
        while len(sockets) < n:
            count = min(OPEN_BATCH, n - len(sockets))
            sockets += await asyncio.gather(*(self.client.connect() for _ in range(count)))
        return sockets

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
            gc_before = (await self.probe.gc())["seconds"]
            server_cpu = await self.probe.cpu()
            client_cpu = time.process_time()
            start = time.perf_counter()
            responses = await asyncio.gather(*(_read(socket, deltas) for socket in sockets))
            wall = time.perf_counter() - start
            client_cpu = time.process_time() - client_cpu
            server_cpu = await self.probe.cpu() - server_cpu
            gc_seconds = (await self.probe.gc())["seconds"] - gc_before
        finally:
            await asyncio.gather(*(socket.close() for socket in sockets))
        reference = self.reference if deltas != SHORT_ANSWER else None
        checked = [check_response(response, deltas, reference) for response in responses]
        frames = sum(
            sum(_TEXT_DELTA in message for _, message in response.messages)
            for response in responses
        )
        return Batch(n, deltas, wall, server_cpu, client_cpu, gc_seconds, checked, frames)


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


class ConcurrentLiveFloor:
    """N concurrent bare ``Runner.run_live`` calls in this process, on the server's CPU
    (``cpus``) with a warm-up turn there first: what ADK alone costs at that concurrency."""

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.sessions = InMemorySessionService()
        self.runner = Runner(
            app=App(name=APP_NAME, root_agent=make_agent()), session_service=self.sessions
        )
        self.gc = GcClock()
        self.gc.install()

    async def batch(self, n: int, deltas: int) -> Batch:
        home = os.sched_getaffinity(0)
        if self.cpus:
            os.sched_setaffinity(0, self.cpus)
        try:
            await self._batch(1, SHORT_ANSWER)
            return await self._batch(n, deltas)
        finally:
            os.sched_setaffinity(0, home)

    async def _batch(self, n: int, deltas: int) -> Batch:
        sessions = [
            await self.sessions.create_session(app_name=APP_NAME, user_id=USER_ID) for _ in range(n)
        ]
        opened: list[tuple[LiveRequestQueue, Any]] = []
        gc_before = self.gc.read()["seconds"]
        cpu = time.process_time()
        start = time.perf_counter()
        checked = await asyncio.gather(*(self._run(s.id, deltas, opened) for s in sessions))
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        gc_seconds = self.gc.read()["seconds"] - gc_before
        for queue, run in opened:
            queue.close()
            await run.aclose()
        return Batch(n, deltas, wall, cpu, 0.0, gc_seconds, list(checked))

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


class ConcurrentInProcess:
    """N concurrent ``WS /live`` requests of an ``AdkApp`` called in this process, without a
    socket (``bench.live_rows.InProcess``): adk_asgi's own layer at that concurrency, without
    uvicorn, the network or a client; on the server's CPU, like the floor."""

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.rows = InProcess()
        self.gc = GcClock()
        self.gc.install()

    async def batch(self, n: int, deltas: int) -> Batch:
        home = os.sched_getaffinity(0)
        if self.cpus:
            os.sched_setaffinity(0, self.cpus)
        try:
            await self._batch(1, SHORT_ANSWER)
            return await self._batch(n, deltas)
        finally:
            os.sched_setaffinity(0, home)

    async def _batch(self, n: int, deltas: int) -> Batch:
        gc_before = self.gc.read()["seconds"]
        cpu = time.process_time()
        start = time.perf_counter()
        await asyncio.gather(*(self.rows.text(deltas) for _ in range(n)))  # each one checked
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        gc_seconds = self.gc.read()["seconds"] - gc_before
        checked = [Checked(True, True, 0, 0, 0, True, None)] * n
        return Batch(n, deltas, wall, cpu, 0.0, gc_seconds, checked)

    async def aclose(self) -> None:
        await self.rows.app.aclose()


FLOOR: Final = "floor"
IN_PROCESS: Final = "adk_asgi in-process"
OURS: Final = "adk_asgi"
FRAME_PER_DELTA: Final = "adk_asgi, frame per delta"
"""``live_write_interval=0`` (``bench.serve``'s second mount): what coalescing still saves at
this concurrency."""
NO_DEFLATE: Final = "adk_asgi, no deflate"
"""The client offers no permessage-deflate: what compressing every frame costs."""
CHECKED: Final = (OURS, FRAME_PER_DELTA, NO_DEFLATE)
"""The rows read over a socket, whose every response is checked frame by frame."""


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


async def active_part(n: int, deltas: int, rounds: int, pin: bool) -> ActiveResult:
    result = ActiveResult(n, deltas)
    with ServerProcess("adk_asgi") as server:
        result.info = server.info
        placement = Placement([server], pin=pin)
        floor, inproc = ConcurrentLiveFloor(), ConcurrentInProcess()
        try:
            async with httpx.AsyncClient(trust_env=False, timeout=600.0) as http:
                users = LiveUsers(http, server.url)
                unmerged = LiveUsers(http, server.url, UNMERGED)
                plain = LiveUsers(http, server.url, compression=None)
                rows: dict[str, Any] = {
                    FLOOR: floor,
                    IN_PROCESS: inproc,
                    OURS: users,
                    FRAME_PER_DELTA: unmerged,
                    NO_DEFLATE: plain,
                }
                await users.probe.gc()  # starts the server's garbage collector clock
                reference = await users.read_alone(deltas)
                users.reference = unmerged.reference = plain.reference = reference
                floor.cpus = inproc.cpus = placement.pin()
                try:
                    for row in (users, unmerged, plain):
                        await row.batch(min(n, 10), SHORT_ANSWER)  # warm-up
                    result.rows = await _rounds(rows, n, deltas, rounds)
                finally:
                    placement.unpin()
                    await inproc.aclose()
        except Exception:
            print(f"--- server log ---\n{server.log_tail()}", file=sys.stderr)
            raise
    return result


async def _rounds(rows: dict[str, Any], n: int, deltas: int, rounds: int) -> dict[str, list[Batch]]:
    """``rounds`` rounds of one batch per row, rotating the order of the rows each round."""
    names = list(rows)
    found: dict[str, list[Batch]] = {name: [] for name in names}
    for rep in range(rounds):
        progress(f"active: round {rep + 1}/{rounds}, {n} x {deltas} deltas per row")
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            found[name].append(await rows[name].batch(n, deltas))
    return found


# --- report -------------------------------------------------------------------------------


def _mib(size: float) -> str:
    return f"{size / 2**20:,.1f}"


def idle_report(result: IdleResult) -> str:
    base = result.steps[0]
    rows = []
    for step in result.steps:
        count = step.connections
        per = (step.rss - base.rss) / count / 1024 if count else None
        objects = (step.census.objects - base.census.objects) / count if count else None
        rows.append(
            [
                step.name,
                f"{count:,}",
                f"{step.seconds:,.1f}" if step.seconds else "-",
                _mib(step.rss),
                f"{(step.rss - base.rss) / 2**20:+,.1f}",
                f"{per:,.1f}" if per is not None else "-",
                f"{step.cpu_share * 100:.2f}" if step.cpu_share is not None else "-",
                f"{step.cpu_peak * 100:.1f}" if step.cpu_peak is not None else "-",
                f"{step.cpu_share / count * 1e6:,.1f}" if step.cpu_share and count else "-",
                f"{step.census.tasks:,}",
                f"{step.census.objects:,}",
                f"{objects:,.0f}" if objects is not None else "-",
            ]
        )
    header = [
        "state",
        "conns",
        "took s",
        "RSS MiB",
        "ΔRSS MiB",
        "KiB/conn",
        "idle CPU %",
        "busiest s %",
        "µs/s per conn",
        "tasks",
        "GC objects",
        "objects/conn",
    ]
    out = [
        f"Idle connections: {result.connections:,} WebSockets with ?chatId= (run_live open) on one"
        f" uvicorn worker, permessage-deflate;\n  a fresh server, warmed by one connection and"
        f" turn; fd limit {result.fd_limit:,}",
        table(header, rows),
        "ΔRSS, KiB/conn, objects/conn: over 'before' (the warmed server, no connection), divided"
        " by the connections;\n  idle CPU: the server's share of one CPU over"
        f" {result.window:g} s once settled, and in its busiest second (uvicorn pings\n  each"
        " connection every 20 s); µs/s per conn: that CPU per second, per connection;\n  tasks:"
        " its event loop's; GC objects: what the garbage collector tracks, after a collection",
    ]
    if result.failed:
        out.append(f"  connections that failed to open (first few): {result.failed[:3]}")
    opened = max((step.connections for step in result.steps), default=0)
    first = result.steps[1] if len(result.steps) > 1 else base
    tasks = _growth(base.census.task_kinds, first.census.task_kinds, first.connections, 12)
    out.append(f"  tasks per connection, {first.name}: {tasks}")
    for step in result.steps[1:]:
        top = _growth(base.census.types, step.census.types, step.connections or opened)
        per = "per connection" if step.connections else "per connection that was open"
        out.append(f"  objects {per}, {step.name}: {top}")
    return "\n".join(out)


def _growth(before: dict[str, int], after: dict[str, int], count: int, top: int = 8) -> str:
    """The ``top`` kinds that grew most from ``before`` to ``after``, per one of ``count``."""
    if not count:
        return "-"
    grown = {
        name: (after.get(name, 0) - before.get(name, 0)) / count
        for name in set(after) | set(before)
    }
    biggest = sorted(grown.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{name.rsplit('.', 1)[-1]} {per:.3g}" for name, per in biggest if per)


def idle_targets(result: IdleResult) -> list[str]:
    base, *rest = result.steps
    opened = rest[0].connections if rest else 0
    closed = rest[-1] if rest else base
    out = [
        f"  idle: {opened:,} of {result.connections:,} connections open at once"
        f"  target {result.connections:,}: {verdict(opened >= result.connections)}",
    ]
    leftover_tasks = closed.census.tasks - base.census.tasks
    leftover = (closed.census.objects - base.census.objects) / max(opened, 1)
    out.append(
        f"  idle: after closing them all, tasks {closed.census.tasks:,} (before"
        f" {base.census.tasks:,}), GC objects {leftover:+,.1f} per connection that was open"
        f"  target no task left: {verdict(leftover_tasks <= 0)}"
    )
    return out


def _per_delta(batch: Batch, attr: str) -> float:
    return float(getattr(batch, attr)) / (batch.streams * batch.deltas)


def active_report(result: ActiveResult) -> str:
    rows = []
    for name, batches in result.rows.items():
        ours = name in CHECKED
        checked = [one for batch in batches for one in batch.checked]
        firsts = [one.first for one in checked if one.first is not None]
        streams = sum(batch.streams for batch in batches)
        wall = statistics.median(batch.wall for batch in batches)
        frames = sum(batch.frames for batch in batches)
        deltas = sum(batch.streams * batch.deltas for batch in batches)
        rows.append(
            [
                name,
                f"{len(batches)}",
                f"{sum(one.complete for one in checked):,}/{streams:,}" if ours else f"{streams:,}",
                f"{sum(one.exact for one in checked):,}" if ours else "-",
                _integrity(checked) if ours else "-",
                f"{wall:,.2f}",
                f"{result.n * result.deltas / wall:,.0f}",
                f"{statistics.median(_per_delta(b, 'server_cpu') for b in batches) * 1e6:,.0f}",
                f"{statistics.median(b.server_cpu / b.wall for b in batches) * 100:.0f}",
                f"{statistics.median(b.gc_seconds / b.server_cpu for b in batches) * 100:.0f}",
                f"{frames / deltas:.2f}" if ours else "-",
                f"{statistics.median(b.client_cpu / b.wall for b in batches) * 100:.0f}"
                if ours
                else "-",
                ms(percentile(firsts, 50)),
                ms(percentile(firsts, 99)),
            ]
        )
    header = [
        "row",
        "rounds",
        "complete",
        "exact",
        "lost/reord/dup",
        "wall s med",
        "deltas/s",
        "srv CPU µs/delta",
        "srv CPU %",
        "GC % CPU",
        "frames/delta",
        "client CPU %",
        "TTFC p50 ms",
        "TTFC p99 ms",
    ]
    return "\n".join(
        [
            f"Active connections: {result.n} WS /live turns at once, {result.deltas} text deltas"
            f" of {DELTA_CHARS} chars each, one uvicorn worker;\n  floor: {result.n} concurrent"
            " Runner.run_live in this process, on the server's CPU",
            table(header, rows),
            "complete: start, chunks, finish, end, no error; exact: and the text as asked, the"
            " chunk types as in a\n  response read alone, sequence numbers without a gap,"
            " repeat or reversal; srv CPU: of the process\n  running the agents (floor: this one),"
            " per delta and as a share of one CPU; GC: the garbage collector's\n  share of it;"
            " frames/delta: text-delta frames per delta (coalescing); client CPU: of the"
            " WebSocket\n  readers; TTFC: send frame (floor: run start) to the first text delta,"
            " over every turn of every round",
        ]
    )


def _integrity(checked: Sequence[Checked]) -> str:
    lost = sum(one.lost for one in checked) + sum(not one.text_ok for one in checked)
    reordered = sum(one.reordered for one in checked)
    duplicated = sum(one.duplicated for one in checked)
    return f"{lost}/{reordered}/{duplicated}"


def active_targets(result: ActiveResult) -> list[str]:
    out = []
    for name, batches in result.rows.items():
        if name == FLOOR:
            continue
        rates = [f.wall / o.wall for f, o in zip(result.floor, batches, strict=True)]
        ratio = paired(result.floor, batches, "wall")
        cpu = paired(batches, result.floor, "server_cpu")
        each = ", ".join(f"{rate:.3f}" for rate in rates)
        goal = f"  target >= {TARGET:.2f}: {verdict(ratio >= TARGET)}" if name == OURS else ""
        out.append(
            f"  active: deltas/s, {name + ' / floor':<34} {ratio:.3f} ({each}),"
            f" srv CPU per delta {cpu:.3f}{goal}"
        )
    for name in CHECKED:
        checked = [one for batch in result.rows[name] for one in batch.checked]
        whole = all(one.exact for one in checked)
        out.append(
            f"  active: {name} responses exact {sum(one.exact for one in checked):,}/"
            f"{len(checked):,}, chunks lost/reordered/duplicated {_integrity(checked)}"
            f"  target all, 0: {verdict(whole)}"
        )
    client = statistics.median(b.client_cpu / b.wall for b in result.ours)
    if client >= CLIENT_BUSY:
        out.append(f"  (the client used {client * 100:.0f} % of its CPU: it may be the limit)")
    return out


def environment(info: dict[str, Any], pin: bool) -> str:
    pinning = (
        "active: server and floor on one CPU, client on the other; idle: unpinned"
        if pin and len(os.sched_getaffinity(0)) > 1
        else "no CPU pinning"
    )
    return (
        f"python {platform.python_version()}, google-adk {version('google-adk')}, "
        f"uvicorn {version('uvicorn')} (loop={info.get('loop')}, ws={info.get('ws')}), "
        f"websockets {version('websockets')}, {platform.machine()}, {os.cpu_count()} CPUs\n"
        f"{pinning}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.live_concurrency", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 100 idle, 20 active")
    parser.add_argument("--idle", type=int, help=f"idle connections (default {IDLE:,})")
    parser.add_argument("--active", type=int, help=f"active connections (default {ACTIVE})")
    parser.add_argument("--deltas", type=int, help=f"deltas per active turn (default {DELTAS})")
    parser.add_argument("--rounds", type=int, help=f"rounds of the active part ({ROUNDS})")
    parser.add_argument("--no-pin", action="store_true", help="let the scheduler place processes")
    args = parser.parse_args(argv)
    quick = args.quick
    idle_n = args.idle if args.idle is not None else (100 if quick else IDLE)
    active_n = args.active if args.active is not None else (20 if quick else ACTIVE)
    deltas = args.deltas or (100 if quick else DELTAS)
    rounds = args.rounds or (2 if quick else ROUNDS)
    window = 2.0 if quick else IDLE_WINDOW
    quiet()
    raise_fd_limit()
    started = time.perf_counter()
    load_before = load_average()
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        idle = runner.run(idle_part(idle_n, window)) if idle_n else None
        load_mid = load_average()
        active = (
            runner.run(active_part(active_n, deltas, rounds, not args.no_pin)) if active_n else None
        )
    print(environment(active.info if active else idle.info if idle else {}, not args.no_pin))
    print(
        f"load average (1, 5, 15 min) before {load_before}, after the idle part {load_mid},"
        f" at the end {load_average()}"
    )
    if idle:
        print(idle_report(idle))
        print()
    if active:
        print(active_report(active))
    print("\nTargets (ratios: median of the per-round ratios; in brackets each round's)")
    for line in [
        *(idle_targets(idle) if idle else []),
        *(active_targets(active) if active else []),
    ]:
        print(line)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
