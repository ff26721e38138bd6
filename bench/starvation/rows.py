"""``bench.starvation``'s phases and what they measure: the victim's probes (:func:`first_text`),
the attacker's sockets and flood (in a process of its own: :func:`flood`), one round of every
phase (:func:`one_round`)."""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from adk_asgi import UserBounds
from bench.harness.live import open_in_batches

PROBE_DELTAS: Final = 20
"""Deltas of each probe's answer (it waits for the first only)."""
FLOOD_DELTAS: Final = 20
DEFAULT_BOUND: Final = UserBounds().requests or 0
"""The chat requests one user may run at once, by default."""


PHASES: Final = ("quiet", "sockets", "bound", "flood")


@dataclass(slots=True)
class Attack:
    open_sockets: int = 0
    closed: Counter[int | None] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class Round:
    first_text: dict[str, float]
    """Phase → the median time to first text of its probes."""
    attacks: dict[str, Attack]

    def ratio(self, phase: str) -> float:
        return self.first_text[phase] / self.first_text["quiet"]


def _body(deltas: int) -> dict[str, Any]:
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": str(deltas)}]}
    return {"id": uuid.uuid4().hex, "messages": [message], "trigger": "submit-message"}


async def first_text(client: httpx.AsyncClient) -> float:
    """One new chat of ``victim``: seconds to its first text delta (the rest read too)."""
    started = time.perf_counter()
    seen: float | None = None
    headers = {"x-user": "victim"}
    async with client.stream("POST", "/agent/chat", json=_body(PROBE_DELTAS), headers=headers) as r:
        if r.status_code != 200:
            raise RuntimeError(f"a probe got {r.status_code}: {(await r.aread())!r}")
        async for line in r.aiter_lines():
            if seen is None and '"text-delta"' in line:
                seen = time.perf_counter() - started
    if seen is None:
        raise RuntimeError("a probe's answer had no text")
    return seen


async def probes(client: httpx.AsyncClient, count: int) -> float:
    return statistics.median([await first_text(client) for _ in range(count)])


async def open_socket(url: str) -> ClientConnection:
    return await connect(
        f"{url}?chatId={uuid.uuid4().hex}", additional_headers={"x-user": "mallory"}
    )


async def refused(socket: ClientConnection, attack: Attack) -> ClientConnection | None:
    """``None`` once the server closed ``socket`` (a refusal waits 1-4 s first); or the
    socket itself, held open."""
    try:
        await asyncio.wait_for(socket.recv(), 6.0)
    except TimeoutError:
        attack.open_sockets += 1
        return socket  # held
    except ConnectionClosed:
        pass
    attack.closed[socket.close_code] += 1
    return None


async def flood(base: str, in_flight: int, stop: Any) -> Counter[int]:
    """``in_flight`` chat requests of ``mallory`` at all times, each sent again once answered,
    until ``stop`` (a process event) is set; the statuses they got."""
    statuses: Counter[int] = Counter()
    headers = {"x-user": "mallory"}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:

        async def loop() -> None:
            while not stop.is_set():
                body = _body(FLOOD_DELTAS)
                response = await client.post("/agent/chat", json=body, headers=headers)
                statuses[response.status_code] += 1

        await asyncio.gather(*(loop() for _ in range(in_flight)))
    return statuses


def _flood_process(base: str, in_flight: int, stop: Any, results: Any) -> None:
    results.put("ready")  # (imported: what is left is the flood)
    results.put(dict(asyncio.run(flood(base, in_flight, stop))))


async def one_round(base: str, sockets: int, bound: int, flooders: int, count: int) -> Round:
    """The phases of one round. The flood runs in a process of its own, so the probes' clock
    reads the server, not a load generator sharing their event loop."""
    first: dict[str, float] = {}
    attacks: dict[str, Attack] = {}
    spawn = multiprocessing.get_context("spawn")
    async with httpx.AsyncClient(base_url=base, timeout=120) as victim:
        await first_text(victim)  # warm
        first["quiet"] = await probes(victim, count)
        attack = attacks["sockets"] = Attack()
        url = base.replace("http://", "ws://", 1) + "/agent/live"
        opened = await open_in_batches(sockets, lambda: open_socket(url))
        held = await asyncio.gather(*(refused(socket, attack) for socket in opened))
        try:
            first["sockets"] = await probes(victim, count)
            for phase, in_flight in (("bound", bound), ("flood", flooders)):
                stop, results = spawn.Event(), spawn.Queue()
                flooding = spawn.Process(
                    target=_flood_process, args=(base, in_flight, stop, results)
                )
                flooding.start()
                try:
                    await asyncio.to_thread(results.get, True, 60)  # started
                    await asyncio.sleep(1.0)  # under way
                    first[phase] = await probes(victim, count)
                finally:
                    stop.set()
                    statuses = await asyncio.to_thread(results.get, True, 60)
                    flooding.join()
                attacks[phase] = Attack(statuses=Counter(statuses))
        finally:
            await asyncio.gather(*(s.close() for s in held if s is not None))
    return Round(first, attacks)
