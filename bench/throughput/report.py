"""``bench.throughput``'s report: the throughput table, the ratios between rows, time to first
text and the encoding costs."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Final

from bench.harness.agent import DELTA_CHARS
from bench.harness.report import RUN_HEADER, median_of, min_of, paired, run_cells, table, verdict
from bench.harness.rows import SHORT_ANSWER
from bench.throughput.rows import BARE, BARE_SKIPPING, BEFORE, OURS, PEER, Results

TTFT_TARGET_MS: Final = 1.0
"""adk_asgi's time to first text at most this much over the floor's."""


def _throughput_table(results: Results, reps: int) -> list[str]:
    rows = []
    for size, by_row in results.throughput.items():
        for name, runs in by_row.items():
            median = median_of(runs, "seconds")
            units = statistics.median(run.units for run in runs)
            body = statistics.median(run.body_bytes for run in runs)
            rows.append(
                [
                    name,
                    f"{size:,}",
                    *run_cells(runs, size),
                    f"{units / median:,.0f}",
                    f"{body / size:,.0f}" if body else "-",
                    f"{median_of(runs, 'server_cpu') / size * 1e6:,.0f}",
                    f"{median_of(runs, 'client_cpu') / size * 1e6:,.0f}" if body else "-",
                ]
            )
    header = ["row", "N", *RUN_HEADER, "units/s", "B/delta"]
    header += ["srv CPU µs/delta", "client CPU µs/delta"]
    return [
        f"Throughput: N text deltas of {DELTA_CHARS} chars, median of {reps} runs",
        table(header, rows),
        "units: events (floor), SSE chunks (adk_asgi), SSE frames (adk /run_sse, ag-ui-adk)",
        "srv CPU: CPU time of the process that runs the agent (the floor: this one)",
    ]


def _ratios(results: Results) -> list[str]:
    out = [
        "",
        "Ratios, each the median of the per-round ratios (a round runs every row once, back to"
        " back);",
        "  deltas/s: rate of the first row over the second's (in brackets: of the best runs);"
        " cpu: srv CPU per delta",
        "  of the first row over the second's (< 1: the first row spends less)",
    ]
    for size, by_row in results.throughput.items():
        for first, second, target in (
            ("resumable", OURS, 0.95),
            (OURS, "floor", 0.90),
            (OURS, "adk /run_sse", None),
            (OURS, PEER, None),
            (OURS, BEFORE, None),
        ):
            if first not in by_row or second not in by_row:
                continue
            a, b = by_row[first], by_row[second]
            ratio = paired(b, a, "seconds")
            best = min_of(b, "seconds") / min_of(a, "seconds")
            cpu = paired(a, b, "server_cpu")
            judged = (
                "  (information)"
                if target is None
                else f"  target >= {target:.2f}: {verdict(ratio >= target)}"
            )
            name = f"{first} / {second}"
            out.append(
                f"  N={size:>6,}  {name:<30} deltas/s {ratio:.3f} ({best:.3f})  cpu {cpu:.3f}"
                + judged
            )
    return out


def _first_text(results: Results, ttfc_runs: int) -> list[str]:
    first = results.first_chunk
    out = [
        "",
        f"Time to first text delta: a {SHORT_ANSWER}-delta answer, median of {ttfc_runs} runs",
    ]
    rows = [
        [
            name,
            f"{median_of(runs, 'first_delta') * 1e3:.2f}",
            f"{min_of(runs, 'first_delta') * 1e3:.2f}",
            f"{median_of(runs, 'seconds') * 1e3:.2f}",
        ]
        for name, runs in first.items()
    ]
    trip = results.round_trip
    rows.append(
        [
            "HTTP GET round trip, no agent",
            f"{statistics.median(trip) * 1e3:.2f}",
            f"{min(trip) * 1e3:.2f}",
            "-",
        ]
    )
    out.append(table(["row", "first ms med", "first ms min", "whole answer ms med"], rows))
    floor = first["floor"]
    for name in first:
        if name == "floor":
            continue
        extra = (median_of(first[name], "first_delta") - median_of(floor, "first_delta")) * 1e3
        best = (min_of(first[name], "first_delta") - min_of(floor, "first_delta")) * 1e3
        goal = (
            f"  target <= +{TTFT_TARGET_MS:g} ms: {verdict(extra <= TTFT_TARGET_MS)}"
            if name == OURS
            else ""
        )
        out.append(f"  {name:<16} - floor: {extra:+.2f} ms (best runs {best:+.2f} ms){goal}")
    for later, earlier, what in [
        (OURS, BARE_SKIPPING, f"the bridge's own share; {BARE} - floor is the transport's"),
        (BARE, BARE_SKIPPING, "what ADK's failed import on every run costs (AdkApp skips it)"),
    ]:
        if later in first and earlier in first:
            runs, base = first[later], first[earlier]
            extra = (median_of(runs, "first_delta") - median_of(base, "first_delta")) * 1e3
            best = (min_of(runs, "first_delta") - min_of(base, "first_delta")) * 1e3
            out.append(f"  {later} - {earlier}: {extra:+.2f} ms (best runs {best:+.2f} ms): {what}")
    for other in (PEER, BEFORE):
        if other in first:
            ratio = paired(first[OURS], first[other], "first_delta")
            out.append(f"  first text, {OURS} / {other}: {ratio:.3f} (median of per-round ratios)")
    return out


def report(results: Results, reps: int, ttfc_runs: int) -> str:
    out = _throughput_table(results, reps)
    out += _ratios(results)
    out += _first_text(results, ttfc_runs)
    out.append("")
    out.append("Encoding cost per partial event (µs, median of repeated passes over one stream)")
    sizes: Sequence[int] = list(results.encoding)
    labels = list(results.encoding[sizes[0]])
    rows = [
        [label, *(f"{results.encoding[size][label]:.2f}" for size in sizes)] for label in labels
    ]
    out.append(table(["", *(f"N={size:,}" for size in sizes)], rows))
    return "\n".join(out)
