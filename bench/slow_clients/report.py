"""``bench.slow_clients``'s report: each scenario's memory, gaps and send queue, and the
targets (a slow reader's memory bounded, the other chats' gaps unchanged)."""

from __future__ import annotations

from typing import Final

from adk_asgi.sse.writer import MAX_BUFFER
from bench.harness.report import mib, ms, percentile, table, verdict
from bench.slow_clients.rows import RCVBUF, SNDBUF, Outcome, Plan

MEMORY_TARGET: Final = 2.0
"""MiB a slow reader may add to the peak over the same answer read at full speed: more than
the buffers that should hold it come to (64 KiB each in uvicorn and adk_asgi), for noise."""
SLOPE_TARGET: Final = 0.1
"""MiB per 1,000 deltas of answer that a paused reader may add to the peak: ~0 if bounded."""
GAP_TARGET: Final = 1.10
"""The other chats' p99 gap with slow readers, over the same with the long answers read at
full speed."""


def report(plan: Plan, outcomes: dict[str, Outcome]) -> str:
    rows = []
    for scenario in [*plan.under_load, *plan.alone]:
        o = outcomes[scenario.name]
        exact = sum(one.exact for one in o.chats)
        reads = ", ".join(
            f"{read.reader.label}: {read.received / 1024:,.0f} KiB{' (all)' if read.done else ''}"
            for read in o.reads
        )
        rows.append(
            [
                scenario.name,
                f"{exact}/{len(o.chats)}" if o.chats else "-",
                ms(percentile(o.gaps, 50)),
                ms(percentile(o.gaps, 99)),
                mib(o.rss_before),
                mib(o.peak),
                f"{o.growth / 2**20:+,.1f}",
                mib(o.end),
                f"{o.send_queue / 1024:,.0f}",
                f"{o.server_cpu:,.1f}",
                f"{o.gc_seconds / o.server_cpu * 100:.0f}",
                ms(o.gc_longest),
                f"{o.wall:,.1f}",
                reads or "-",
            ]
        )
    header = [
        "scenario",
        "chats exact",
        "gap p50 ms",
        "gap p99 ms",
        "RSS before MiB",
        "peak MiB",
        "growth",
        "end MiB",
        "send-Q KiB",
        "srv CPU s",
        "GC %",
        "GC max ms",
        "wall s",
        "long answers: taken by the reader",
    ]
    cap = f"SO_SNDBUF {SNDBUF // 1024} KiB (doubled by the kernel)"
    out = [
        "Slow readers: a fresh server per scenario, warmed by the same work at full speed;"
        f" server connections with {cap}\n  unless said; readers' SO_RCVBUF {RCVBUF} B",
        table(header, rows),
        f"chats exact: normal chats ({plan.deltas} deltas) complete and equal to the reply read"
        " alone; gaps: theirs (as in\n  Concurrency); growth: peak - before; send-Q: most bytes"
        " unsent in the kernel for the server's connections\n  at once; GC: the garbage collector's"
        " share of srv CPU and its longest pause; long answers: bytes the\n  reader took before"
        " the answer ended (all) or it left",
        "",
        "Targets",
    ]
    alone = [outcomes[s.name] for s in plan.alone]
    full = {o.scenario.readers[0].deltas: o for o in alone if o.scenario.name.startswith("full")}
    extras: dict[int, float] = {}
    for o in alone:
        size = o.scenario.readers[0].deltas
        if o.scenario.name.startswith("full") or size not in full:
            continue
        extra = (o.growth - full[size].growth) / 2**20
        if o.scenario.sndbuf and o.scenario.readers[0].pause:
            extras[size] = extra
        out.append(
            f"  {o.scenario.name}: peak {extra:+,.1f} MiB over the same answer at full speed"
            f"  target <= +{MEMORY_TARGET:g} MiB (bounded): {verdict(extra <= MEMORY_TARGET)}"
        )
    if len(extras) >= 2:
        a, b = min(extras), max(extras)
        slope = (extras[b] - extras[a]) / (b - a) * 1000
        out.append(
            f"  paused reader, that extra per 1,000 deltas of answer ({a:,} -> {b:,}):"
            f" {slope:,.2f} MiB  target <= {SLOPE_TARGET:g} (does not grow with the answer):"
            f" {verdict(slope <= SLOPE_TARGET)}"
        )
    loaded = [outcomes[s.name] for s in plan.under_load]
    base, slow = loaded[0], loaded[-1]
    control = loaded[1] if len(loaded) > 2 else base
    p99 = {o.scenario.name: percentile(o.gaps, 99) for o in loaded}
    with_slow = p99[slow.scenario.name]
    ratio = with_slow / p99[control.scenario.name]
    out.append(
        f"  other chats' p99 gap, with slow readers / {control.scenario.name}: {ratio:.3f}"
        f" ({ms(with_slow)} / {ms(p99[control.scenario.name])} ms)"
        f"  target <= {GAP_TARGET:.2f}: {verdict(ratio <= GAP_TARGET)}"
    )
    if control is not base:
        plain = with_slow / p99[base.scenario.name]
        out.append(
            f"  other chats' p99 gap, with slow readers / {base.scenario.name}: {plain:.3f}"
            f" ({ms(with_slow)} / {ms(p99[base.scenario.name])} ms)"
        )
    extra = (slow.growth - control.growth) / 2**20
    out.append(
        f"  under load, peak with slow readers {extra:+,.1f} MiB over {control.scenario.name}"
        f" (no target: what the\n    slow readers' answers reached in that time fits in the"
        f" buffers, see send-Q; peaks of identical runs differ by a few MiB)"
    )
    whole = all(one.exact for o in loaded for one in o.chats)
    out.append(f"  normal chats complete and exact in every scenario: {verdict(whole)}")
    sources = ", ".join(sorted({o.peak_source for o in outcomes.values()}))
    out.append(
        f"(adk_asgi's own buffer per response: MAX_BUFFER = {MAX_BUFFER // 1024} KiB;"
        f" peaks from {sources})"
    )
    return "\n".join(out)
