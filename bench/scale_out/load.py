"""The load of ``bench.scale_out``: its configurations, the CPU of every process a run involves
(from ``/proc``), users sending chats back to back (:func:`saturate`), one chat at a time
(:func:`one_chat`), and the workers' tasks left behind (:func:`census`).
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx

from bench.harness.chats import Chats, Checked, Streamed, check_stream, sse_payloads
from bench.harness.procfs import machine_cpu, process_cpu, tree_cpu

SHORT: Final = 5

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
    client per worker on a ``BlockingConnectionPool`` (100) for both (``bench.harness.serve``)."""


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
