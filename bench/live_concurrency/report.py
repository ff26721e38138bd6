"""``bench.live_concurrency``'s report: the idle part's steps, the active part's rows, and the
targets of both."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any, Final

from bench.harness.agent import DELTA_CHARS
from bench.harness.report import (
    BATCH_HEADER,
    batch_cells,
    mib,
    ms,
    paired,
    percentile,
    table,
    verdict,
    versions,
)
from bench.live_concurrency.idle import IdleResult
from bench.live_concurrency.rows import CHECKED, FLOOR, OURS, ActiveResult, Checked

TARGET: Final = 0.90
"""Aggregate deltas/s of ``WS /live`` over bare ``run_live`` at the same concurrency: the
single-connection target of ``bench.live``, kept at scale."""
CLIENT_BUSY: Final = 0.80

"""The rows read over a socket, whose every response is checked frame by frame."""


def idle_report(result: IdleResult) -> str:
    base = result.steps[0]
    rows = []
    for step in result.steps:
        count = step.connections
        per = (step.rss - base.rss) / count / 1024 if count else None
        objects = (step.census.objects - base.census.objects) / count if count else None
        rows.append(
            [
                step.name,
                f"{count:,}",
                f"{step.seconds:,.1f}" if step.seconds else "-",
                mib(step.rss),
                f"{(step.rss - base.rss) / 2**20:+,.1f}",
                f"{per:,.1f}" if per is not None else "-",
                f"{step.cpu_share * 100:.2f}" if step.cpu_share is not None else "-",
                f"{step.cpu_peak * 100:.1f}" if step.cpu_peak is not None else "-",
                f"{step.cpu_share / count * 1e6:,.1f}" if step.cpu_share and count else "-",
                f"{step.census.tasks:,}",
                f"{step.census.objects:,}",
                f"{objects:,.0f}" if objects is not None else "-",
            ]
        )
    header = [
        "state",
        "conns",
        "took s",
        "RSS MiB",
        "ΔRSS MiB",
        "KiB/conn",
        "idle CPU %",
        "busiest s %",
        "µs/s per conn",
        "tasks",
        "GC objects",
        "objects/conn",
    ]
    out = [
        f"Idle connections: {result.connections:,} WebSockets with ?chatId= (run_live open) on one"
        f" uvicorn worker, permessage-deflate;\n  a fresh server, warmed by one connection and"
        f" turn; fd limit {result.fd_limit:,}",
        table(header, rows),
        "ΔRSS, KiB/conn, objects/conn: over 'before' (the warmed server, no connection), divided"
        " by the connections;\n  idle CPU: the server's share of one CPU over"
        f" {result.window:g} s once settled, and in its busiest second (uvicorn pings\n  each"
        " connection every 20 s); µs/s per conn: that CPU per second, per connection;\n  tasks:"
        " its event loop's; GC objects: what the garbage collector tracks, after a collection",
    ]
    if result.failed:
        out.append(f"  connections that failed to open (first few): {result.failed[:3]}")
    opened = max((step.connections for step in result.steps), default=0)
    first = result.steps[1] if len(result.steps) > 1 else base
    tasks = _growth(base.census.task_kinds, first.census.task_kinds, first.connections, 12)
    out.append(f"  tasks per connection, {first.name}: {tasks}")
    for step in result.steps[1:]:
        top = _growth(base.census.types, step.census.types, step.connections or opened)
        each = "per connection" if step.connections else "per connection that was open"
        out.append(f"  objects {each}, {step.name}: {top}")
    return "\n".join(out)


def _growth(before: dict[str, int], after: dict[str, int], count: int, top: int = 8) -> str:
    """The ``top`` kinds that grew most from ``before`` to ``after``, per one of ``count``."""
    if not count:
        return "-"
    grown = {
        name: (after.get(name, 0) - before.get(name, 0)) / count
        for name in set(after) | set(before)
    }
    biggest = sorted(grown.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{name.rsplit('.', 1)[-1]} {per:.3g}" for name, per in biggest if per)


def idle_targets(result: IdleResult) -> list[str]:
    base, *rest = result.steps
    opened = rest[0].connections if rest else 0
    closed = rest[-1] if rest else base
    out = [
        f"  idle: {opened:,} of {result.connections:,} connections open at once"
        f"  target {result.connections:,}: {verdict(opened >= result.connections)}",
    ]
    leftover_tasks = closed.census.tasks - base.census.tasks
    leftover = (closed.census.objects - base.census.objects) / max(opened, 1)
    out.append(
        f"  idle: after closing them all, tasks {closed.census.tasks:,} (before"
        f" {base.census.tasks:,}), GC objects {leftover:+,.1f} per connection that was open"
        f"  target no task left: {verdict(leftover_tasks <= 0)}"
    )
    return out


def active_report(result: ActiveResult) -> str:
    rows = []
    for name, batches in result.rows.items():
        ours = name in CHECKED
        checked = [one for batch in batches for one in batch.checked]
        firsts = [one.first for one in checked if one.first is not None]
        streams = sum(batch.streams for batch in batches)
        frames = sum(batch.frames for batch in batches)
        deltas = sum(batch.streams * batch.deltas for batch in batches)
        rows.append(
            [
                name,
                f"{len(batches)}",
                f"{sum(one.complete for one in checked):,}/{streams:,}" if ours else f"{streams:,}",
                f"{sum(one.exact for one in checked):,}" if ours else "-",
                _integrity(checked) if ours else "-",
                *batch_cells(batches, result.n),
                f"{frames / deltas:.2f}" if ours else "-",
                f"{statistics.median(b.client_cpu / b.wall for b in batches) * 100:.0f}"
                if ours
                else "-",
                ms(percentile(firsts, 50)),
                ms(percentile(firsts, 99)),
            ]
        )
    header = [
        "row",
        "rounds",
        "complete",
        "exact",
        "lost/reord/dup",
        *BATCH_HEADER,
        "frames/delta",
        "client CPU %",
        "TTFC p50 ms",
        "TTFC p99 ms",
    ]
    return "\n".join(
        [
            f"Active connections: {result.n} WS /live turns at once, {result.deltas} text deltas"
            f" of {DELTA_CHARS} chars each, one uvicorn worker;\n  floor: {result.n} concurrent"
            " Runner.run_live in this process, on the server's CPU",
            table(header, rows),
            "complete: start, chunks, finish, end, no error; exact: and the text as asked, the"
            " chunk types as in a\n  response read alone, sequence numbers without a gap,"
            " repeat or reversal; srv CPU: of the process\n  running the agents (floor: this one),"
            " per delta and as a share of one CPU; GC: the garbage collector's\n  share of it;"
            " frames/delta: text-delta frames per delta (coalescing); client CPU: of the"
            " WebSocket\n  readers; TTFC: send frame (floor: run start) to the first text delta,"
            " over every turn of every round",
        ]
    )


def _integrity(checked: Sequence[Checked]) -> str:
    lost = sum(one.lost for one in checked) + sum(not one.text_ok for one in checked)
    reordered = sum(one.reordered for one in checked)
    duplicated = sum(one.duplicated for one in checked)
    return f"{lost}/{reordered}/{duplicated}"


def active_targets(result: ActiveResult) -> list[str]:
    out = []
    for name, batches in result.rows.items():
        if name == FLOOR:
            continue
        rates = [f.wall / o.wall for f, o in zip(result.floor, batches, strict=True)]
        ratio = paired(result.floor, batches, "wall")
        cpu = paired(batches, result.floor, "server_cpu")
        each = ", ".join(f"{rate:.3f}" for rate in rates)
        goal = f"  target >= {TARGET:.2f}: {verdict(ratio >= TARGET)}" if name == OURS else ""
        out.append(
            f"  active: deltas/s, {name + ' / floor':<34} {ratio:.3f} ({each}),"
            f" srv CPU per delta {cpu:.3f}{goal}"
        )
    for name in CHECKED:
        checked = [one for batch in result.rows[name] for one in batch.checked]
        whole = all(one.exact for one in checked)
        out.append(
            f"  active: {name} responses exact {sum(one.exact for one in checked):,}/"
            f"{len(checked):,}, chunks lost/reordered/duplicated {_integrity(checked)}"
            f"  target all, 0: {verdict(whole)}"
        )
    client = statistics.median(b.client_cpu / b.wall for b in result.ours)
    if client >= CLIENT_BUSY:
        out.append(f"  (the client used {client * 100:.0f} % of its CPU: it may be the limit)")
    return out


def environment(info: dict[str, Any], pin: bool) -> str:
    pinning = (
        "active: server and floor on one CPU, client on the other; idle: unpinned"
        if pin and len(os.sched_getaffinity(0)) > 1
        else "no CPU pinning"
    )
    picked = f"loop={info.get('loop')}, ws={info.get('ws')}"
    return f"{versions(picked, 'websockets ' + version('websockets'))}\n{pinning}"
