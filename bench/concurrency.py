"""Many chats at once on one uvicorn worker: CPU per delta against the floor, chunk integrity,
time to first chunk and the gaps between deliveries; then slow readers (``bench.slow_clients``).

``python -m bench.concurrency [--quick] [--levels N ...] [--deltas D] [--no-pin] [--no-slow]``

At each level, N chats start at once, each asking the scripted agent (``bench.agent``) for a
reply of D text deltas (300; 8 characters each), in two rows run in turns:

* ``floor``: N concurrent ``Runner.run_async`` calls in this process (SSE streaming, in-memory
  sessions created before the clock starts), run on the server's CPU, as ``bench.throughput``
  does for one.
* ``adk_asgi``: N concurrent ``POST /agent/chat`` on ONE uvicorn worker (``bench.serve
  adk_asgi``, pinned to one CPU), read in this process on the other CPU, by one
  ``httpx.AsyncClient`` per chat (each user has a browser of their own; see :class:`Chats`).

Every stream is checked chunk by chunk against the stream of the same reply read alone (the
message id aside, the scripted agent's answer is deterministic): a lost, duplicated or reordered
chunk, an ``error`` chunk or a stream without ``[DONE]`` is counted. Server CPU per delta comes
from the server's ``/__cpu`` probe around each batch, the client's from this process; a client
near 100 % of its CPU, or slow to send its burst, would be the bottleneck, and the report says
so. The garbage collector's time comes from ``/__gc`` (the floor: the same clock here).

Time to first chunk (TTFC) runs from the request on the wire (the floor: the run's start) to
its first text delta.
A *gap* is the time between two consecutive deliveries of one stream (reads that brought at
least one whole chunk; floor: events, but not those taken from ADK's queue in one go), from its
first text delta to its end: how long the user looks at a stream that does not move. Levels are
bursts: the N requests are sent together. Percentiles are over every stream of every round.

Then ``bench.slow_clients`` (unless ``--no-slow``). See ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import math
import os
import platform
import ssl
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, Final

import httpx
import msgspec
from google.adk.agents._streaming_mode import StreamingMode  # run_config re-exports it implicitly
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from bench.agent import APP_NAME, DELTA_CHARS, USER_ID, answer_text, make_agent, quiet, user_message
from bench.report import load_average, ms, percentile, progress, table, verdict
from bench.serve import GcClock
from bench.servers import ServerProcess
from bench.throughput import Placement, _loop_factory

DELTAS: Final = 300
"""Text deltas per reply (2,400 characters: a few paragraphs)."""
LEVELS: Final = (1, 50, 200, 500)
QUICK_LEVELS: Final = (1, 10, 50)
WARM_UP: Final = 5
"""Deltas of the untimed warm-up replies."""
CPU_TARGET: Final = 1.05
"""Server CPU per delta at most 5 % over the floor's at the same concurrency."""
CLIENT_BUSY: Final = 0.80
"""Share of its CPU above which the client may be what limits a batch."""
SAME_BURST: Final = 1e-4
"""Floor events closer than this were taken from ADK's queue in one go (making one costs
~300 µs): not a gap, as chunks that arrive in one read are not."""
DONE: Final = "[DONE]"
_JSON = msgspec.json.Decoder(dict[str, Any])


# --- one chat over HTTP -------------------------------------------------------------------------


def chat_body(deltas: int) -> dict[str, Any]:
    """``POST /agent/chat`` as the AI SDK's ``DefaultChatTransport`` sends it, a new chat."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": str(deltas)}]}
    return {"id": uuid.uuid4().hex, "messages": [message], "trigger": "submit-message"}


@dataclass(frozen=True, slots=True)
class Streamed:
    """One chat's response as the client read it."""

    started: float
    """``perf_counter`` when the client began the request (connecting first if it must)."""
    sent: float
    """``perf_counter`` when the request's body was written to the socket (``started`` if it
    never was)."""
    status: int
    """HTTP status; 0 when the request failed (``error``)."""
    data: bytes
    reads: list[tuple[float, int]]
    """(``perf_counter``, bytes read so far) after each read of the body."""
    error: str = ""


