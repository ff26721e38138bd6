"""A benchmark server's probes (``bench.serve``'s ``/__cpu``, ``/__gc``, ``/__census``) as the
client reads them, the clocks read around a measurement (:class:`Clocks`), and the waits built
on them: until the server is idle, its CPU share over a window.

Shared by the benches that measure a server between their requests (``bench.live``,
``bench.live_concurrency``, ``bench.slow_clients``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType

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


class Clocks:
    """``async with Clocks(probe.cpu) as clocks:`` around one measurement, then
    ``clocks.seconds``, ``clocks.client_cpu`` (this process) and ``clocks.server_cpu`` (read from
    ``cpu``, the server's ``/__cpu``); with ``gc`` (its ``/__gc``), ``gc_seconds`` and
    ``gc_longest`` too. The server's clocks are read outside the wall clock and this process's
    CPU, so a probe's own request is not charged to the measurement; ``clocks.start`` is when
    the wall clock started, for times within it."""

    def __init__(
        self,
        cpu: Callable[[], Awaitable[float]],
        gc: Callable[[], Awaitable[dict[str, float]]] | None = None,
    ) -> None:
        self._cpu = cpu
        self._gc = gc
        self.start = self.seconds = self.client_cpu = self.server_cpu = 0.0
        self.gc_seconds = self.gc_longest = 0.0

    async def __aenter__(self) -> Clocks:
        if self._gc is not None:
            self.gc_seconds = (await self._gc())["seconds"]
        self.server_cpu = await self._cpu()
        self.client_cpu = time.process_time()
        self.start = time.perf_counter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.seconds = time.perf_counter() - self.start
        self.client_cpu = time.process_time() - self.client_cpu
        if exc_type is not None:
            return
        self.server_cpu = await self._cpu() - self.server_cpu
        if self._gc is not None:
            found = await self._gc()
            self.gc_seconds = found["seconds"] - self.gc_seconds
            self.gc_longest = found["longest"]


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
