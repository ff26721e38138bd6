"""Scale-out: SSE throughput with one uvicorn worker and with two, on the shared pieces several
workers need (PostgreSQL sessions, Redis chat locks and stream store); and what those cost.

``python -m bench.scale_out [--quick] [--users U] [--deltas D] [--rounds R] [--window S]
[--configs KEY ...] [--redis-pool {url,shared}]``

A throw-away PostgreSQL cluster and Redis server are started for the run from Debian's binaries
(``tests/backing_services.py``, the test suite's own code). Then one server per configuration,
all at once, each ``bench.serve adk_asgi_shared``: uvicorn's own supervisor (what ``uvicorn
--workers N`` runs) with N worker processes on one listening socket, ``AdkApp`` at ``/agent``:

* ``1 worker`` and ``2 workers``: ADK's ``DatabaseSessionService`` on PostgreSQL (asyncpg),
  ``RedisChatLocks`` and ``RedisStreamStore``: a deployment that may run several workers;
* ``1 worker, local locks+streams``: the same sessions, in-process locks and
  ``InMemoryStreamStore``: what the cross-process lock and stream store cost, side by side;
* ``1 worker, all in memory``: in-memory sessions too (a diagnostic: what PostgreSQL costs).

``RedisChatLocks`` and ``RedisStreamStore`` are built from the URL, as docs/deployment.md shows
(``--redis-pool shared``: one ``redis.asyncio.Redis`` per worker on a ``BlockingConnectionPool``
of 100 connections for both instead).

Each configuration has its own database and Redis database. **Saturation**: U users (100), each
with a connection of their own, send new chats back to back (closed loop), each asking for D
deltas (100); after a warm-up the clock runs for a window (20 s). Counted in the window: the
text deltas that arrived (so a wave of chats ending together does not skew it), and the chats
that ended. CPU over the window comes from ``/proc``: the server's processes (supervisor and
workers, and each worker's share), Redis, PostgreSQL (postmaster and backends), this process
(the load generator), and the whole machine (the rest is other load, and ``steal`` the
hypervisor's). Rounds rotate the order of the configurations; ratios are medians of per-round
ratios. Every stream is checked chunk by chunk against one read alone.

**One at a time**: short chats (5 deltas) sent one after another, rotating over the
configurations: the latency a request pays for the shared pieces when nothing else runs.

See ``docs/performance.md`` ("Scale-out").
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

import httpx

from bench.agent import DELTA_CHARS, quiet
from bench.concurrency import Chats, Checked, Streamed, check_stream, sse_payloads
from bench.report import load_average, ms, paired, percentile, progress, table, verdict
from bench.serve import raise_fd_limit
from bench.servers import ServerProcess
from bench.throughput import _loop_factory
from tests.backing_services import postgres_server, redis_server

USERS: Final = 100
DELTAS: Final = 100
"""Text deltas per chat (800 characters: a short answer), so the per-chat costs of the
shared pieces show next to the per-delta ones."""
ROUNDS: Final = 3
WARM_UP: Final = 5.0
WINDOW: Final = 20.0
SEQUENTIAL: Final = 30
"""Short chats per configuration, one at a time."""
SHORT: Final = 5
IDLE_WINDOW: Final = 5.0
"""Seconds over which the servers' CPU is measured once every chat is over."""
TARGET: Final = 1.8
"""Two workers' deltas/s over one worker's."""
_CLOCK_TICK: Final = os.sysconf("SC_CLK_TCK")

ONE: Final = "1 worker"
TWO: Final = "2 workers"
LOCAL: Final = "1 worker, local locks+streams"
MEMORY: Final = "1 worker, all in memory"


@dataclass(frozen=True, slots=True)
class Config:
    name: str
    workers: int
    postgres: bool
    redis: bool
    """Redis chat locks and stream store; else in-process locks and ``InMemoryStreamStore``."""


CONFIGS: Final = {
    "one": Config(ONE, 1, postgres=True, redis=True),
    "two": Config(TWO, 2, postgres=True, redis=True),
    "local": Config(LOCAL, 1, postgres=True, redis=False),
    "memory": Config(MEMORY, 1, postgres=False, redis=False),
}


# --- CPU from /proc ---------------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (the first is the state)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()


