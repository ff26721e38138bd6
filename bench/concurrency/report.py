"""``bench.concurrency``'s report: work and timing per row and level, the targets, the ratios
of adk_asgi to its peer and to another commit's (``--before-tree``), and who limits the
batches."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bench.concurrency.rows import OURS, Level
from bench.harness.agent import DELTA_CHARS
from bench.harness.chats import Batch, Checked
from bench.harness.report import (
    BATCH_HEADER,
    batch_cells,
    ms,
    per_delta,
    percentile,
    table,
    verdict,
)

CPU_TARGET: Final = 1.05
"""Server CPU per delta at most 5 % over the floor's at the same concurrency."""
CLIENT_BUSY: Final = 0.80
"""Share of its CPU above which the client may be what limits a batch."""


def _rows(level: Level) -> list[tuple[str, list[Batch]]]:
    return [("floor", level.floor), (OURS, level.ours), *level.others.items()]


def _against(levels: Sequence[Level]) -> list[str]:
    """adk_asgi against each other row, round by round: deltas/s (their wall over ours), server
    CPU per delta and TTFC p50 (ours over theirs)."""
    out: list[str] = []
    for level in levels:
        for name, theirs in level.others.items():
            pairs = list(zip(level.ours, theirs, strict=True))
            rate = statistics.median(t.wall / o.wall for o, t in pairs)
            cpu = statistics.median(
                per_delta(o, "server_cpu") / per_delta(t, "server_cpu") for o, t in pairs
            )
            firsts = [
                percentile(tally([o]).firsts, 50) / percentile(tally([t]).firsts, 50)
                for o, t in pairs
            ]
            first = statistics.median(firsts)
            out.append(
                f"  N={level.n:>4,}  {OURS} / {name}: deltas/s {rate:.3f}, srv CPU per delta"
                f" {cpu:.3f}, TTFC p50 {first:.3f}  (information)"
            )
    if out:
        out.insert(0, "")
        out.insert(
            1,
            f"{OURS} against the other rows (medians of per-round ratios; deltas/s > 1 and CPU,"
            " TTFC < 1: adk_asgi does better)",
        )
    return out


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
        for name, batches in _rows(level):
            t = tally(batches)
            ours = name != "floor"  # a row read over HTTP
            client = statistics.median(batch.client_cpu / batch.wall for batch in batches)
            delivered = sum(one.deliveries for one in level_checked(batches))
            delta_count = sum(batch.streams * batch.deltas for batch in batches)
            work.append(
                [
                    f"{level.n:,}",
                    name,
                    f"{len(batches)}",
                    f"{t.complete:,}/{t.streams:,}" if ours else f"{t.streams:,}",
                    f"{t.exact:,}" if ours else "-",
                    f"{t.lost}/{t.reordered}/{t.duplicated}" if ours else "-",
                    *batch_cells(batches, level.n),
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
        *BATCH_HEADER,
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
            per_delta(o, "server_cpu") / per_delta(f, "server_cpu")
            for o, f in zip(level.ours, level.floor, strict=True)
        ]
        ratio = statistics.median(ratios)
        each = ", ".join(f"{r:.3f}" for r in ratios)
        out.append(
            f"  N={level.n:>4,}  srv CPU per delta, adk_asgi / floor  {ratio:.3f} ({each})"
            f"  target <= {CPU_TARGET:.2f}: {verdict(ratio <= CPU_TARGET)}"
        )
        for name, batches in _rows(level)[1:]:
            t = tally(batches)
            whole = t.complete == t.exact == t.streams
            whole = whole and not (t.lost or t.reordered or t.duplicated)
            out.append(
                f"  N={level.n:>4,}  {name}: streams complete and exact {t.exact:,}/{t.streams:,},"
                f" chunks lost {t.lost}, reordered {t.reordered}, duplicated {t.duplicated}"
                f"  target all, 0: {verdict(whole)}"
            )
            errors = [error for batch in batches for error in batch.errors]
            if errors:
                out.append(f"           failed requests, first few: {errors[:3]}")
    out += _against(levels)
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
