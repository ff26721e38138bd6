"""The rows of a side-by-side bench: one request as the client sees it, and the rounds.

A row is a callable that makes one answer of N deltas and returns its :class:`Run`; every
bench that compares servers (``bench.throughput``) samples its rows with :func:`sample`, the
order of the rows rotating each round, so a noisy machine slows all rows alike.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import httpx

from bench.harness.probes import Clocks

_T = TypeVar("_T")
_R = TypeVar("_R")

SHORT_ANSWER: Final = 5
"""Deltas in the answer timed for the first text (40 characters: a one-line reply)."""


@dataclass(frozen=True, slots=True)
class Run:
    """One request: from its start to the end of the body, as the client saw it."""

    seconds: float
    first_delta: float
    """Seconds to the first text delta (the floor: to the first partial event)."""
    units: int
    """Events (floor), SSE chunks (adk_asgi, ``[DONE]`` excluded) or SSE frames (ADK)."""
    body_bytes: int
    server_cpu: float
    """CPU seconds the serving process spent (the floor: this process, which runs it)."""
    client_cpu: float
    """CPU seconds this process spent reading the stream (0 for the floor)."""


Measure = Callable[[int], Awaitable[Run]]


@dataclass(frozen=True, slots=True)
class Timed:
    """N streams (or live turns) started together and timed as one: the start of every
    concurrency bench's batch (``bench.harness.chats.Batch``, ``bench.live_batches.Batch``), which
    ``bench.harness.report.batch_cells`` reads."""

    streams: int
    deltas: int
    wall: float
    server_cpu: float
    """CPU seconds of the process that ran the agents (the floor: this one)."""
    client_cpu: float


@dataclass(frozen=True, slots=True)
class Streamed:
    seconds: float
    first: float
    data: bytes
    server_cpu: float
    client_cpu: float


class HttpRow:
    """A benchmark server as the client sees it: its URL and its CPU clock
    (``bench.harness.probes``)."""

    def __init__(self, client: httpx.AsyncClient, base_url: str) -> None:
        self.client = client
        self.base_url = base_url

    async def cpu(self) -> float:
        response = await self.client.get(f"{self.base_url}/__cpu")
        return float(response.text)

    async def round_trip(self) -> float:
        """Seconds for a bare ``GET`` answered before any agent code: the HTTP share of a
        time to first chunk (uvicorn, loopback TCP, httpx)."""
        start = time.perf_counter()
        await self.cpu()
        return time.perf_counter() - start

    async def stream(
        self,
        path: str,
        body: dict[str, Any],
        marker: bytes,
        headers: dict[str, str] | None = None,
    ) -> Streamed:
        """POST and read the whole SSE body, timing it and the first ``marker`` in it."""
        url = f"{self.base_url}{path}"
        data = bytearray()
        first = 0.0
        async with (
            Clocks(self.cpu) as clocks,
            self.client.stream("POST", url, json=body, headers=headers) as response,
        ):
            if response.status_code != 200:
                await response.aread()
                raise RuntimeError(f"{url}: {response.status_code} {response.text[:500]}")
            async for piece in response.aiter_raw():
                seen = len(data)
                data += piece
                if not first and marker in data[max(0, seen - len(marker)) :]:
                    first = time.perf_counter() - clocks.start
        return Streamed(clocks.seconds, first, bytes(data), clocks.server_cpu, clocks.client_cpu)


def check_count(row: str, got: int, deltas: int) -> None:
    if got != deltas:
        raise RuntimeError(f"{row}: {got} text deltas, expected {deltas}")


async def sample(
    rows: dict[str, Callable[[int], Awaitable[_R]]],
    deltas: int,
    reps: int,
    *,
    primed: bool = False,
    order: Callable[[Sequence[str], int], list[str]] | None = None,
) -> dict[str, list[_R]]:
    """One warm-up run per row, then ``reps`` rounds, the order of the rows changing each
    round (``order``: :func:`round_order` unless given; ``bench.live`` keeps a plain
    :func:`rotation`).

    ``primed``: each timed run right after an untimed one of the same row. For short answers
    (the time to first text): a request to a server process that was idle, or that another
    process had just kept busy, took 0.2 to 0.7 ms longer to its first text than one right
    after a request of its own; primed, every row is timed as it runs when busy. What is left
    of the row before's effect (0.25 ms) is shared out by :func:`round_order`."""
    for measure in rows.values():
        await measure(deltas)
    names = list(rows)
    results: dict[str, list[_R]] = {name: [] for name in names}
    for rep in range(reps):
        for name in (order or round_order)(names, rep):
            if primed:
                await rows[name](deltas)
            results[name].append(await rows[name](deltas))
    return results


def round_order(names: Sequence[str], rep: int) -> list[str]:
    """The rows' order in round ``rep``: a balanced Latin square (Williams, 1949), so that over
    ``len(names)`` rounds (twice that for an odd number of rows) every row comes first as
    often as any other, and right after each other row as often as after any other.

    A request runs slower right after another server's (its process was idle, the other's is
    still finishing): 0.25 ms to the first text, measured, even with ``primed``. A plain
    rotation keeps the rows' cyclic order, so one row came after the same neighbour in most
    rounds: adk_asgi after ag-ui-adk in 20 rounds of 30, 0.3 ms slower to its first text than
    the same server's other mount, which came after adk_asgi."""
    n = len(names)
    if n < 3:
        return rotation(names, rep)
    # The first sequence goes 0, 1, n-1, 2, n-2, ...; sequence k adds k to each (mod n); an
    # odd n needs the mirrored sequences as well for every ordered pair to be adjacent alike.
    zigzag = [0] + [(i + 1) // 2 if i % 2 else n - i // 2 for i in range(1, n)]
    sequences = n if n % 2 == 0 else 2 * n
    k = rep % sequences
    order = [(index + k) % n for index in zigzag]
    if k >= n:
        order.reverse()
    return [names[index] for index in order]


def rotation(items: Sequence[_T], rep: int) -> list[_T]:
    """``items`` rotated by ``rep``: round ``rep`` of a plain rotation, where every row comes
    first once in ``len(items)`` rounds."""
    shift = rep % max(1, len(items))
    return [*items[shift:], *items[:shift]]