def process_cpu(pid: int) -> float:
    """CPU seconds of a process (all its threads) and of its children it has reaped."""
    fields = _stat(pid)
    return sum(int(value) for value in fields[11:15]) / _CLOCK_TICK


def descendants(root: int) -> list[int]:
    """``root`` and every process below it, now."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def tree_cpu(root: int) -> float:
    total = 0.0
    for pid in descendants(root):
        with contextlib.suppress(OSError, IndexError):
            total += process_cpu(pid)
    return total


def find_process(*needles: str) -> int:
    """The pid of the one process whose command line holds every one of ``needles``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            words = (entry / "cmdline").read_bytes().split(b"\0")
            line = " ".join(word.decode(errors="replace") for word in words)
            if all(needle in line for needle in needles):
                return int(entry.name)
    raise RuntimeError(f"no process with {needles}")


def machine_cpu() -> tuple[float, float]:
    """CPU seconds the machine has been busy (all CPUs, iowait excluded), and stolen by the
    hypervisor, since boot (``/proc/stat``)."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    user, nice, system, irq, softirq, steal = fields[0], fields[1], fields[2], *fields[5:8]
    busy = user + nice + system + irq + softirq
    return busy / _CLOCK_TICK, steal / _CLOCK_TICK


@dataclass(frozen=True, slots=True)
class CpuSample:
    """CPU seconds so far of everything the run involves."""

    workers: tuple[float, ...]
    server: float
    """Supervisor and workers."""
    redis: float
    postgres: float
    client: float
    machine: float
    steal: float

    def __sub__(self, other: CpuSample) -> CpuSample:
        return CpuSample(
            tuple(a - b for a, b in zip(self.workers, other.workers, strict=True)),
            self.server - other.server,
            self.redis - other.redis,
            self.postgres - other.postgres,
            self.client - other.client,
            self.machine - other.machine,
            self.steal - other.steal,
        )


@dataclass(frozen=True, slots=True)
class Pids:
    supervisor: int
    workers: tuple[int, ...]
    redis: int
    postgres: int

    def sample(self) -> CpuSample:
        machine, steal = machine_cpu()
        return CpuSample(
            tuple(process_cpu(pid) for pid in self.workers),
            tree_cpu(self.supervisor),
            process_cpu(self.redis),
            tree_cpu(self.postgres),
            time.process_time(),
            machine,
            steal,
        )


# --- the load -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Saturation:
    """One configuration's window in one round."""

    config: str
    users: int
    deltas: int
    window: float
    cpu: CpuSample
    deltas_in_window: int
    ended: list[Streamed]
    """The chats that ended in the window."""
    checked: list[Checked]
    """Every chat of the run (warm-up and drain too), checked."""
    errors: list[object]

    @property
    def delta_rate(self) -> float:
        return self.deltas_in_window / self.window

    @property
    def chats(self) -> float:
        """Chats' worth of deltas in the window."""
        return self.deltas_in_window / self.deltas

    @property
    def cpu_per_chat(self) -> float:
        return self.cpu.server / self.chats if self.chats else float("nan")

    @property
    def latencies(self) -> list[float]:
        return [stream.reads[-1][0] - stream.started for stream in self.ended if stream.reads]


def delta_arrivals(stream: Streamed) -> list[float]:
    """When each text delta of a stream arrived (the read that completed its event)."""
    totals = [total for _, total in stream.reads]
    found = []
    for payload, end in sse_payloads(stream.data):
        if '"text-delta"' in payload:
            read = bisect.bisect_left(totals, end)
            if read < len(stream.reads):
                found.append(stream.reads[read][0])
    return found


async def _user(
    chats: Chats, i: int, deltas: int, delay: float, stop: asyncio.Event, out: list[Streamed]
) -> None:
    await asyncio.sleep(delay)
    while not stop.is_set():
        out.append(await chats.chat(i, deltas))


