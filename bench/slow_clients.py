"""Slow readers: the server's memory, and the other chats' gaps, when a client stops reading.

``python -m bench.slow_clients [--quick] [--no-pin]`` (also run by ``bench.concurrency``)

Each scenario runs on a fresh ``bench.harness.serve adk_asgi`` server (one uvicorn worker, pinned to
one CPU, the client on the other), so every peak of its resident memory is the scenario's own:

* **under load**: 50 normal users, each reading 3 chats of ``bench.concurrency``'s 300-delta
  replies one after the other: alone; next to two long answers (20,000 deltas) read at full
  speed (the control: the same work, taken as fast as it comes); next to one reader that stops
  reading for 10 s mid-answer and one that reads 1 KB a second. The long answers' readers
  leave when the normal chats are over.
* **alone**: one long answer and nothing else: read at full speed; paused for 10 s mid-answer
  (answers of 5,000 and 20,000 deltas); read at 1 KB/s for 15 s; and paused again with the
  kernel's own send buffer instead of the capped one.

Loopback TCP would soak up a whole answer before the server noticed a reader that does not
read: the kernel autotunes a connection's send buffer up to ``tcp_wmem``'s maximum (4 MiB),
where a slow network path fills after a few kilobytes in flight. So the server's connections
get ``SO_SNDBUF`` = ``SNDBUF`` (the kernel doubles it; inherited from the listening socket) and
the long answers' readers ``SO_RCVBUF`` = ``RCVBUF``; the last scenario shows the default.

Before the clock starts, each server runs the scenario's work once at full speed (a round of the
normal chats, one long answer), so the reading ``before`` already holds what any such run needs;
then the kernel's peak RSS (``VmHWM``) is reset through ``/proc/PID/clear_refs``. ``peak`` is
that peak at the end (checked against ``VmRSS`` sampled every 20 ms), ``end`` the ``VmRSS`` once
every stream is over and the server idle, and ``send-Q`` the most bytes the kernel held unsent
for the server's connections at once (``/proc/net/tcp``).

What should bound a reader that does not read: uvicorn stops taking body writes past its
transport's high-water mark (64 KiB), and adk_asgi's SSE writer then holds at most
``MAX_BUFFER`` (64 KiB) before it stops pulling events from ``run_async``. Whether ADK then
stops producing them is what the ``alone`` rows measure.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from bench.concurrency import DELTAS
from bench.concurrency_report import environment
from bench.harness import cli
from bench.harness.agent import quiet
from bench.harness.chats import Chats, Checked, Streamed, check_stream
from bench.harness.placement import Placement, loop_factory
from bench.harness.probes import settle
from bench.harness.procfs import reset_peak, send_queue, status_bytes
from bench.harness.report import load_average, progress
from bench.harness.servers import ServerProcess, logs_on_error
from bench.slow_clients_report import SNDBUF, report
from bench.slow_readers import RATE, Read, Reader, read_long, user


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    users: int
    """Normal users, each reading ``chats`` chats one after the other."""
    chats: int
    readers: Sequence[Reader]
    warm_deltas: int
    """The long answer read at full speed before the clock starts (0: none)."""
    sndbuf: int | None = SNDBUF


@dataclass
class Outcome:
    scenario: Scenario
    rss_before: int
    peak: int
    end: int
    peak_source: str
    send_queue: int
    """Most bytes unsent in the kernel for the server's connections at once."""
    server_cpu: float
    wall: float
    gc_seconds: float
    """Of ``server_cpu``: in the cyclic garbage collector."""
    gc_longest: float
    chats: list[Checked] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    server_info: dict[str, Any] = field(default_factory=dict)

    @property
    def growth(self) -> float:
        return float(self.peak - self.rss_before)

    @property
    def gaps(self) -> list[float]:
        return [gap for one in self.chats for gap in one.gaps]


# --- the server's memory --------------------------------------------------------------------


@dataclass
class _Peaks:
    rss: int = 0
    send_queue: int = 0


async def _sample(pid: int, port: int, stop: asyncio.Event, peaks: _Peaks) -> None:
    while not stop.is_set():
        peaks.rss = max(peaks.rss, status_bytes(pid, "VmRSS"))
        peaks.send_queue = max(peaks.send_queue, send_queue(port))
        with suppress(TimeoutError):
            async with asyncio.timeout(0.02):
                await stop.wait()


async def _settle(chats: Chats) -> None:
    """Wait until the server is idle (under 2 % of a CPU over 0.25 s), at most 60 s."""
    await settle(chats.cpu, limit=60.0, interval=0.25, busy=0.005)


# --- a scenario -----------------------------------------------------------------------------


async def run_scenario(scenario: Scenario, deltas: int, pin: bool) -> Outcome:
    with ServerProcess("adk_asgi", sndbuf=scenario.sndbuf) as server:
        placement = Placement([server], pin=pin)
        placement.pin()
        try:
            with logs_on_error({"": server}):
                async with Chats(server.url) as chats:
                    return await _run(scenario, deltas, server, chats)
        finally:
            placement.unpin()


