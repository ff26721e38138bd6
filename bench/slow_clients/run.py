"""``python -m bench.slow_clients``: every scenario on a fresh server, its memory sampled
meanwhile, and the report."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import bench.slow_clients as benchmark
from bench.harness import cli
from bench.harness.agent import quiet
from bench.harness.chats import Chats, Streamed, check_stream
from bench.harness.placement import Placement, loop_factory
from bench.harness.probes import settle
from bench.harness.procfs import reset_peak, send_queue, status_bytes
from bench.harness.report import http_environment, load_average, progress
from bench.harness.servers import ServerProcess, logs_on_error
from bench.slow_clients.report import report
from bench.slow_clients.rows import Outcome, Plan, Reader, Scenario, make_plan, read_long, user

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


# --- the plan -------------------------------------------------------------------------------


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
    parser = cli.parser(
        "bench.slow_clients", benchmark.__doc__, "a smoke run: short, small answers"
    )
    cli.switches(parser, no_pin="let the scheduler place processes")
    args = parser.parse_args(argv)
    quiet()
    started = time.perf_counter()
    load_before = load_average()
    text, info = run(quick=args.quick, pin=not args.no_pin)
    print(http_environment(info, Placement([], pin=not args.no_pin)))
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_average()}")
    print(text)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