async def saturate(
    config: Config,
    chats: Chats,
    pids: Pids,
    reference: Sequence[str],
    plan: Plan,
) -> Saturation:
    """``plan.users`` users sending chats back to back; counted over ``plan.window``."""
    stop = asyncio.Event()
    streams: list[Streamed] = []
    stagger = min(1.0, plan.warm_up / 2) / plan.users
    users = [
        asyncio.create_task(_user(chats, i, plan.deltas, i * stagger, stop, streams))
        for i in range(plan.users)
    ]
    try:
        await asyncio.sleep(plan.warm_up)
        before, start = pids.sample(), time.perf_counter()
        await asyncio.sleep(plan.window)
        after, end = pids.sample(), time.perf_counter()
        stop.set()
        await asyncio.gather(*users)
    finally:
        stop.set()
        for task in users:
            task.cancel()
    in_window = sum(sum(start <= at < end for at in delta_arrivals(stream)) for stream in streams)
    ended = [s for s in streams if s.reads and start <= s.reads[-1][0] < end and s.status == 200]
    errors: list[object] = [s.error or s.status for s in streams if s.status != 200]
    checked = [check_stream(stream, reference) for stream in streams]
    return Saturation(
        config.name,
        plan.users,
        plan.deltas,
        end - start,
        after - before,
        in_window,
        ended,
        checked,
        errors,
    )


@dataclass(frozen=True, slots=True)
class OneChat:
    first: float
    seconds: float
    server_cpu: float
    redis_cpu: float
    postgres_cpu: float
    exact: bool


async def one_chat(chats: Chats, pids: Pids, reference: Sequence[str]) -> OneChat:
    before = pids.sample()
    stream = await chats.chat(0, SHORT)
    spent = pids.sample() - before
    checked = check_stream(stream, reference)
    end = stream.reads[-1][0] if stream.reads else stream.started
    return OneChat(
        checked.first if checked.first is not None else float("nan"),
        end - stream.started,
        spent.server,
        spent.redis,
        spent.postgres,
        checked.exact,
    )


# --- the run ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    users: int
    deltas: int
    rounds: int
    warm_up: float
    window: float
    sequential: int
    configs: Sequence[Config]
    redis_pool: str = "url"
    """``url``: the stores built from the URL as docs/deployment.md shows; ``shared``: one
    client per worker on a ``BlockingConnectionPool`` (100) for both (``bench.serve``)."""


@dataclass
class Results:
    saturation: dict[str, list[Saturation]] = field(default_factory=dict)
    one_at_a_time: dict[str, list[OneChat]] = field(default_factory=dict)
    postgres_version: str = ""
    redis_version: str = ""
    logs: dict[str, str] = field(default_factory=dict)
    """The end of the server log of each configuration that had failed requests."""
    left: dict[str, list[Left]] = field(default_factory=dict)
    """Per configuration: what its workers still ran after each phase."""
    idle: dict[str, float] = field(default_factory=dict)
    """Share of one CPU each configuration's server (and ``Redis``) used once every chat was
    over."""


@dataclass(frozen=True, slots=True)
class Left:
    """Tasks the workers still ran after a phase, over the tasks they ran before it."""

    phase: str
    chats: int
    """Chats sent so far."""
    tasks: dict[str, int]
    """Tasks by coroutine, over the baseline (all workers together)."""

    @property
    def requests(self) -> int:
        """Requests the server still runs: ``run_asgi`` is uvicorn's task per request."""
        return sum(n for name, n in self.tasks.items() if name.endswith("run_asgi"))


async def census(url: str, workers: int) -> dict[int, dict[str, Any]]:
    """Every worker's ``/__census``: asked on a new connection each time (the kernel hands each
    to one worker) until every worker has answered."""
    found: dict[int, dict[str, Any]] = {}
    limits = httpx.Limits(max_keepalive_connections=0)
    for _ in range(200):
        async with httpx.AsyncClient(trust_env=False, timeout=120.0, limits=limits) as http:
            got = (await http.get(f"{url}/__census")).json()
        found[got["pid"]] = got
        if len(found) >= workers:
            break
    return found


def task_kinds(found: dict[int, dict[str, Any]]) -> Counter[str]:
    kinds: Counter[str] = Counter()
    for one in found.values():
        kinds.update(one["task_kinds"])
    return kinds


