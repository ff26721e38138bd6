"""``python -m bench.sse_layers``: the rounds of every row, and the report."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

import bench.sse_layers as benchmark
from bench.harness.agent import quiet
from bench.harness.placement import loop_factory
from bench.harness.probes import GcClock
from bench.harness.report import load_average, progress
from bench.sse_layers.report import report
from bench.sse_layers.rows import Batch, Layers, batch


async def run(chats: int, deltas: int, rounds: int) -> dict[str, list[Batch]]:
    layers, clock = Layers(), GcClock()
    clock.install()
    names = list(layers.rows)
    for chat in layers.rows.values():  # warm-up: ADK's lazy imports, the first session
        await chat(5)
    found: dict[str, list[Batch]] = {name: [] for name in names}
    for number in range(rounds):
        progress(f"round {number + 1} of {rounds}")
        order = names[number % len(names) :] + names[: number % len(names)]
        for name in order:
            found[name].append(await batch(layers.rows[name], chats, deltas, clock))
    await layers.app.aclose()
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.sse_layers", description=benchmark.__doc__
    )
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--deltas", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10 chats, 2 rounds")
    args = parser.parse_args(argv)
    chats, rounds = (10, 2) if args.quick else (args.chats, args.rounds)
    quiet()
    print(f"load average (1, 5, 15 min) before {load_average()}")
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        found = runner.run(run(chats, args.deltas, rounds))
    print(report(found, chats, args.deltas))
    print(f"load average (1, 5, 15 min) after {load_average()}")
