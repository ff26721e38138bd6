"""A benchmark server's probes (``bench.serve``'s ``/__cpu``, ``/__gc``, ``/__census``) as the
client reads them, and the waits built on them: until the server is idle, its CPU share over a
window.

Shared by the benches that measure a server between their requests (``bench.live``,
``bench.live_concurrency``, ``bench.slow_clients``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx


@dataclass(frozen=True, slots=True)
class Census:
    tasks: int
    task_kinds: dict[str, int]
    """Tasks by the qualified name of their coroutine."""
    objects: int
    types: dict[str, int]


async def settle(
    cpu: Callable[[], Awaitable[float]], *, limit: float, interval: float, busy: float
) -> None:
    """Wait until the server whose CPU seconds ``cpu`` reads used under ``busy`` CPU seconds
    over ``interval`` s, at most ``limit`` s: a measurement taken then is not the tail of the
    last one."""
    async with asyncio.timeout(limit):
        before = await cpu()
        while True:
            await asyncio.sleep(interval)
            now = await cpu()
            if now - before < busy:
                return
            before = now


class Probe:
    """The server's probes (``bench.serve``): CPU seconds, GC time, census."""

    def __init__(self, http: httpx.AsyncClient, base_url: str) -> None:
        self.http = http
        self.base_url = base_url

    async def cpu(self) -> float:
        return float((await self.http.get(f"{self.base_url}/__cpu")).text)

    async def gc(self) -> dict[str, float]:
        """The server's garbage collector time (the first call starts the clock)."""
        found: dict[str, float] = (await self.http.get(f"{self.base_url}/__gc")).json()
        return found

    async def census(self) -> Census:
        found = (await self.http.get(f"{self.base_url}/__census")).json()
        return Census(found["tasks"], found["task_kinds"], found["objects"], found["types"])

    async def settle(self, limit: float = 120.0) -> None:
        """Wait until the server is idle (under 2 % of a CPU over 0.5 s), at most ``limit`` s."""
        await settle(self.cpu, limit=limit, interval=0.5, busy=0.01)

    async def cpu_share(self, seconds: float, slice_: float = 1.0) -> tuple[float, float]:
        """The share of one CPU the server uses over ``seconds``, and in its busiest
        ``slice_`` of them."""
        first = before = await self.cpu()
        start = last = time.perf_counter()
        peak = 0.0
        while (now := time.perf_counter()) - start < seconds - 1e-3:
            await asyncio.sleep(min(slice_, seconds - (now - start)))
            cpu, now = await self.cpu(), time.perf_counter()
            peak = max(peak, (cpu - before) / (now - last))
            before, last = cpu, now
        return (before - first) / (last - start), peak