@dataclass
class _Served:
    config: Config
    server: ServerProcess
    chats: Chats
    pids: Pids
    reference: list[str] = field(default_factory=list)
    short_reference: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _servers(plan: Plan, postgres: Any, redis_url: str) -> Iterator[list[ServerProcess]]:
    with contextlib.ExitStack() as stack:
        servers = []
        for index, config in enumerate(plan.configs):
            redis_db = f"{redis_url.rsplit('/', 1)[0]}/{index + 1}"
            env = {
                "BENCH_WORKERS": str(config.workers),
                "BENCH_SESSIONS": postgres.create_database(f"scale_{index}").url
                if config.postgres
                else "memory",
                "BENCH_LOCKS": redis_db if config.redis else "memory",
                "BENCH_STREAMS": redis_db if config.redis else "memory",
                "BENCH_REDIS_POOL": plan.redis_pool,
            }
            progress(f"starting {config.name}")
            servers.append(stack.enter_context(ServerProcess("adk_asgi_shared", env=env)))
        yield servers


async def bench(plan: Plan, postgres: Any, redis_url: str) -> Results:
    results = Results()
    redis_port = redis_url.rsplit(":", 1)[1].split("/")[0]
    redis_pid = find_process("redis-server", f":{redis_port}")
    postgres_pid = find_process("/postgres", "-p", str(postgres.port))
    with _servers(plan, postgres, redis_url) as servers:
        served = []
        async with contextlib.AsyncExitStack() as stack:
            for config, server in zip(plan.configs, servers, strict=True):
                info = server.info
                pids = Pids(info["supervisor"], tuple(info["workers"]), redis_pid, postgres_pid)
                chats = await stack.enter_async_context(Chats(server.url))
                served.append(_Served(config, server, chats, pids))
            try:
                for one in served:
                    one.reference = await one.chats.reference(plan.deltas)
                    one.short_reference = await one.chats.reference(SHORT)
                await _run(plan, served, results)
                for one in served:
                    if any(run.errors for run in results.saturation[one.config.name]):
                        results.logs[one.config.name] = one.server.log_tail(3000)
            except Exception:
                for one in served:
                    print(
                        f"--- {one.config.name} log ---\n{one.server.log_tail()}", file=sys.stderr
                    )
                raise
    return results


async def _run(plan: Plan, served: list[_Served], results: Results) -> None:
    progress(f"one at a time: {plan.sequential} chats of {SHORT} deltas per configuration")
    baseline = {}
    for one in served:
        results.one_at_a_time[one.config.name] = []
        await one.chats.chat(0, SHORT)  # warm
        await asyncio.sleep(0.5)  # its stream and lock let go
        baseline[one.config.name] = task_kinds(await census(one.server.url, one.config.workers))
    for _ in range(plan.sequential):
        for one in served:
            found = await one_chat(one.chats, one.pids, one.short_reference)
            results.one_at_a_time[one.config.name].append(found)
    await asyncio.sleep(2.0)
    await _left(served, results, baseline, "one at a time")
    results.saturation = {one.config.name: [] for one in served}
    for rep in range(plan.rounds):
        shift = rep % len(served)
        for one in served[shift:] + served[:shift]:
            progress(
                f"round {rep + 1}/{plan.rounds}: {one.config.name}, {plan.users} users,"
                f" {plan.warm_up:g} + {plan.window:g} s"
            )
            found = await saturate(one.config, one.chats, one.pids, one.reference, plan)
            results.saturation[one.config.name].append(found)
    progress("what the servers still run once every chat is over")
    await asyncio.sleep(5.0)
    await _left(served, results, baseline, "saturation")
    before, start = [one.pids.sample() for one in served], time.perf_counter()
    await asyncio.sleep(IDLE_WINDOW)
    after, seconds = [one.pids.sample() for one in served], time.perf_counter() - start
    for one, a, b in zip(served, before, after, strict=True):
        results.idle[one.config.name] = (b.server - a.server) / seconds
    results.idle["Redis"] = (after[0].redis - before[0].redis) / seconds


async def _left(
    served: list[_Served], results: Results, baseline: dict[str, Counter[str]], phase: str
) -> None:
    for one in served:
        name = one.config.name
        now = task_kinds(await census(one.server.url, one.config.workers))
        grown = {kind: n - baseline[name][kind] for kind, n in now.items()}
        chats = len(results.one_at_a_time[name])
        chats += sum(len(run.checked) for run in results.saturation.get(name, []))
        found = Left(phase, chats, {kind: n for kind, n in grown.items() if n > 0})
        results.left.setdefault(name, []).append(found)


# --- report -------------------------------------------------------------------------------