async def _run(scenario: Scenario, deltas: int, server: ServerProcess, chats: Chats) -> Outcome:
    await chats.gc()  # starts the server's garbage collector clock
    reference = await chats.reference(deltas)  # also the first run: ADK's lazy imports
    if scenario.users:
        await chats.batch(scenario.users, deltas, None)
    if scenario.warm_deltas:
        await read_long(server.url, Reader("warm-up", scenario.warm_deltas), asyncio.Event())
    await _settle(chats)
    rss_before = status_bytes(server.pid, "VmRSS")
    hwm = reset_peak(server.pid)
    port = urlsplit(server.url).port or 80
    stop, leave, peaks = asyncio.Event(), asyncio.Event(), _Peaks()
    sampler = asyncio.create_task(_sample(server.pid, port, stop, peaks))
    gc_before = await chats.gc()
    cpu = await chats.cpu()
    start = time.perf_counter()
    streams: list[Streamed] = []
    readers = asyncio.gather(*(read_long(server.url, r, leave) for r in scenario.readers))
    if scenario.users:
        await asyncio.gather(
            *(user(chats, i, scenario.chats, deltas, streams) for i in range(scenario.users))
        )
        leave.set()  # the long answers' readers leave with the last normal chat
    reads = await readers
    await _settle(chats)
    wall = time.perf_counter() - start
    server_cpu = await chats.cpu() - cpu
    gc_after = await chats.gc()
    stop.set()
    await sampler
    peak, source = peaks.rss, "VmRSS every 20 ms"
    if hwm and status_bytes(server.pid, "VmHWM") >= peaks.rss:
        peak, source = status_bytes(server.pid, "VmHWM"), "VmHWM"
    end = status_bytes(server.pid, "VmRSS")
    gc_seconds = gc_after["seconds"] - gc_before["seconds"]
    outcome = Outcome(
        scenario,
        rss_before,
        peak,
        end,
        source,
        peaks.send_queue,
        server_cpu,
        wall,
        gc_seconds,
        gc_after["longest"],
    )
    outcome.chats = [check_stream(stream, reference) for stream in streams]
    outcome.reads = list(reads)
    outcome.server_info = server.info
    return outcome


# --- plan and report ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    deltas: int
    """Of each normal chat."""
    under_load: Sequence[Scenario]
    alone: Sequence[Scenario]
    """The first: the long answer at full speed, that the others compare with."""


def make_plan(*, quick: bool) -> Plan:
    users, chats, deltas = (10, 2, 100) if quick else (50, 3, DELTAS)
    pause, slow_for = (2.0, 3.0) if quick else (10.0, 15.0)
    long, short = (2_000, 500) if quick else (20_000, 5_000)
    full = Reader("full speed", long)
    paused = Reader(f"paused {pause:g} s", long, pause=pause)
    slow = Reader("1 KB/s", long, rate=RATE, leave_after=slow_for)
    under_load = [
        Scenario(f"{users} users", users, chats, [], long),
        Scenario(f"{users} users + 2 long answers at full speed", users, chats, [full, full], long),
        Scenario(f"{users} users + paused + 1 KB/s readers", users, chats, [paused, slow], long),
    ]
    alone = []
    for size in (short, long):
        alone += [
            Scenario(f"full speed ({size:,})", 0, 0, [Reader(full.label, size)], size),
            Scenario(f"{paused.label} ({size:,})", 0, 0, [Reader(paused.label, size, pause)], size),
        ]
    alone += [
        Scenario(f"1 KB/s for {slow_for:g} s ({long:,})", 0, 0, [slow], long),
        Scenario(f"{paused.label} ({long:,}), kernel's buffer", 0, 0, [paused], long, None),
    ]
    if quick:  # under a minute with bench.concurrency --quick: fewer fresh servers
        under_load = [under_load[0], under_load[2]]
        alone = alone[2:4]
    return Plan(deltas, under_load, alone)


async def run_all(plan: Plan, pin: bool) -> dict[str, Outcome]:
    outcomes = {}
    for scenario in [*plan.under_load, *plan.alone]:
        progress(f"slow readers: {scenario.name}")
        outcomes[scenario.name] = await run_scenario(scenario, plan.deltas, pin)
    return outcomes


def run(*, quick: bool, pin: bool) -> tuple[str, dict[str, Any]]:
    """Every scenario of the plan, each on a fresh server: the report, and what uvicorn
    picked."""
    plan = make_plan(quick=quick)
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        outcomes = runner.run(run_all(plan, pin))
    return report(plan, outcomes), next(iter(outcomes.values())).server_info


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("bench.slow_clients", __doc__, "a smoke run: short, small answers")
    cli.switches(parser, no_pin="let the scheduler place processes")
    args = parser.parse_args(argv)
    quiet()
    started = time.perf_counter()
    load_before = load_average()
    text, info = run(quick=args.quick, pin=not args.no_pin)
    print(environment(info, Placement([], pin=not args.no_pin)))
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_average()}")
    print(text)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
