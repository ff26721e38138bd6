"""``python -m bench.scale_out``: PostgreSQL and Redis, a server per configuration, one chat at a
time, the saturation rounds, what the workers left, and the report."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import bench.scale_out as benchmark
from bench.harness import cli
from bench.harness.agent import quiet
from bench.harness.chats import Chats
from bench.harness.placement import loop_factory
from bench.harness.procfs import find_process
from bench.harness.report import load_average, progress
from bench.harness.rows import rotation
from bench.harness.serve import raise_fd_limit
from bench.harness.servers import ServerProcess
from bench.scale_out.load import (
    CONFIGS,
    SHORT,
    Config,
    Left,
    Pids,
    Plan,
    Results,
    census,
    one_chat,
    saturate,
    task_kinds,
)
from bench.scale_out.report import (
    IDLE_WINDOW,
    environment,
    left_report,
    saturation_report,
    sequential_report,
    targets,
    versions,
)
from tests.backing_services import postgres_server, redis_server

USERS: Final = 100
DELTAS: Final = 100
"""Text deltas per chat (800 characters: a short answer), so the per-chat costs of the
shared pieces show next to the per-delta ones."""
ROUNDS: Final = 3
WARM_UP: Final = 5.0
WINDOW: Final = 20.0
SEQUENTIAL: Final = 30
"""Short chats per configuration, one at a time."""


@dataclass
class _Served:
    config: Config
    server: ServerProcess
    chats: Chats
    pids: Pids
    reference: list[str] = field(default_factory=list)
    short_reference: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _servers(plan: Plan, postgres: Any, redis_url: str) -> Iterator[list[ServerProcess]]:
    with contextlib.ExitStack() as stack:
        servers = []
        for index, config in enumerate(plan.configs):
            redis_db = f"{redis_url.rsplit('/', 1)[0]}/{index + 1}"
            env = {
                "BENCH_WORKERS": str(config.workers),
                "BENCH_SESSIONS": postgres.create_database(f"scale_{index}").url
                if config.postgres
                else "memory",
                "BENCH_LOCKS": redis_db if config.redis else "memory",
                "BENCH_STREAMS": redis_db if config.redis else "memory",
                "BENCH_REDIS_POOL": plan.redis_pool,
            }
            progress(f"starting {config.name}")
            servers.append(stack.enter_context(ServerProcess("adk_asgi_shared", env=env)))
        yield servers


async def bench(plan: Plan, postgres: Any, redis_url: str) -> Results:
    results = Results()
    redis_port = redis_url.rsplit(":", 1)[1].split("/")[0]
    redis_pid = find_process("redis-server", f":{redis_port}")
    postgres_pid = find_process("/postgres", "-p", str(postgres.port))
    with _servers(plan, postgres, redis_url) as servers:
        served = []
        async with contextlib.AsyncExitStack() as stack:
            for config, server in zip(plan.configs, servers, strict=True):
                info = server.info
                pids = Pids(info["supervisor"], tuple(info["workers"]), redis_pid, postgres_pid)
                chats = await stack.enter_async_context(Chats(server.url))
                served.append(_Served(config, server, chats, pids))
            try:
                for one in served:
                    one.reference = await one.chats.reference(plan.deltas)
                    one.short_reference = await one.chats.reference(SHORT)
                await _run(plan, served, results)
                for one in served:
                    if any(run.errors for run in results.saturation[one.config.name]):
                        results.logs[one.config.name] = one.server.log_tail(3000)
            except Exception:
                for one in served:
                    print(
                        f"--- {one.config.name} log ---\n{one.server.log_tail()}", file=sys.stderr
                    )
                raise
    return results


async def _run(plan: Plan, served: list[_Served], results: Results) -> None:
    progress(f"one at a time: {plan.sequential} chats of {SHORT} deltas per configuration")
    baseline = {}
    for one in served:
        results.one_at_a_time[one.config.name] = []
        await one.chats.chat(0, SHORT)  # warm
        await asyncio.sleep(0.5)  # its stream and lock let go
        baseline[one.config.name] = task_kinds(await census(one.server.url, one.config.workers))
    for _ in range(plan.sequential):
        for one in served:
            found = await one_chat(one.chats, one.pids, one.short_reference)
            results.one_at_a_time[one.config.name].append(found)
    await asyncio.sleep(2.0)
    await _left(served, results, baseline, "one at a time")
    results.saturation = {one.config.name: [] for one in served}
    for rep in range(plan.rounds):
        for one in rotation(served, rep):
            progress(
                f"round {rep + 1}/{plan.rounds}: {one.config.name}, {plan.users} users,"
                f" {plan.warm_up:g} + {plan.window:g} s"
            )
            window = await saturate(one.config, one.chats, one.pids, one.reference, plan)
            results.saturation[one.config.name].append(window)
    progress("what the servers still run once every chat is over")
    await asyncio.sleep(5.0)
    await _left(served, results, baseline, "saturation")
    before, start = [one.pids.sample() for one in served], time.perf_counter()
    await asyncio.sleep(IDLE_WINDOW)
    after, seconds = [one.pids.sample() for one in served], time.perf_counter() - start
    for one, a, b in zip(served, before, after, strict=True):
        results.idle[one.config.name] = (b.server - a.server) / seconds
    results.idle["Redis"] = (after[0].redis - before[0].redis) / seconds


async def _left(
    served: list[_Served], results: Results, baseline: dict[str, Counter[str]], phase: str
) -> None:
    for one in served:
        name = one.config.name
        now = task_kinds(await census(one.server.url, one.config.workers))
        grown = {kind: n - baseline[name][kind] for kind, n in now.items()}
        chats = len(results.one_at_a_time[name])
        chats += sum(len(run.checked) for run in results.saturation.get(name, []))
        found = Left(phase, chats, {kind: n for kind, n in grown.items() if n > 0})
        results.left.setdefault(name, []).append(found)


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("bench.scale_out", benchmark.__doc__, "a smoke run: 20 users, short")
    cli.numbers(
        parser,
        users=f"concurrent users (default {USERS})",
        deltas=f"deltas per chat (default {DELTAS})",
        rounds=f"rounds (default {ROUNDS})",
    )
    cli.numbers(parser, float, window=f"seconds counted (default {WINDOW:g})")
    parser.add_argument(
        "--configs", nargs="+", choices=list(CONFIGS), help="configurations (default: all)"
    )
    parser.add_argument(
        "--redis-pool",
        choices=["url", "shared"],
        default="url",
        help="url: RedisChatLocks(url) and RedisStreamStore(url), as the docs show (default);"
        " shared: one client per worker on a BlockingConnectionPool(100) for both",
    )
    parser.add_argument(
        "--redis-from-url", action="store_true", help="the same as --redis-pool url"
    )
    args = parser.parse_args(argv)
    quick = args.quick
    plan = Plan(
        users=args.users or (20 if quick else USERS),
        deltas=args.deltas or DELTAS,
        rounds=args.rounds or (1 if quick else ROUNDS),
        warm_up=1.0 if quick else WARM_UP,
        window=args.window or (3.0 if quick else WINDOW),
        sequential=5 if quick else SEQUENTIAL,
        configs=[CONFIGS[key] for key in args.configs or CONFIGS],
        redis_pool="url" if args.redis_from_url else args.redis_pool,
    )
    quiet()
    raise_fd_limit()
    started = time.perf_counter()
    load_before = load_average()
    with postgres_server() as postgres, redis_server() as redis_url:
        progress(f"PostgreSQL on port {postgres.port}, Redis at {redis_url}")
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            results = runner.run(bench(plan, postgres, redis_url))
        results.postgres_version, results.redis_version = versions(postgres)
    print(environment(results, plan))
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_average()}")
    print(saturation_report(results, plan))
    print()
    print(sequential_report(results))
    print()
    print(left_report(results))
    print("\nTargets (ratios: median of the per-round ratios; in brackets each round's)")
    for line in targets(results, plan):
        print(line)
    for name, log in results.logs.items():
        print(f"--- {name}: the end of the server log ---\n{log}", file=sys.stderr)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
