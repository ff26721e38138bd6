"""``bench.concurrency``'s rows and what they measure: the floor in this process
(:class:`ConcurrentFloor`; the servers' rows are ``bench.harness.chats.Chats``), the plan, and
one level's batches (:class:`Level`)."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.apps.app import App
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from bench.harness.agent import APP_NAME, USER_ID, answer_text, make_agent, user_message
from bench.harness.chats import REPLY_DELTAS, Batch, Checked
from bench.harness.placement import on_agent_cpus
from bench.harness.probes import GcClock

OURS: Final = "adk_asgi"
BEFORE: Final = "adk_asgi before"
"""The A/B row (``--before-tree PATH``): the adk_asgi server of another checkout."""
PEER: Final = "ag-ui-adk"
FROZEN: Final = "adk_asgi gc.freeze"
DELTAS: Final = REPLY_DELTAS
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


# --- the plan and the levels ----------------------------------------------------------------


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