def _cpu_share(runs: Sequence[Saturation], attr: str) -> str:
    """The median share of one CPU that one part of the CPU sample took over the window."""
    return f"{_median([getattr(run.cpu, attr) / run.window for run in runs]) * 100:.0f}"


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def saturation_report(results: Results, plan: Plan) -> str:
    rows = []
    for name, runs in results.saturation.items():
        checked = [one for run in runs for one in run.checked]
        latencies = [latency for run in runs for latency in run.latencies]
        firsts = [
            one.first for run in runs for one in run.checked if one.first is not None
        ]  # every chat, warm-up and drain included
        split = "/".join(
            f"{_median([run.cpu.workers[i] / run.cpu.server for run in runs]) * 100:.0f}"
            for i in range(len(runs[0].cpu.workers))
        )
        others = _median(
            [
                (
                    run.cpu.machine
                    - run.cpu.server
                    - run.cpu.redis
                    - run.cpu.postgres
                    - run.cpu.client
                )
                / run.window
                for run in runs
            ]
        )
        rows.append(
            [
                name,
                f"{len(runs)}",
                f"{sum(len(run.ended) for run in runs):,}",
                f"{sum(one.exact for one in checked):,}/{len(checked):,}",
                f"{sum(len(run.errors) for run in runs)}",
                f"{_median([run.delta_rate for run in runs]):,.0f}",
                f"{_median([run.chats / run.window for run in runs]):,.1f}",
                f"{_median([len(run.ended) / run.window for run in runs]):,.1f}",
                _cpu_share(runs, "server"),
                split,
                f"{_median([run.cpu_per_chat for run in runs]) * 1e3:,.1f}",
                _cpu_share(runs, "redis"),
                _cpu_share(runs, "postgres"),
                _cpu_share(runs, "client"),
                f"{others * 100:.0f}",
                _cpu_share(runs, "steal"),
                f"{percentile(latencies, 50):,.2f}",
                f"{percentile(latencies, 99):,.2f}",
                ms(percentile(firsts, 50)),
            ]
        )
    header = [
        "configuration",
        "rounds",
        "chats ended",
        "exact",
        "errors",
        "deltas/s",
        "chats/s",
        "(ended/s)",
        "srv CPU %",
        "per worker %",
        "srv CPU ms/chat",
        "Redis %",
        "Postgres %",
        "client %",
        "others %",
        "steal %",
        "latency p50 s",
        "p99 s",
        "TTFC p50 ms",
    ]
    return "\n".join(
        [
            f"Saturation: {plan.users} users sending chats of {plan.deltas} deltas of"
            f" {DELTA_CHARS} chars back to back;\n  after {plan.warm_up:g} s of warm-up, counted"
            f" over {plan.window:g} s; medians over rounds, totals and percentiles over all",
            table(header, rows),
            "deltas/s: text deltas that arrived in the window; chats/s: those as chats (deltas/s"
            " / deltas per chat);\n  (ended/s): chats that ended in the window; exact: every"
            " chat of the runs (warm-up and drain too) equal,\n  chunk for chunk, to one read"
            " alone; CPU %: of one CPU over the window (the machine has"
            f" {os.cpu_count()}):\n  srv = uvicorn's supervisor and workers (per worker: each"
            " one's share of that), Redis, Postgres\n  (postmaster and backends), client = this"
            " load generator, others = the rest of the machine's busy time,\n  steal = taken by"
            " the hypervisor; srv CPU ms/chat: srv CPU / chats; latency: request to [DONE] of"
            " the\n  chats that ended in the window; TTFC: request on the wire to its first text"
            " delta, every chat",
        ]
    )


def sequential_report(results: Results) -> str:
    rows = []
    for name, runs in results.one_at_a_time.items():
        rows.append(
            [
                name,
                f"{sum(run.exact for run in runs)}/{len(runs)}",
                ms(_median([run.first for run in runs])),
                ms(_median([run.seconds for run in runs])),
                ms(percentile([run.seconds for run in runs], 90)),
                f"{sum(run.server_cpu for run in runs) / len(runs) * 1e3:,.1f}",
                f"{sum(run.redis_cpu for run in runs) / len(runs) * 1e3:,.2f}",
                f"{sum(run.postgres_cpu for run in runs) / len(runs) * 1e3:,.1f}",
            ]
        )
    header = [
        "configuration",
        "exact",
        "TTFC ms med",
        "chat ms med",
        "chat ms p90",
        "srv CPU ms/chat",
        "Redis CPU ms/chat",
        "Postgres CPU ms/chat",
    ]
    return "\n".join(
        [
            f"One at a time: chats of {SHORT} deltas, one after another, rotating over the"
            f" configurations ({len(next(iter(results.one_at_a_time.values())))} each)",
            table(header, rows),
            "CPU ms/chat: the processes' CPU over all of them / chats (/proc counts in 10 ms"
            " ticks: a mean over many)",
        ]
    )