async def read_chat(client: httpx.AsyncClient, url: str, deltas: int) -> Streamed:
    """POST one new chat and read its whole body, noting when each piece arrived."""
    data = bytearray()
    reads: list[tuple[float, int]] = []
    started = time.perf_counter()
    sent = [started]

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event == "http11.send_request_body.complete":
            sent[0] = time.perf_counter()

    try:
        async with client.stream(
            "POST", url, json=chat_body(deltas), extensions={"trace": trace}
        ) as response:
            async for piece in response.aiter_raw():
                data += piece
                reads.append((time.perf_counter(), len(data)))
            status = response.status_code
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"
        return Streamed(started, sent[0], 0, bytes(data), reads, error)
    return Streamed(started, sent[0], status, bytes(data), reads)


def sse_payloads(data: bytes) -> list[tuple[str, int]]:
    """The ``data:`` payloads of an SSE body, each with the offset where its event ends
    (comments, such as keep-alives, skipped)."""
    found: list[tuple[str, int]] = []
    start = 0
    while True:
        end = data.find(b"\n\n", start)
        if end < 0:
            return found
        for line in data[start:end].split(b"\n"):
            if line.startswith(b"data: "):
                found.append((line[6:].decode(), end + 2))
        start = end + 2


def canonical(payloads: Sequence[str]) -> list[str]:
    """The payloads with the message id (random per chat, in ``start`` and every part id)
    replaced, so streams of the same reply compare equal chunk for chunk."""
    if not payloads or payloads[0] == DONE:
        return list(payloads)
    message_id = _JSON.decode(payloads[0]).get("messageId")
    if not isinstance(message_id, str) or not message_id:
        return list(payloads)
    return [payload.replace(message_id, "MSG") for payload in payloads]


@dataclass(frozen=True, slots=True)
class Checked:
    """One stream against the reference: integrity and timing."""

    complete: bool
    """Status 200, no ``error`` chunk, ``[DONE]`` last."""
    exact: bool
    """Every chunk equal to the reference's, in the same order."""
    lost: int
    duplicated: int
    reordered: int
    """Chunks out of place, counted only when none was lost or duplicated."""
    first: float | None
    """Seconds from the request's body on the wire (the floor: the run's start) to its first
    text delta."""
    gaps: list[float]
    """Seconds between consecutive deliveries, from the first text delta to the end."""
    deliveries: int = 0
    """Reads that brought at least one whole chunk (about the server's body writes)."""


def check_stream(stream: Streamed, reference: Sequence[str]) -> Checked:
    parsed = sse_payloads(stream.data)
    payloads = canonical([payload for payload, _ in parsed])
    complete = (
        stream.status == 200
        and bool(payloads)
        and payloads[-1] == DONE
        and not any('"type":"error"' in payload for payload in payloads)
    )
    want, got = Counter(reference), Counter(payloads)
    lost = sum((want - got).values())
    duplicated = sum((got - want).values())
    reordered = 0
    if not lost and not duplicated:
        reordered = sum(a != b for a, b in zip(reference, payloads, strict=True))
    # When each chunk arrived: the first read by which its event's bytes were all in.
    totals = [total for _, total in stream.reads]
    arrivals = [bisect.bisect_left(totals, end) for _, end in parsed]
    first_read = next(
        (
            read
            for (payload, _), read in zip(parsed, arrivals, strict=True)
            if '"text-delta"' in payload
        ),
        None,
    )
    first = None
    gaps: list[float] = []
    if first_read is not None and first_read < len(stream.reads):
        first = stream.reads[first_read][0] - stream.sent
        delivered = sorted({read for read in arrivals if read >= first_read})
        times = [stream.reads[read][0] for read in delivered if read < len(stream.reads)]
        gaps = [b - a for a, b in itertools.pairwise(times)]
    exact = payloads == list(reference)
    deliveries = len(set(arrivals))
    return Checked(complete, exact, lost, duplicated, reordered, first, gaps, deliveries)


