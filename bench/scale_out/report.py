"""``bench.scale_out``'s report: saturation, one chat at a time, what the workers left behind,
the targets, and the versions of the pieces."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any, Final

from bench.harness.agent import DELTA_CHARS
from bench.harness.report import ms, paired, percentile, table, verdict
from bench.scale_out.load import LOCAL, MEMORY, ONE, SHORT, TWO, Plan, Results, Saturation

IDLE_WINDOW: Final = 5.0
"""Seconds over which the servers' CPU is measured once every chat is over."""
TARGET: Final = 1.8
"""Two workers' deltas/s over one worker's."""


def _cpu_share(runs: Sequence[Saturation], attr: str) -> str:
    """The median share of one CPU that one part of the CPU sample took over the window."""
    return f"{_median([getattr(run.cpu, attr) / run.window for run in runs]) * 100:.0f}"


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def saturation_report(results: Results, plan: Plan) -> str:
    rows = []
    for name, runs in results.saturation.items():
        checked = [one for run in runs for one in run.checked]
        latencies = [latency for run in runs for latency in run.latencies]
        firsts = [
            one.first for run in runs for one in run.checked if one.first is not None
        ]  # every chat, warm-up and drain included
        split = "/".join(
            f"{_median([run.cpu.workers[i] / run.cpu.server for run in runs]) * 100:.0f}"
            for i in range(len(runs[0].cpu.workers))
        )
        others = _median(
            [
                (
                    run.cpu.machine
                    - run.cpu.server
                    - run.cpu.redis
                    - run.cpu.postgres
                    - run.cpu.client
                )
                / run.window
                for run in runs
            ]
        )
        rows.append(
            [
                name,
                f"{len(runs)}",
                f"{sum(len(run.ended) for run in runs):,}",
                f"{sum(one.exact for one in checked):,}/{len(checked):,}",
                f"{sum(len(run.errors) for run in runs)}",
                f"{_median([run.delta_rate for run in runs]):,.0f}",
                f"{_median([run.chats / run.window for run in runs]):,.1f}",
                f"{_median([len(run.ended) / run.window for run in runs]):,.1f}",
                _cpu_share(runs, "server"),
                split,
                f"{_median([run.cpu_per_chat for run in runs]) * 1e3:,.1f}",
                _cpu_share(runs, "redis"),
                _cpu_share(runs, "postgres"),
                _cpu_share(runs, "client"),
                f"{others * 100:.0f}",
                _cpu_share(runs, "steal"),
                f"{percentile(latencies, 50):,.2f}",
                f"{percentile(latencies, 99):,.2f}",
                ms(percentile(firsts, 50)),
            ]
        )
    header = [
        "configuration",
        "rounds",
        "chats ended",
        "exact",
        "errors",
        "deltas/s",
        "chats/s",
        "(ended/s)",
        "srv CPU %",
        "per worker %",
        "srv CPU ms/chat",
        "Redis %",
        "Postgres %",
        "client %",
        "others %",
        "steal %",
        "latency p50 s",
        "p99 s",
        "TTFC p50 ms",
    ]
    return "\n".join(
        [
            f"Saturation: {plan.users} users sending chats of {plan.deltas} deltas of"
            f" {DELTA_CHARS} chars back to back;\n  after {plan.warm_up:g} s of warm-up, counted"
            f" over {plan.window:g} s; medians over rounds, totals and percentiles over all",
            table(header, rows),
            "deltas/s: text deltas that arrived in the window; chats/s: those as chats (deltas/s"
            " / deltas per chat);\n  (ended/s): chats that ended in the window; exact: every"
            " chat of the runs (warm-up and drain too) equal,\n  chunk for chunk, to one read"
            " alone; CPU %: of one CPU over the window (the machine has"
            f" {os.cpu_count()}):\n  srv = uvicorn's supervisor and workers (per worker: each"
            " one's share of that), Redis, Postgres\n  (postmaster and backends), client = this"
            " load generator, others = the rest of the machine's busy time,\n  steal = taken by"
            " the hypervisor; srv CPU ms/chat: srv CPU / chats; latency: request to [DONE] of"
            " the\n  chats that ended in the window; TTFC: request on the wire to its first text"
            " delta, every chat",
        ]
    )


def sequential_report(results: Results) -> str:
    rows = []
    for name, runs in results.one_at_a_time.items():
        rows.append(
            [
                name,
                f"{sum(run.exact for run in runs)}/{len(runs)}",
                ms(_median([run.first for run in runs])),
                ms(_median([run.seconds for run in runs])),
                ms(percentile([run.seconds for run in runs], 90)),
                f"{sum(run.server_cpu for run in runs) / len(runs) * 1e3:,.1f}",
                f"{sum(run.redis_cpu for run in runs) / len(runs) * 1e3:,.2f}",
                f"{sum(run.postgres_cpu for run in runs) / len(runs) * 1e3:,.1f}",
            ]
        )
    header = [
        "configuration",
        "exact",
        "TTFC ms med",
        "chat ms med",
        "chat ms p90",
        "srv CPU ms/chat",
        "Redis CPU ms/chat",
        "Postgres CPU ms/chat",
    ]
    return "\n".join(
        [
            f"One at a time: chats of {SHORT} deltas, one after another, rotating over the"
            f" configurations ({len(next(iter(results.one_at_a_time.values())))} each)",
            table(header, rows),
            "CPU ms/chat: the processes' CPU over all of them / chats (/proc counts in 10 ms"
            " ticks: a mean over many)",
        ]
    )


