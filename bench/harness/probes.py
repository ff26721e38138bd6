"""A benchmark server's probes, both sides: in the server (:func:`with_cpu_probe`: ``/__cpu``,
``/__gc``, ``/__census``; :class:`GcClock`, which the in-process floors use too), and as the
client reads them (:class:`Probe`), the clocks read around a measurement (:class:`Clocks`), and
the waits built on them: until the server is idle, its CPU share over a window.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send


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
    """The server's probes (:func:`with_cpu_probe`) as the client reads them: CPU seconds, GC
    time, census."""

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


# --- in the server ---------------------------------------------------------------------------


PROBES: Final = frozenset({"/__cpu", "/__gc", "/__census"})


class GcClock:
    """Time this process spends in the cyclic garbage collector (``gc.callbacks``), counted
    from ``install()``: the collector stops every task, so its pauses are gaps in every
    stream."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self.longest = 0.0
        """The longest pause since the last ``read()``."""
        self._started = 0.0
        self._installed = False

    def install(self) -> None:
        if not self._installed:
            gc.callbacks.append(self._callback)
            self._installed = True

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        pause = time.perf_counter() - self._started
        self.seconds += pause
        self.collections += 1
        self.longest = max(self.longest, pause)

    def read(self) -> dict[str, float]:
        """Seconds and collections so far, and the longest pause since the last read."""
        found = {"seconds": self.seconds, "collections": self.collections, "longest": self.longest}
        self.longest = 0.0
        return found


def census() -> dict[str, Any]:
    """After a full collection: the tasks of this process's event loop (by coroutine), and the
    objects the garbage collector tracks (containers: dicts, lists, class instances...) by type.
    Slow with
    many objects (a second or so per million): for settled moments, never inside a timing."""
    gc.collect()
    types = Counter(
        f"{type(found).__module__}.{type(found).__qualname__}" for found in gc.get_objects()
    )
    tasks = Counter(
        getattr(task.get_coro(), "__qualname__", type(task.get_coro()).__name__)
        for task in asyncio.all_tasks()
    )
    return {
        "pid": os.getpid(),
        "tasks": sum(tasks.values()),
        "task_kinds": dict(tasks),
        "objects": sum(types.values()),
        "types": dict(types),
    }


def with_cpu_probe(app: ASGIApp) -> ASGIApp:
    """``GET /__cpu``: this process's CPU seconds, so the client can charge each request the
    server CPU it cost — a figure the client's own CPU use and other load on the box do not
    blur the way they blur wall-clock time. A few string comparisons per request otherwise.

    ``GET /__gc``: the garbage collector's time (:class:`GcClock`, JSON), counted from the
    first ``/__gc`` (no callback before, so the benches that never ask pay nothing).

    ``GET /__census``: :func:`census` (JSON), what is left behind in memory."""
    clock = GcClock()

    async def probed(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in PROBES:
            if scope["path"] == "/__cpu":
                body = repr(time.process_time()).encode()
            elif scope["path"] == "/__census":
                body = json.dumps(census()).encode()
            else:
                clock.install()
                body = json.dumps(clock.read()).encode()
            headers = [(b"content-type", b"text/plain")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return probed