def left_report(results: Results) -> str:
    rows = []
    for name, phases in results.left.items():
        for left in phases:
            top = sorted(left.tasks.items(), key=lambda item: -item[1])[:6]
            rows.append(
                [
                    name,
                    left.phase,
                    f"{left.chats:,}",
                    f"{left.requests:,}",
                    f"{sum(left.tasks.values()):,}",
                    ", ".join(f"{kind.rsplit('.', 1)[-1]} {n}" for kind, n in top) or "-",
                ]
            )
    header = ["configuration", "after", "chats so far", "requests running", "tasks", "by kind"]
    idle = ", ".join(f"{name} {share * 100:.1f} %" for name, share in results.idle.items())
    return "\n".join(
        [
            "Left behind: the workers' tasks (/__census, every worker) once the chats of a phase"
            " are over, over those\n  after the first chat; requests running: uvicorn request"
            " tasks (run_asgi) that have not returned",
            table(header, rows),
            f"CPU once every chat was over ({IDLE_WINDOW:g} s, share of one CPU): {idle}",
        ]
    )


def targets(results: Results, plan: Plan) -> list[str]:
    sat = results.saturation
    out = []
    if ONE in sat and TWO in sat:
        one, two = sat[ONE], sat[TWO]
        rates = [b.delta_rate / a.delta_rate for a, b in zip(one, two, strict=True)]
        ratio = statistics.median(rates)
        each = ", ".join(f"{rate:.2f}" for rate in rates)
        cpu = paired(two, one, "cpu_per_chat")
        used = _median(
            [
                (run.cpu.server + run.cpu.redis + run.cpu.postgres + run.cpu.client) / run.window
                for run in two
            ]
        )
        out += [
            f"  deltas/s, {TWO} / {ONE}  {ratio:.2f} ({each})"
            f"  target >= {TARGET:.1f}: {verdict(ratio >= TARGET)}",
            f"    srv CPU per chat, {TWO} / {ONE}  {cpu:.2f} (1.00: a worker does the same"
            " work per chat either way)",
            f"    in the {TWO} runs, the server, Redis, Postgres and the load generator used"
            f" {used * 100:.0f} % of one CPU, of the machine's {(os.cpu_count() or 1) * 100} %",
        ]
    if ONE in sat and LOCAL in sat:
        shared, local = sat[ONE], sat[LOCAL]
        cpu = paired(shared, local, "cpu_per_chat")
        redis = _median([run.cpu.redis / run.chats for run in shared])
        latency = statistics.median(
            _median(a.latencies) / _median(b.latencies) for a, b in zip(shared, local, strict=True)
        )
        rate = paired(local, shared, "delta_rate")
        out += [
            f"  Redis locks + stream store over local ones, one worker: srv CPU per chat {cpu:.3f},"
            f" latency at saturation {latency:.3f},",
            f"    deltas/s {1 / rate:.3f}; Redis's own CPU {redis * 1e3:.2f} ms per chat",
        ]
        seq = results.one_at_a_time
        if ONE in seq and LOCAL in seq:
            a, b = seq[ONE], seq[LOCAL]
            extra = _median([r.seconds for r in a]) - _median([r.seconds for r in b])
            first = _median([r.first for r in a]) - _median([r.first for r in b])
            out.append(
                f"    one at a time: chat {extra * 1e3:+.2f} ms, first delta {first * 1e3:+.2f} ms"
                " (medians)"
            )
    if LOCAL in sat and MEMORY in sat:
        pg, memory = sat[LOCAL], sat[MEMORY]
        cpu = paired(pg, memory, "cpu_per_chat")
        rate = paired(memory, pg, "delta_rate")
        out.append(
            f"  PostgreSQL sessions over in-memory ones, one worker: srv CPU per chat {cpu:.3f},"
            f" deltas/s {1 / rate:.3f}"
        )
    whole = all(one.exact for runs in sat.values() for run in runs for one in run.checked)
    errors = sum(len(run.errors) for runs in sat.values() for run in runs)
    out.append(
        f"  every chat complete and exact, {errors} failed requests  target all, 0:"
        f" {verdict(whole and not errors)}"
    )
    for name, runs in sat.items():
        failed = [error for run in runs for error in run.errors]
        if failed:
            out.append(f"    {name}: failed requests, first few: {failed[:3]}")
    for name, phases in results.left.items():
        left = phases[-1]
        out.append(
            f"  {name}: requests still running on the server once all {left.chats:,} chats"
            f" were over: {left.requests:,}  target 0: {verdict(not left.requests)}"
        )
    return out


