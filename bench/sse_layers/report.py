"""``bench.sse_layers``'s report: CPU per delta per row, the garbage collector's share, the step
over the row above and the ratio to the floor."""

from __future__ import annotations

import statistics

from bench.harness.report import table
from bench.sse_layers.rows import Batch


def report(found: dict[str, list[Batch]], chats: int, deltas: int) -> str:
    per_delta = 1e6 / (chats * deltas)
    floor = found["floor"]
    rows, above = [], None
    for name, batches in found.items():
        cpu = [b.cpu * per_delta for b in batches]
        gc_cpu = [b.gc * per_delta for b in batches]
        step = "-"
        if above is not None:
            steps = [
                (a.cpu - b.cpu) * per_delta for a, b in zip(batches, found[above], strict=True)
            ]
            step = f"{statistics.median(steps):+.1f}"
        ratio = statistics.median(a.cpu / b.cpu for a, b in zip(batches, floor, strict=True))
        rows.append(
            [
                name,
                f"{statistics.median(cpu):.1f}",
                f"{statistics.median(c - g for c, g in zip(cpu, gc_cpu, strict=True)):.1f}",
                f"{statistics.median(gc_cpu):.1f}",
                f"{statistics.median(b.collections for b in batches):.0f}",
                step,
                f"{ratio:.3f}",
            ]
        )
        above = name
    header = ["row", "CPU µs/delta", "without GC", "GC", "collections", "step", "/ floor"]
    return (
        f"{chats} chats at once, {deltas} text deltas each, in this process; medians over "
        f"{len(floor)} rounds\n"
        + table(header, rows)
        + "\nstep: the median per-round difference to the row above; / floor: the median"
        " per-round ratio of CPU\n  collections: the garbage collector's, per batch"
    )
