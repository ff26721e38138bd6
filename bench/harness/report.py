"""What every bench prints with: plain-text tables, verdicts, paired ratios and percentiles.

Ratios are medians of per-round ratios: each round runs every row once, back to back, so a slow
phase of a noisy machine hits both runs of a round alike and the per-round ratio is steadier
than the ratio of the medians.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from bench.harness.placement import Placement


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell: the first left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(header)).rstrip()]
    lines.append("  ".join("-" * width for width in widths))
    for row in rows:
        cells = [
            cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def median_of(runs: Sequence[Any], attr: str) -> float:
    """The median of one attribute over runs."""
    return float(statistics.median(getattr(run, attr) for run in runs))


def min_of(runs: Sequence[Any], attr: str) -> float:
    """The smallest value of one attribute over runs (the best run, for times)."""
    return float(min(getattr(run, attr) for run in runs))


def paired(theirs: Sequence[Any], ours: Sequence[Any], attr: str = "seconds") -> float:
    """Median over rounds of theirs/ours, the runs of a round paired by position: for a time,
    the rate of ours relative to theirs."""
    return float(
        statistics.median(
            getattr(t, attr) / getattr(o, attr) for t, o in zip(theirs, ours, strict=True)
        )
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``nan`` for no values)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    """Seconds as milliseconds with one decimal (``-`` for ``nan``)."""
    return "-" if math.isnan(seconds) else f"{seconds * 1e3:,.1f}"


def mib(size: float) -> str:
    """Bytes as MiB with one decimal."""
    return f"{size / 2**20:,.1f}"


def progress(text: str) -> None:
    """A progress line on stderr, so the report on stdout stays clean."""
    print(f"... {text}", file=sys.stderr, flush=True)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (others' work on the machine shows here)."""
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def versions(uvicorn: str, client: str) -> str:
    """The line a report starts with: Python, google-adk, uvicorn and what it picked
    (``uvicorn``), the client's library (``client``) and the machine, so that figures from
    different runs are compared knowingly."""
    return (
        f"python {platform.python_version()}, google-adk {version('google-adk')}, "
        f"uvicorn {version('uvicorn')} ({uvicorn}), {client}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )


def peer_versions() -> str:
    """``, ag-ui-adk X, sse-starlette Y`` (``""`` where the ``bench`` extra is not installed)."""
    try:
        return f", ag-ui-adk {version('ag-ui-adk')}, sse-starlette {version('sse-starlette')}"
    except PackageNotFoundError:
        return ""


def http_environment(info: dict[str, Any], placement: Placement, *, peer: bool = False) -> str:
    """The first lines of a report of SSE chats on one server (``bench.concurrency``,
    ``bench.slow_clients``): versions, what uvicorn picked (``info``: the server's) and where the
    processes ran."""
    pinning = (
        f"server and floor on CPU {sorted(placement.agent_cpus)}, client on CPU "
        f"{sorted(placement.client_cpus)}"
        if placement.enabled
        else "no CPU pinning"
    )
    picked = f"loop={info.get('loop')}, http={info.get('http')}"
    client = f"httpx {version('httpx')}{peer_versions() if peer else ''}"
    return f"{versions(picked, client)}\n{pinning}"


RUN_HEADER = ["ms med", "ms min", "deltas/s", "(best)"]
"""The columns of :func:`run_cells`."""


def run_cells(runs: Sequence[Any], size: int) -> list[str]:
    """Runs of one row answering ``size`` deltas each: their median and best times, and the
    rates those make."""
    median, best = median_of(runs, "seconds"), min_of(runs, "seconds")
    return [
        f"{median * 1e3:,.0f}",
        f"{best * 1e3:,.0f}",
        f"{size / median:,.0f}",
        f"{size / best:,.0f}",
    ]


BATCH_HEADER = ["wall s med", "deltas/s", "srv CPU µs/delta", "srv CPU %", "GC % CPU"]
"""The columns of :func:`batch_cells`."""


def per_delta(batch: Any, attr: str) -> float:
    """A batch's ``attr`` (CPU seconds) per delta of all its streams."""
    return float(getattr(batch, attr)) / float(batch.streams * batch.deltas)


def batch_cells(batches: Sequence[Any], n: int) -> list[str]:
    """One row's batches of ``n`` streams started together (medians over rounds): wall time,
    deltas/s, the server's CPU per delta and as a share of one CPU, and its garbage
    collector's share of that."""
    wall = statistics.median(batch.wall for batch in batches)
    return [
        f"{wall:,.2f}",
        f"{n * batches[0].deltas / wall:,.0f}",
        f"{statistics.median(per_delta(b, 'server_cpu') for b in batches) * 1e6:,.0f}",
        f"{statistics.median(b.server_cpu / b.wall for b in batches) * 100:.0f}",
        f"{statistics.median(b.gc_seconds / b.server_cpu for b in batches) * 100:.0f}",
    ]