class Chats:
    """The ``adk_asgi`` server as its users see it: one ``httpx.AsyncClient`` with one
    connection per concurrent chat, as each user has a browser of their own, and a client of
    its own for the ``/__cpu`` probe.

    Not one client with N connections: httpcore's pool looks at every connection for each
    request it queues or finishes, so a burst of N requests costs that one client O(N²) (at
    N=200 it took seconds to send the burst, which the first chunks then waited for)."""

    def __init__(self, base_url: str, mount: str = "/agent") -> None:
        self.base_url = base_url
        self.url = f"{base_url}{mount}/chat"
        self._ssl = ssl.create_default_context()  # shared: building one per client costs ms
        self.probe = self._client()
        self.users: list[httpx.AsyncClient] = []

    def _client(self) -> httpx.AsyncClient:
        # Idle connections are dropped before uvicorn would (timeout_keep_alive=5 s), so a
        # request never races the server closing one.
        limits = httpx.Limits(max_connections=1, keepalive_expiry=4.0)
        timeout = httpx.Timeout(600.0)
        return httpx.AsyncClient(verify=self._ssl, limits=limits, timeout=timeout, trust_env=False)

    async def __aenter__(self) -> Chats:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.gather(*(client.aclose() for client in [self.probe, *self.users]))

    def user(self, i: int) -> httpx.AsyncClient:
        """The client of user ``i`` (made on first use)."""
        while len(self.users) <= i:
            self.users.append(self._client())
        return self.users[i]

    async def chat(self, i: int, deltas: int) -> Streamed:
        """One new chat of ``deltas`` deltas, by user ``i``."""
        return await read_chat(self.user(i), self.url, deltas)

    async def cpu(self) -> float:
        response = await self.probe.get(f"{self.base_url}/__cpu")
        return float(response.text)

    async def gc(self) -> dict[str, float]:
        """The server's garbage collector time (``bench.serve``'s ``/__gc``; the first call
        starts the clock)."""
        response = await self.probe.get(f"{self.base_url}/__gc")
        found: dict[str, float] = response.json()
        return found

    async def reference(self, deltas: int) -> list[str]:
        """The canonical chunks of one reply read alone, checked against the agent's text."""
        alone = await self.chat(0, deltas)
        if alone.status != 200:
            body = alone.data[:300]
            raise RuntimeError(f"reference stream: {alone.status} {alone.error} {body!r}")
        payloads = canonical([payload for payload, _ in sse_payloads(alone.data)])
        text = "".join(
            _JSON.decode(payload)["delta"] for payload in payloads if '"text-delta"' in payload
        )
        if text != answer_text(deltas) or payloads[-1] != DONE:
            raise RuntimeError(f"reference stream: unexpected body {alone.data[-300:]!r}")
        return payloads

    async def batch(self, n: int, deltas: int, reference: Sequence[str] | None) -> Batch:
        """``n`` chats sent together; checked against ``reference`` after the clocks stop."""
        for i in range(n):
            self.user(i)  # made before the clocks start
        gc_before = await self.gc()
        server_cpu = await self.cpu()
        client_cpu = time.process_time()
        start = time.perf_counter()
        streams = await asyncio.gather(*(self.chat(i, deltas) for i in range(n)))
        wall = time.perf_counter() - start
        client_cpu = time.process_time() - client_cpu
        server_cpu = await self.cpu() - server_cpu
        gc_after = await self.gc()
        checked = [check_stream(stream, reference) for stream in streams] if reference else []
        errors: list[object] = [s.error or s.status for s in streams if s.status != 200]
        all_sent = max(stream.sent for stream in streams) - start
        gc_seconds = gc_after["seconds"] - gc_before["seconds"]
        return Batch(
            n,
            deltas,
            wall,
            server_cpu,
            client_cpu,
            checked,
            errors[:3],
            all_sent,
            gc_seconds,
            gc_after["longest"],
        )


# --- the floor ------------------------------------------------------------------------------