def left_report(results: Results) -> str:
    rows = []
    for name, phases in results.left.items():
        for left in phases:
            top = sorted(left.tasks.items(), key=lambda item: -item[1])[:6]
            rows.append(
                [
                    name,
                    left.phase,
                    f"{left.chats:,}",
                    f"{left.requests:,}",
                    f"{sum(left.tasks.values()):,}",
                    ", ".join(f"{kind.rsplit('.', 1)[-1]} {n}" for kind, n in top) or "-",
                ]
            )
    header = ["configuration", "after", "chats so far", "requests running", "tasks", "by kind"]
    idle = ", ".join(f"{name} {share * 100:.1f} %" for name, share in results.idle.items())
    return "\n".join(
        [
            "Left behind: the workers' tasks (/__census, every worker) once the chats of a phase"
            " are over, over those\n  after the first chat; requests running: uvicorn request"
            " tasks (run_asgi) that have not returned",
            table(header, rows),
            f"CPU once every chat was over ({IDLE_WINDOW:g} s, share of one CPU): {idle}",
        ]
    )


def targets(results: Results, plan: Plan) -> list[str]:
    sat = results.saturation
    out = []
    if ONE in sat and TWO in sat:
        one, two = sat[ONE], sat[TWO]
        rates = [b.delta_rate / a.delta_rate for a, b in zip(one, two, strict=True)]
        ratio = statistics.median(rates)
        each = ", ".join(f"{rate:.2f}" for rate in rates)
        cpu = paired(two, one, "cpu_per_chat")
        used = _median(
            [
                (run.cpu.server + run.cpu.redis + run.cpu.postgres + run.cpu.client) / run.window
                for run in two
            ]
        )
        out += [
            f"  deltas/s, {TWO} / {ONE}  {ratio:.2f} ({each})"
            f"  target >= {TARGET:.1f}: {verdict(ratio >= TARGET)}",
            f"    srv CPU per chat, {TWO} / {ONE}  {cpu:.2f} (1.00: a worker does the same"
            " work per chat either way)",
            f"    in the {TWO} runs, the server, Redis, Postgres and the load generator used"
            f" {used * 100:.0f} % of one CPU, of the machine's {(os.cpu_count() or 1) * 100} %",
        ]
    if ONE in sat and LOCAL in sat:
        shared, local = sat[ONE], sat[LOCAL]
        cpu = paired(shared, local, "cpu_per_chat")
        redis = _median([run.cpu.redis / run.chats for run in shared])
        latency = statistics.median(
            _median(a.latencies) / _median(b.latencies) for a, b in zip(shared, local, strict=True)
        )
        rate = paired(local, shared, "delta_rate")
        out += [
            f"  Redis locks + stream store over local ones, one worker: srv CPU per chat {cpu:.3f},"
            f" latency at saturation {latency:.3f},",
            f"    deltas/s {1 / rate:.3f}; Redis's own CPU {redis * 1e3:.2f} ms per chat",
        ]
        seq = results.one_at_a_time
        if ONE in seq and LOCAL in seq:
            a, b = seq[ONE], seq[LOCAL]
            extra = _median([r.seconds for r in a]) - _median([r.seconds for r in b])
            first = _median([r.first for r in a]) - _median([r.first for r in b])
            out.append(
                f"    one at a time: chat {extra * 1e3:+.2f} ms, first delta {first * 1e3:+.2f} ms"
                " (medians)"
            )
    if LOCAL in sat and MEMORY in sat:
        pg, memory = sat[LOCAL], sat[MEMORY]
        cpu = paired(pg, memory, "cpu_per_chat")
        rate = paired(memory, pg, "delta_rate")
        out.append(
            f"  PostgreSQL sessions over in-memory ones, one worker: srv CPU per chat {cpu:.3f},"
            f" deltas/s {1 / rate:.3f}"
        )
    whole = all(one.exact for runs in sat.values() for run in runs for one in run.checked)
    errors = sum(len(run.errors) for runs in sat.values() for run in runs)
    out.append(
        f"  every chat complete and exact, {errors} failed requests  target all, 0:"
        f" {verdict(whole and not errors)}"
    )
    for name, runs in sat.items():
        failed = [error for run in runs for error in run.errors]
        if failed:
            out.append(f"    {name}: failed requests, first few: {failed[:3]}")
    for name, phases in results.left.items():
        left = phases[-1]
        out.append(
            f"  {name}: requests still running on the server once all {left.chats:,} chats"
            f" were over: {left.requests:,}  target 0: {verdict(not left.requests)}"
        )
    return out


def environment(results: Results, plan: Plan) -> str:
    pool = (
        "RedisChatLocks(url), RedisStreamStore(url): each builds its own client"
        if plan.redis_pool == "url"
        else "RedisChatLocks and RedisStreamStore on one redis.asyncio.Redis per worker,"
        " BlockingConnectionPool(max_connections=100)"
    )
    return (
        f"python {platform.python_version()}, google-adk {version('google-adk')}, "
        f"uvicorn {version('uvicorn')}, httpx {version('httpx')}, redis-py {version('redis')},"
        f" asyncpg {version('asyncpg')}, SQLAlchemy {version('sqlalchemy')},\n"
        f"{results.postgres_version}, {results.redis_version}; {platform.machine()},"
        f" {os.cpu_count()} CPUs, nothing pinned\n{pool}"
    )


def versions(postgres: Any) -> tuple[str, str]:
    pg = subprocess.run(
        [str(postgres.bin_dir / "postgres"), "--version"], capture_output=True, text=True
    ).stdout.strip()
    redis = subprocess.run(
        ["/usr/bin/redis-server", "--version"], capture_output=True, text=True
    ).stdout.split()
    return pg, " ".join(redis[:3])
