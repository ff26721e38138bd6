"""Many chats at once on one uvicorn worker: CPU per delta against the floor, chunk integrity,
time to first chunk and the gaps between deliveries; then slow readers (``bench.slow_clients``).

``python -m bench.concurrency [--quick] [--levels N ...] [--deltas D] [--no-pin] [--no-slow]
[--no-peer] [--no-before] [--before-tree PATH] [--gc-freeze-row]``

At each level, N chats start at once, each asking the scripted agent (``bench.harness.agent``) for a
reply of D text deltas (300; 8 characters each), in rows run in turns (their order changing
each round, ``bench.harness.rows.round_order``):

* ``floor``: N concurrent ``Runner.run_async`` calls in this process (SSE streaming, in-memory
  sessions created before the clock starts), run on the server's CPU, as ``bench.throughput``
  does for one.
* ``adk_asgi``: N concurrent ``POST /agent/chat`` on ONE uvicorn worker (``bench.serve
  adk_asgi``, pinned to one CPU), read in this process on the other CPU, by one
  ``httpx.AsyncClient`` per chat (each user has a browser of their own; see :class:`Chats`).
* ``adk_asgi gc.freeze`` (``--gc-freeze-row``): the same server with ``gc.freeze()`` after
  start-up (``BENCH_GC_FREEZE=1``), as docs/deployment.md recommends.
* ``adk_asgi before``: the same with the SSE writer as it was before the first words after a
  pause went out at once (``bench.writer_before``), for the A/B of that change; with
  ``--before-tree PATH``, the app of another checkout (a ``git worktree`` of an earlier
  commit): an A/B of two commits in the same rounds.
* ``ag-ui-adk``: the AG-UI protocol's ADK middleware (``bench.harness.peers``) on its own worker,
  same uvicorn settings and client; its ``max_concurrent_executions`` (10 by default) is raised
  above the largest level, or it would refuse most of each burst with a ``RUN_ERROR``.

Every stream is checked chunk by chunk against the stream of the same reply read alone (the
message id aside, the scripted agent's answer is deterministic): a lost, duplicated or reordered
chunk, an ``error`` chunk or a stream without ``[DONE]`` is counted. Server CPU per delta comes
from the server's ``/__cpu`` probe around each batch, the client's from this process; a client
near 100 % of its CPU, or slow to send its burst, would be the bottleneck, and the report says
so. The garbage collector's time comes from ``/__gc`` (the floor: the same clock here).

Time to first chunk (TTFC) runs from the request on the wire (the floor: the run's start) to
its first text delta.
A *gap* is the time between two consecutive deliveries of one stream (reads that brought at
least one whole chunk; floor: events, but not those taken from ADK's queue in one go), from its
first text delta to its end: how long the user looks at a stream that does not move. Levels are
bursts: the N requests are sent together. Percentiles are over every stream of every round.

Then ``bench.slow_clients`` (unless ``--no-slow``). See ``docs/internals/performance-notes.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from google.adk.agents._streaming_mode import StreamingMode  # run_config re-exports it implicitly
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from bench.concurrency_report import (
    BEFORE,
    FROZEN,
    OURS,
    PEER,
    concurrency_report,
    environment,
)
from bench.harness import cli
from bench.harness.agent import APP_NAME, USER_ID, answer_text, make_agent, quiet, user_message
from bench.harness.chats import (
    AG_UI,
    Batch,
    Chats,
    Checked,
)
from bench.harness.placement import Placement, loop_factory, on_agent_cpus
from bench.harness.probes import GcClock
from bench.harness.procfs import listen_overflows
from bench.harness.report import load_average, progress
from bench.harness.rows import round_order
from bench.harness.servers import ServerProcess, logs_on_error

DELTAS: Final = 300
"""Text deltas per reply (2,400 characters: a few paragraphs)."""
LEVELS: Final = (1, 50, 200, 500)
QUICK_LEVELS: Final = (1, 10, 50)
WARM_UP: Final = 5
"""Deltas of the untimed warm-up replies."""
SAME_BURST: Final = 1e-4
"""Floor events closer than this were taken from ADK's queue in one go (making one costs
~300 µs): not a gap, as chunks that arrive in one read are not."""


# --- the floor ------------------------------------------------------------------------------


class ConcurrentFloor:
    """N concurrent bare ``run_async`` calls in this process: what ADK alone costs at that
    concurrency, on the server's CPU (``cpus``) with a warm-up run there first."""

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.sessions = InMemorySessionService()
        self.runner = Runner(
            app=App(name=APP_NAME, root_agent=make_agent()), session_service=self.sessions
        )
        self.run_config = RunConfig(streaming_mode=StreamingMode.SSE)
        self.gc = GcClock()
        self.gc.install()

    async def batch(self, n: int, deltas: int) -> Batch:
        return await on_agent_cpus(
            self.cpus, lambda: self._batch(1, WARM_UP), lambda: self._batch(n, deltas)
        )

    async def _batch(self, n: int, deltas: int) -> Batch:
        sessions = [
            await self.sessions.create_session(app_name=APP_NAME, user_id=USER_ID) for _ in range(n)
        ]
        gc_before = self.gc.read()
        cpu = time.process_time()
        start = time.perf_counter()
        runs = await asyncio.gather(*(self._run(session.id, deltas) for session in sessions))
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        gc_after = self.gc.read()
        gc_seconds = gc_after["seconds"] - gc_before["seconds"]
        return Batch(n, deltas, wall, cpu, 0.0, runs, [], 0.0, gc_seconds, gc_after["longest"])

    async def _run(self, session_id: str, deltas: int) -> Checked:
        started = time.perf_counter()
        times: list[float] = []
        text: list[str] = []
        async for event in self.runner.run_async(
            user_id=USER_ID,
            session_id=session_id,
            new_message=user_message(deltas),
            run_config=self.run_config,
        ):
            if event.partial and event.content and event.content.parts:
                text.append("".join(part.text or "" for part in event.content.parts))
            if text:  # from the first text delta on
                times.append(time.perf_counter())
        if "".join(text) != answer_text(deltas) or len(text) != deltas:
            raise RuntimeError(f"floor: {len(text)} partial events, expected {deltas}")
        gaps = [b - a for a, b in itertools.pairwise(times)]
        bursts = [gap for gap in gaps if gap >= SAME_BURST]
        return Checked(True, True, 0, 0, 0, times[0] - started, bursts)