class ConcurrentFloor:
    """N concurrent bare ``run_async`` calls in this process: what ADK alone costs at that
    concurrency, on the server's CPU (``cpus``) with a warm-up run there first."""

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.sessions = InMemorySessionService()
        self.runner = Runner(
            app=App(name=APP_NAME, root_agent=make_agent()), session_service=self.sessions
        )
        self.run_config = RunConfig(streaming_mode=StreamingMode.SSE)
        self.gc = GcClock()
        self.gc.install()

    async def batch(self, n: int, deltas: int) -> Batch:
        home = os.sched_getaffinity(0)
        if self.cpus:
            os.sched_setaffinity(0, self.cpus)
        try:
            await self._batch(1, WARM_UP)
            return await self._batch(n, deltas)
        finally:
            os.sched_setaffinity(0, home)

    async def _batch(self, n: int, deltas: int) -> Batch:
        sessions = [
            await self.sessions.create_session(app_name=APP_NAME, user_id=USER_ID) for _ in range(n)
        ]
        gc_before = self.gc.read()
        cpu = time.process_time()
        start = time.perf_counter()
        runs = await asyncio.gather(*(self._run(session.id, deltas) for session in sessions))
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        gc_after = self.gc.read()
        gc_seconds = gc_after["seconds"] - gc_before["seconds"]
        return Batch(n, deltas, wall, cpu, 0.0, runs, [], 0.0, gc_seconds, gc_after["longest"])

    async def _run(self, session_id: str, deltas: int) -> Checked:
        started = time.perf_counter()
        times: list[float] = []
        text: list[str] = []
        async for event in self.runner.run_async(
            user_id=USER_ID,
            session_id=session_id,
            new_message=user_message(deltas),
            run_config=self.run_config,
        ):
            if event.partial and event.content and event.content.parts:
                text.append("".join(part.text or "" for part in event.content.parts))
            if text:  # from the first text delta on
                times.append(time.perf_counter())
        if "".join(text) != answer_text(deltas) or len(text) != deltas:
            raise RuntimeError(f"floor: {len(text)} partial events, expected {deltas}")
        gaps = [b - a for a, b in itertools.pairwise(times)]
        bursts = [gap for gap in gaps if gap >= SAME_BURST]
        return Checked(True, True, 0, 0, 0, times[0] - started, bursts)


# --- the run --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Batch:
    """N streams started together."""

    streams: int
    deltas: int
    wall: float
    server_cpu: float
    """CPU seconds of the process that ran the agents (the floor: this one)."""
    client_cpu: float
    checked: list[Checked]
    errors: list[object]
    """The first few failed requests (status or exception), for the report."""
    all_sent: float
    """Seconds from the start of the batch until the client had sent every request."""
    gc_seconds: float
    """Of ``server_cpu``: seconds in the cyclic garbage collector."""
    gc_longest: float
    """The longest garbage collection, in seconds: every stream stood still that long."""


@dataclass(frozen=True, slots=True)
class Plan:
    levels: Sequence[int]
    deltas: int
    rounds: dict[int, int]
    """Rounds per level: each runs the floor batch and the server batch once, in turns."""


@dataclass
class Level:
    n: int
    floor: list[Batch] = field(default_factory=list)
    ours: list[Batch] = field(default_factory=list)
    listen_overflows: int = 0
    """The kernel's TcpExt ListenOverflows during the level (connections that had to retry)."""


def rounds_for(levels: Sequence[int], deltas: int, *, quick: bool) -> dict[int, int]:
    """More rounds where a round is short, so every level streams about as many deltas."""
    if quick:
        return dict.fromkeys(levels, 2)
    return {n: max(3, min(15, math.ceil(30_000 / (n * deltas)))) for n in levels}


async def run_concurrency(url: str, plan: Plan, placement: Placement) -> list[Level]:
    floor = ConcurrentFloor()
    levels = []
    async with Chats(url) as chats:
        await chats.gc()  # starts the server's clock
        reference = await chats.reference(plan.deltas)
        floor.cpus = placement.pin()
        try:
            for n in plan.levels:
                rounds = plan.rounds[n]
                progress(
                    f"concurrency N={n}: {rounds} rounds of {n} x {plan.deltas} deltas per row"
                )
                level = Level(n)
                overflows = listen_overflows()
                await chats.batch(n, WARM_UP, None)
                for rep in range(rounds):
                    first_floor = rep % 2 == 0
                    if first_floor:
                        level.floor.append(await floor.batch(n, plan.deltas))
                    level.ours.append(await chats.batch(n, plan.deltas, reference))
                    if not first_floor:
                        level.floor.append(await floor.batch(n, plan.deltas))
                level.listen_overflows = listen_overflows() - overflows
                levels.append(level)
        finally:
            placement.unpin()
    return levels


def listen_overflows() -> int:
    """The kernel's count of connections refused for a full listen queue (all sockets)."""
    try:
        with open("/proc/net/netstat") as netstat:
            lines = netstat.read().splitlines()
    except OSError:
        return 0
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            return int(table.get("ListenOverflows", 0))
    return 0


# --- report ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tally:
    streams: int
    complete: int
    exact: int
    lost: int
    duplicated: int
    reordered: int
    firsts: list[float]
    gaps: list[float]


