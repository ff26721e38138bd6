"""Where a bench's processes run, and the event loop its client runs on.

Shared by every bench that compares rows: the agent's CPU is the same for all rows (the servers
and the in-process floor), the client runs on the others, so a row's client work never takes CPU
from the server it reads.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from bench.harness.servers import ServerProcess

_T = TypeVar("_T")


class Placement:
    """Where the processes run.

    Throughput: the last CPU runs the agent in every row (both servers, and the floor, see
    :class:`Floor`), the other CPUs the client, so the client's work on a long stream never
    takes CPU from the server it reads. Time to first chunk: no pinning; a short request is
    measured as the scheduler places it.
    """

    def __init__(self, servers: Sequence[ServerProcess], *, pin: bool) -> None:
        self.servers = servers
        self.all_cpus = os.sched_getaffinity(0)
        cpus = sorted(self.all_cpus)
        self.enabled = pin and len(cpus) > 1
        self.agent_cpus = {cpus[-1]}
        self.client_cpus = set(cpus[:-1])

    def pin(self) -> set[int] | None:
        """Pin for throughput; the CPUs the floor must move to (``None``: stay)."""
        if not self.enabled:
            return None
        for server in self.servers:
            server.set_cpus(self.agent_cpus)
        os.sched_setaffinity(0, self.client_cpus)
        return self.agent_cpus

    def unpin(self) -> None:
        for server in self.servers:
            server.set_cpus(self.all_cpus)
        os.sched_setaffinity(0, self.all_cpus)

    def describe(self) -> str:
        if not self.enabled:
            return "no CPU pinning"
        return (
            f"throughput with the agent (servers, floor) on CPU {sorted(self.agent_cpus)} and "
            f"the client on CPU {sorted(self.client_cpus)}; first chunk unpinned"
        )


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The loop uvicorn's ``loop="auto"`` picks, so the floor runs on the servers' loop."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def on_agent_cpus(
    cpus: set[int] | None, warm: Callable[[], Awaitable[object]], work: Callable[[], Awaitable[_T]]
) -> _T:
    """``work()`` in this process on ``cpus`` (the servers' CPU; ``None``: where it is), after
    an untimed ``warm()`` there that warms that CPU's caches, as a server's are warm; then this
    process moves back. How an in-process row (a floor) is measured like the servers."""
    home = os.sched_getaffinity(0)
    if cpus:
        os.sched_setaffinity(0, cpus)
    try:
        await warm()
        return await work()
    finally:
        os.sched_setaffinity(0, home)
