"""``python -m bench.live``: one server, the rounds of every measurement, the idle connections
(a fresh server per state), and the report."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import httpx

import bench.live as benchmark
from bench.harness import cli
from bench.harness.agent import quiet
from bench.harness.live import InProcess, LiveClient
from bench.harness.placement import Placement, loop_factory
from bench.harness.report import progress
from bench.harness.rows import rotation, sample
from bench.harness.serve import RESUMABLE, UNMERGED
from bench.harness.servers import ServerProcess, logs_on_error
from bench.live.report import environment, report
from bench.live.rows import (
    FRAME_PER_DELTA,
    IDLE_STATES,
    IN_PROCESS,
    NO_DEFLATE,
    OURS,
    RESUMABLE_ROW,
    LiveFloor,
    Measure,
    Plan,
    Results,
    TextRow,
    TextSpeechRow,
    idle_memory,
)


async def bench(url: str, plan: Plan, placement: Placement) -> Results:
    floor, inproc = LiveFloor(), InProcess()
    async with httpx.AsyncClient(timeout=httpx.Timeout(300.0), trust_env=False) as http:
        ours = LiveClient(http, url, compression="deflate")
        plain = LiveClient(http, url, compression=None)
        unmerged = LiveClient(http, url, compression="deflate", mount=UNMERGED)
        kept = LiveClient(http, url, compression="deflate", mount=RESUMABLE)
        rows: dict[str, Any] = {
            "floor": floor,
            IN_PROCESS: inproc,
            OURS: ours,
            NO_DEFLATE: plain,
            FRAME_PER_DELTA: TextSpeechRow(unmerged),
            RESUMABLE_ROW: TextRow(kept),
        }
        floor.cpus = inproc.cpus = placement.pin()
        text, speech, listen = {}, {}, {}
        for size in plan.text:
            progress(f"text N={size:,} ({plan.reps} runs per row)")
            text[size] = await sample(_measures(rows, "text"), size, plan.reps, order=rotation)
        for size in plan.speech:
            progress(f"speech out N={size:,} frames ({plan.reps} runs per row)")
            speech[size] = await sample(_measures(rows, "speech"), size, plan.reps, order=rotation)
        for size in plan.listen:
            progress(f"audio in N={size:,} frames ({plan.reps} runs per row)")
            listen[size] = await sample(_measures(rows, "listen"), size, plan.reps, order=rotation)
        paced = []
        for streams in plan.paced:
            progress(f"audio in at real-time pace: {streams} microphones")
            paced.append(await ours.paced(streams, plan.paced_seconds))
        placement.unpin()
        floor.cpus = inproc.cpus = None
    await inproc.app.aclose()
    idle = []
    for state in IDLE_STATES:
        progress(f"idle connections: {state}, K={', '.join(map(str, plan.idle))}")
        idle += await idle_memory(state, plan.idle)
    return Results(text, speech, listen, paced, idle)


def _measures(rows: dict[str, Any], name: str) -> dict[str, Measure]:
    """The rows that have measurement ``name`` (``text``, ``speech``, ``listen``)."""
    return {row: getattr(obj, name) for row, obj in rows.items() if hasattr(obj, name)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("bench.live", benchmark.__doc__, "a smoke run: small N, few runs")
    cli.numbers(parser, reps="runs per row and size (default 7; quick 2)")
    cli.lists(parser, sizes="text deltas (1000 10000)")
    cli.switches(parser, no_pin="let the scheduler place server and client")
    args = parser.parse_args(argv)
    quick = args.quick
    plan = Plan(
        text=args.sizes or ([200] if quick else [1_000, 10_000]),
        speech=[200] if quick else [3_000],
        listen=[1_000] if quick else [20_000],
        paced=[10] if quick else [25, 100, 200],
        paced_seconds=2.0 if quick else 5.0,
        idle=[20, 50] if quick else [100, 500],
        reps=args.reps or (2 if quick else 7),
    )
    quiet()
    started = time.perf_counter()
    with ServerProcess("adk_asgi") as server:
        progress(f"server up: {server.url}")
        placement = Placement([server], pin=not args.no_pin)
        with logs_on_error({"": server}), asyncio.Runner(loop_factory=loop_factory()) as runner:
            results = runner.run(bench(server.url, plan, placement))
    print(environment(server.info, placement))
    print(report(results, plan.reps, plan.paced_seconds))
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