def tally(batches: Sequence[Batch]) -> Tally:
    checked = [one for batch in batches for one in batch.checked]
    return Tally(
        streams=sum(batch.streams for batch in batches),
        complete=sum(one.complete for one in checked),
        exact=sum(one.exact for one in checked),
        lost=sum(one.lost for one in checked),
        duplicated=sum(one.duplicated for one in checked),
        reordered=sum(one.reordered for one in checked),
        firsts=[one.first for one in checked if one.first is not None],
        gaps=[gap for one in checked for gap in one.gaps],
    )


def level_checked(batches: Sequence[Batch]) -> list[Checked]:
    return [one for batch in batches for one in batch.checked]


def _per_delta(batch: Batch, attr: str) -> float:
    return float(getattr(batch, attr)) / (batch.streams * batch.deltas)


LEGEND: Final = [
    "complete: 200, [DONE] last, no error chunk; exact: every chunk as in the same reply read"
    " alone",
    "srv CPU: of the process running the agents (floor: this one), per delta and as a share of"
    " one CPU over",
    "  the batch's wall time; client CPU: the httpx readers' share of theirs; all sent: when the"
    " client had sent",
    "  the last request of the burst; reads/delta: reads that brought whole chunks, per delta"
    " (about the server's",
    "  body writes); GC: the cyclic garbage collector's share of srv CPU, and its longest pause"
    " (every stream",
    "  stands still meanwhile); medians over rounds, maxima over all",
    "TTFC: request on the wire (floor: run start) to its first text delta; gap: between"
    " consecutive deliveries",
    "  of a stream (floor: events), from its first text delta on; percentiles over every stream"
    " of every round",
]


def concurrency_report(levels: Sequence[Level], deltas: int) -> str:
    work, timing = [], []
    for level in levels:
        for name, batches in (("floor", level.floor), ("adk_asgi", level.ours)):
            t = tally(batches)
            wall = statistics.median(batch.wall for batch in batches)
            ours = name == "adk_asgi"
            client = statistics.median(batch.client_cpu / batch.wall for batch in batches)
            delivered = sum(one.deliveries for one in level_checked(batches))
            delta_count = sum(batch.streams * batch.deltas for batch in batches)
            cpu = statistics.median(_per_delta(b, "server_cpu") for b in batches)
            work.append(
                [
                    f"{level.n:,}",
                    name,
                    f"{len(batches)}",
                    f"{t.complete:,}/{t.streams:,}" if ours else f"{t.streams:,}",
                    f"{t.exact:,}" if ours else "-",
                    f"{t.lost}/{t.reordered}/{t.duplicated}" if ours else "-",
                    f"{wall:,.2f}",
                    f"{level.n * deltas / wall:,.0f}",
                    f"{cpu * 1e6:,.0f}",
                    f"{statistics.median(b.server_cpu / b.wall for b in batches) * 100:.0f}",
                    f"{statistics.median(b.gc_seconds / b.server_cpu for b in batches) * 100:.0f}",
                    f"{delivered / delta_count:.2f}" if ours else "-",
                    f"{client * 100:.0f}" if ours else "-",
                    ms(statistics.median(b.all_sent for b in batches)) if ours else "-",
                ]
            )
            timing.append(
                [
                    f"{level.n:,}",
                    name,
                    ms(percentile(t.firsts, 50)),
                    ms(percentile(t.firsts, 99)),
                    ms(percentile(t.gaps, 50)),
                    ms(percentile(t.gaps, 99)),
                    ms(max(t.gaps, default=math.nan)),
                    ms(max(b.gc_longest for b in batches)),
                ]
            )
    work_header = [
        "N",
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
        "reads/delta",
        "client CPU %",
        "all sent ms",
    ]
    timing_header = [
        "N",
        "row",
        "TTFC p50 ms",
        "TTFC p99 ms",
        "gap p50 ms",
        "gap p99 ms",
        "gap max ms",
        "GC max ms",
    ]
    out = [
        f"Concurrency: N chats sent at once, {deltas} text deltas of {DELTA_CHARS} chars each,"
        " one uvicorn worker",
        table(work_header, work),
        "",
        table(timing_header, timing),
        *LEGEND,
        "",
        "Targets (ratios: median of the per-round ratios; in brackets each round's)",
    ]
    for level in levels:
        ratios = [
            _per_delta(o, "server_cpu") / _per_delta(f, "server_cpu")
            for o, f in zip(level.ours, level.floor, strict=True)
        ]
        ratio = statistics.median(ratios)
        each = ", ".join(f"{r:.3f}" for r in ratios)
        out.append(
            f"  N={level.n:>4,}  srv CPU per delta, adk_asgi / floor  {ratio:.3f} ({each})"
            f"  target <= {CPU_TARGET:.2f}: {verdict(ratio <= CPU_TARGET)}"
        )
        t = tally(level.ours)
        whole = t.complete == t.exact == t.streams and not (t.lost or t.reordered or t.duplicated)
        out.append(
            f"  N={level.n:>4,}  streams complete and exact {t.exact:,}/{t.streams:,}, chunks lost"
            f" {t.lost}, reordered {t.reordered}, duplicated {t.duplicated}"
            f"  target all, 0: {verdict(whole)}"
        )
        errors = [error for batch in level.ours for error in batch.errors]
        if errors:
            out.append(f"           failed requests, first few: {errors[:3]}")
    out.append("")
    out.append("Who limits the adk_asgi batches (medians over rounds, share of one CPU each)")
    for level in levels:
        server = statistics.median(b.server_cpu / b.wall for b in level.ours)
        client = statistics.median(b.client_cpu / b.wall for b in level.ours)
        sent = statistics.median(b.all_sent for b in level.ours)
        first = percentile(tally(level.ours).firsts, 50)
        if client >= CLIENT_BUSY:
            who = "the CLIENT may be the bottleneck"
        elif sent > first / 2:
            who = "the CLIENT's burst is slow next to the first chunks"
        elif server >= CLIENT_BUSY:
            who = "the server's CPU (as intended)"
        else:
            who = "neither CPU is saturated: latency-bound"
        overflow = (
            f"; {level.listen_overflows} listen-queue overflows (SYN retried)"
            if level.listen_overflows
            else ""
        )
        out.append(
            f"  N={level.n:>4,}  server {server * 100:3.0f} %, client {client * 100:3.0f} %,"
            f" burst sent in {ms(sent)} ms (TTFC p50 {ms(first)} ms): {who}{overflow}"
        )
    return "\n".join(out)