def environment(results: Results, plan: Plan) -> str:
    pool = (
        "RedisChatLocks(url), RedisStreamStore(url): each builds its own client"
        if plan.redis_pool == "url"
        else "RedisChatLocks and RedisStreamStore on one redis.asyncio.Redis per worker,"
        " BlockingConnectionPool(max_connections=100)"
    )
    return (
        f"python {platform.python_version()}, google-adk {version('google-adk')}, "
        f"uvicorn {version('uvicorn')}, httpx {version('httpx')}, redis-py {version('redis')},"
        f" asyncpg {version('asyncpg')}, SQLAlchemy {version('sqlalchemy')},\n"
        f"{results.postgres_version}, {results.redis_version}; {platform.machine()},"
        f" {os.cpu_count()} CPUs, nothing pinned\n{pool}"
    )


def _versions(postgres: Any) -> tuple[str, str]:
    pg = subprocess.run(
        [str(postgres.bin_dir / "postgres"), "--version"], capture_output=True, text=True
    ).stdout.strip()
    redis = subprocess.run(
        ["/usr/bin/redis-server", "--version"], capture_output=True, text=True
    ).stdout.split()
    return pg, " ".join(redis[:3])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 users, short")
    parser.add_argument("--users", type=int, help=f"concurrent users (default {USERS})")
    parser.add_argument("--deltas", type=int, help=f"deltas per chat (default {DELTAS})")
    parser.add_argument("--rounds", type=int, help=f"rounds (default {ROUNDS})")
    parser.add_argument("--window", type=float, help=f"seconds counted (default {WINDOW:g})")
    parser.add_argument(
        "--configs", nargs="+", choices=list(CONFIGS), help="configurations (default: all)"
    )
    parser.add_argument(
        "--redis-pool",
        choices=["url", "shared"],
        default="url",
        help="url: RedisChatLocks(url) and RedisStreamStore(url), as the docs show (default);"
        " shared: one client per worker on a BlockingConnectionPool(100) for both",
    )
    parser.add_argument(
        "--redis-from-url", action="store_true", help="the same as --redis-pool url"
    )
    args = parser.parse_args(argv)
    quick = args.quick
    plan = Plan(
        users=args.users or (20 if quick else USERS),
        deltas=args.deltas or DELTAS,
        rounds=args.rounds or (1 if quick else ROUNDS),
        warm_up=1.0 if quick else WARM_UP,
        window=args.window or (3.0 if quick else WINDOW),
        sequential=5 if quick else SEQUENTIAL,
        configs=[CONFIGS[key] for key in args.configs or CONFIGS],
        redis_pool="url" if args.redis_from_url else args.redis_pool,
    )
    quiet()
    raise_fd_limit()
    started = time.perf_counter()
    load_before = load_average()
    with postgres_server() as postgres, redis_server() as redis_url:
        progress(f"PostgreSQL on port {postgres.port}, Redis at {redis_url}")
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            results = runner.run(bench(plan, postgres, redis_url))
        results.postgres_version, results.redis_version = _versions(postgres)
    print(environment(results, plan))
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_average()}")
    print(saturation_report(results, plan))
    print()
    print(sequential_report(results))
    print()
    print(left_report(results))
    print("\nTargets (ratios: median of the per-round ratios; in brackets each round's)")
    for line in targets(results, plan):
        print(line)
    for name, log in results.logs.items():
        print(f"--- {name}: the end of the server log ---\n{log}", file=sys.stderr)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