# --- the run --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    levels: Sequence[int]
    deltas: int
    rounds: dict[int, int]
    """Rounds per level: each runs the floor batch and the server batch once, in turns."""


@dataclass
class Level:
    n: int
    floor: list[Batch] = field(default_factory=list)
    ours: list[Batch] = field(default_factory=list)
    others: dict[str, list[Batch]] = field(default_factory=dict)
    """The other servers' rows (``adk_asgi before``, ``ag-ui-adk``), by name."""
    listen_overflows: int = 0
    """The kernel's TcpExt ListenOverflows during the level (connections that had to retry)."""


def rounds_for(levels: Sequence[int], deltas: int, *, quick: bool) -> dict[int, int]:
    """More rounds where a round is short, so every level streams about as many deltas."""
    if quick:
        return dict.fromkeys(levels, 2)
    return {n: max(3, min(15, math.ceil(30_000 / (n * deltas)))) for n in levels}


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
    parser = cli.parser("bench.concurrency", __doc__, "a smoke run: small levels, 2 rounds")
    cli.lists(parser, levels="chats at once (1 50 200 500)")
    cli.numbers(parser, deltas=f"text deltas per reply (default {DELTAS})")
    cli.switches(
        parser,
        no_pin="let the scheduler place processes",
        no_slow="skip bench.slow_clients",
        no_peer="leave out the ag-ui-adk row",
        no_before="leave out the A/B row",
        gc_freeze_row="add a row: adk_asgi with gc.freeze() after start-up (BENCH_GC_FREEZE)",
    )
    cli.numbers(parser, str, before_tree="serve the A/B row from this checkout of adk-asgi")
    args = parser.parse_args(argv)
    levels = args.levels or (QUICK_LEVELS if args.quick else LEVELS)
    deltas = args.deltas or (100 if args.quick else DELTAS)
    plan = Plan(levels, deltas, rounds_for(levels, deltas, quick=args.quick))
    quiet()
    started = time.perf_counter()
    load_before = load_average()
    kinds: dict[str, tuple[str, dict[str, str]]] = {OURS: ("adk_asgi", {})}
    if args.before_tree:  # the A/B row: another commit's app, in the same rounds
        kinds[BEFORE] = ("adk_asgi", {})
    elif not args.no_before:
        kinds[BEFORE] = ("adk_asgi", {"BENCH_WRITER": "before"})
    if args.gc_freeze_row:
        kinds[FROZEN] = ("adk_asgi", {"BENCH_GC_FREEZE": "1"})
    if not args.no_peer:
        # ADKAgent refuses runs beyond max_concurrent_executions (10 by default): raised to
        # take every burst, as adk_asgi has no such cap.
        kinds[PEER] = ("ag_ui_adk", {"BENCH_AGUI_CONCURRENCY": str(2 * max(levels) + 10)})
    with contextlib.ExitStack() as stack:
        root = {BEFORE: os.path.abspath(args.before_tree)} if args.before_tree else {}
        servers = {
            name: stack.enter_context(ServerProcess(kind, env=env or None, root=root.get(name)))
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
    print(environment(server.info, placement, peer=not args.no_peer))
    print(
        f"load average (1, 5, 15 min) before {load_before}, after the concurrency part {load_after}"
    )
    print(concurrency_report(levels_found, deltas))
    sys.stdout.flush()
    if not args.no_slow:
        from bench.slow_clients import run as slow_clients  # it imports this module

        text, _ = slow_clients(quick=args.quick, pin=not args.no_pin)
        print(f"\nload average after the slow readers {load_average()}")
        print(text)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