def environment(info: dict[str, Any], placement: Placement) -> str:
    pinning = (
        f"server and floor on CPU {sorted(placement.agent_cpus)}, client on CPU "
        f"{sorted(placement.client_cpus)}"
        if placement.enabled
        else "no CPU pinning"
    )
    return (
        f"python {platform.python_version()}, google-adk {version('google-adk')}, "
        f"uvicorn {version('uvicorn')} (loop={info.get('loop')}, http={info.get('http')}), "
        f"httpx {version('httpx')}, {platform.machine()}, {os.cpu_count()} CPUs\n{pinning}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrency", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run: small levels, 2 rounds")
    parser.add_argument("--levels", type=int, nargs="+", help="chats at once (1 50 200 500)")
    parser.add_argument("--deltas", type=int, help=f"text deltas per reply (default {DELTAS})")
    parser.add_argument("--no-pin", action="store_true", help="let the scheduler place processes")
    parser.add_argument("--no-slow", action="store_true", help="skip bench.slow_clients")
    args = parser.parse_args(argv)
    levels = args.levels or (QUICK_LEVELS if args.quick else LEVELS)
    deltas = args.deltas or (100 if args.quick else DELTAS)
    plan = Plan(levels, deltas, rounds_for(levels, deltas, quick=args.quick))
    quiet()
    started = time.perf_counter()
    load_before = load_average()
    with ServerProcess("adk_asgi") as server:
        progress(f"server up: {server.url}")
        placement = Placement([server], pin=not args.no_pin)
        try:
            with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                levels_found = runner.run(run_concurrency(server.url, plan, placement))
        except Exception:
            print(f"--- server log ---\n{server.log_tail()}", file=sys.stderr)
            raise
    load_after = load_average()
    print(environment(server.info, placement))
    print(
        f"load average (1, 5, 15 min) before {load_before}, after the concurrency part {load_after}"
    )
    print(concurrency_report(levels_found, deltas))
    sys.stdout.flush()
    if not args.no_slow:
        from bench.slow_clients import run as slow_clients  # it imports this module

        text, _ = slow_clients(quick=args.quick, pin=not args.no_pin)
        print(f"\nload average after the slow readers {load_average()}")
        print(text)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
