"""``python -m bench.live_concurrency``: the idle part on a fresh server, then the active part's
rounds on another, and the report."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, Final

import httpx

import bench.live_concurrency as benchmark
from bench.harness import cli
from bench.harness.agent import quiet
from bench.harness.live import SHORT_ANSWER
from bench.harness.placement import Placement, loop_factory
from bench.harness.report import load_average, progress
from bench.harness.rows import rotation
from bench.harness.serve import UNMERGED, raise_fd_limit
from bench.harness.servers import ServerProcess, logs_on_error
from bench.live_concurrency.idle import idle_part
from bench.live_concurrency.report import (
    active_report,
    active_targets,
    environment,
    idle_report,
    idle_targets,
)
from bench.live_concurrency.rows import (
    FLOOR,
    FRAME_PER_DELTA,
    IN_PROCESS,
    NO_DEFLATE,
    OURS,
    ActiveResult,
    Batch,
    ConcurrentInProcess,
    ConcurrentLiveFloor,
    LiveUsers,
)

IDLE: Final = 1_000
ACTIVE: Final = 100
DELTAS: Final = 300
ROUNDS: Final = 5
IDLE_WINDOW: Final = 20.0
"""Seconds over which the idle server's CPU is measured: uvicorn's WebSocket ping interval, so
the window holds one ping of every connection (a shorter one holds those of all the
connections opened together, or none)."""


async def active_part(n: int, deltas: int, rounds: int, pin: bool) -> ActiveResult:
    result = ActiveResult(n, deltas)
    with ServerProcess("adk_asgi") as server, logs_on_error({"": server}):
        result.info = server.info
        placement = Placement([server], pin=pin)
        floor, inproc = ConcurrentLiveFloor(), ConcurrentInProcess()
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
    return result


async def _rounds(rows: dict[str, Any], n: int, deltas: int, rounds: int) -> dict[str, list[Batch]]:
    """``rounds`` rounds of one batch per row, rotating the order of the rows each round."""
    found: dict[str, list[Batch]] = {name: [] for name in rows}
    for rep in range(rounds):
        progress(f"active: round {rep + 1}/{rounds}, {n} x {deltas} deltas per row")
        for name in rotation(list(rows), rep):
            found[name].append(await rows[name].batch(n, deltas))
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser(
        "bench.live_concurrency", benchmark.__doc__, "a smoke run: 100 idle, 20 active"
    )
    cli.numbers(
        parser,
        idle=f"idle connections (default {IDLE:,})",
        active=f"active connections (default {ACTIVE})",
        deltas=f"deltas per active turn (default {DELTAS})",
        rounds=f"rounds of the active part ({ROUNDS})",
    )
    cli.switches(parser, no_pin="let the scheduler place processes")
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
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
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
