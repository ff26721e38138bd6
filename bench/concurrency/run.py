"""``python -m bench.concurrency``: the servers, the rounds of every level, the report; then
``bench.slow_clients`` in a process of its own."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence

import bench.concurrency as benchmark
from bench.concurrency.report import concurrency_report
from bench.concurrency.rows import (
    BEFORE,
    DELTAS,
    FROZEN,
    LEVELS,
    OURS,
    PEER,
    QUICK_LEVELS,
    WARM_UP,
    ConcurrentFloor,
    Level,
    Plan,
    rounds_for,
)
from bench.harness import cli
from bench.harness.agent import quiet
from bench.harness.chats import AG_UI, Chats
from bench.harness.placement import Placement, loop_factory
from bench.harness.procfs import listen_overflows
from bench.harness.report import http_environment, load_average, progress
from bench.harness.rows import round_order
from bench.harness.servers import ServerProcess, checkout, describe, logs_on_error


async def run_concurrency(
    url: str, plan: Plan, placement: Placement, others: dict[str, Chats] | None = None
) -> list[Level]:
    """``others``: more servers, each a row run in the same rounds (``round_order``)."""
    floor = ConcurrentFloor()
    levels = []
    others = others or {}
    async with contextlib.AsyncExitStack() as stack:
        chats = await stack.enter_async_context(Chats(url))
        references = {}
        for name, row in {OURS: chats, **others}.items():
            if row is not chats:
                await stack.enter_async_context(row)
            await row.gc()  # starts the server's clock
            references[name] = await row.reference(plan.deltas)
        floor.cpus = placement.pin()
        try:
            for n in plan.levels:
                levels.append(await _level(n, plan, floor, chats, others, references))
        finally:
            placement.unpin()
    return levels


async def _level(
    n: int,
    plan: Plan,
    floor: ConcurrentFloor,
    chats: Chats,
    others: dict[str, Chats],
    references: dict[str, list[str]],
) -> Level:
    rounds = plan.rounds[n]
    progress(f"concurrency N={n}: {rounds} rounds of {n} x {plan.deltas} deltas per row")
    level = Level(n, others={name: [] for name in others})
    overflows = listen_overflows()
    for row in [chats, *others.values()]:
        await row.batch(n, WARM_UP, None)
    names = ["floor", OURS, *others]
    for rep in range(rounds):
        for name in round_order(names, rep):
            if name == "floor":
                level.floor.append(await floor.batch(n, plan.deltas))
            elif name == OURS:
                level.ours.append(await chats.batch(n, plan.deltas, references[OURS]))
            else:
                batch = await others[name].batch(n, plan.deltas, references[name])
                level.others[name].append(batch)
    level.listen_overflows = listen_overflows() - overflows
    return level


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser(
        "bench.concurrency", benchmark.__doc__, "a smoke run: small levels, 2 rounds"
    )
    cli.lists(parser, levels="chats at once (1 50 200 500)")
    cli.numbers(parser, deltas=f"text deltas per reply (default {DELTAS})")
    cli.switches(
        parser,
        no_pin="let the scheduler place processes",
        no_slow="skip bench.slow_clients",
        no_peer="leave out the ag-ui-adk row",
        gc_freeze_row="add a row: adk_asgi with gc.freeze() after start-up (BENCH_GC_FREEZE)",
    )
    cli.before_tree(parser)
    args = parser.parse_args(argv)
    levels = args.levels or (QUICK_LEVELS if args.quick else LEVELS)
    deltas = args.deltas or (100 if args.quick else DELTAS)
    plan = Plan(levels, deltas, rounds_for(levels, deltas, quick=args.quick))
    before = checkout(args.before_tree) if args.before_tree else None
    quiet()
    started = time.perf_counter()
    load_before = load_average()
    kinds: dict[str, tuple[str, dict[str, str]]] = {OURS: ("adk_asgi", {})}
    if before:  # the A/B row: another checkout's server, in the same rounds
        kinds[BEFORE] = ("adk_asgi", {})
    if args.gc_freeze_row:
        kinds[FROZEN] = ("adk_asgi", {"BENCH_GC_FREEZE": "1"})
    if not args.no_peer:
        # ADKAgent refuses runs beyond max_concurrent_executions (10 by default): raised to
        # take every burst, as adk_asgi has no such cap.
        kinds[PEER] = ("ag_ui_adk", {"BENCH_AGUI_CONCURRENCY": str(2 * max(levels) + 10)})
    with contextlib.ExitStack() as stack:
        roots = {BEFORE: before}
        servers = {
            name: stack.enter_context(ServerProcess(kind, env=env or None, root=roots.get(name)))
            for name, (kind, env) in kinds.items()
        }
        server = servers[OURS]
        progress("servers up: " + ", ".join(f"{k} {s.url}" for k, s in servers.items()))
        placement = Placement(list(servers.values()), pin=not args.no_pin)
        others = {
            name: Chats(s.url, wire=AG_UI if name == PEER else None)
            for name, s in servers.items()
            if name != OURS
        }
        with logs_on_error(servers), asyncio.Runner(loop_factory=loop_factory()) as runner:
            levels_found = runner.run(run_concurrency(server.url, plan, placement, others))
    load_after = load_average()
    print(http_environment(server.info, placement, peer=not args.no_peer))
    if before:
        print(f"{BEFORE}: served from {describe(before)}")
    print(
        f"load average (1, 5, 15 min) before {load_before}, after the concurrency part {load_after}"
    )
    print(concurrency_report(levels_found, deltas))
    sys.stdout.flush()
    if not args.no_slow:  # its own command, in a process of its own: a benchmark imports no other
        print(flush=True)
        cli.run_module(
            "bench.slow_clients",
            *(["--quick"] if args.quick else []),
            *(["--no-pin"] if args.no_pin else []),
        )
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
