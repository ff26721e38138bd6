"""Starvation: what one user holding everything a browser can hold does to another user's time
to first text.

``python -m bench.starvation [--quick] [--sockets N] [--flood F] [--probes P] [--rounds R]
[--delay S]``

One uvicorn worker (``bench.harness.serve adk_asgi_shared``, ``BENCH_USER_HEADER=1``: the user is
the ``x-user`` header) on ADK's ``DatabaseSessionService`` on a throw-away PostgreSQL cluster
(``tests/backing_services.py``), with the app's own defaults: chat locks in the session
database (``PostgresChatLocks``) and the per-user bounds (``UserBounds()``). The model takes
``--delay`` seconds per delta (20 ms, about Gemini Flash's pace), so a stream mostly waits for
its model, as real ones do. Each round measures, on the same server, one phase after another:

* **quiet**: P probes by the user ``victim``, one after another: a new chat over SSE, its time
  to the first ``text-delta``.
* **sockets**: the user ``mallory`` has tried N live sockets, each on a chat of its own (8, its
  bound, stay open, each holding its chat; the rest were closed with 1013); P probes meanwhile.
* **bound**: mallory also keeps as many chat requests in flight as that user may run (4, or
  ``--bound``; a closed loop: each answered one is sent again at once); P probes meanwhile.
* **flood**: mallory keeps F requests in flight: 4 run, the rest are refused ``429`` (each
  after its second's pause) and sent again at once; P probes meanwhile.

The requests of the last two run in a process of their own, so the probes' clock reads the
server, not a load generator sharing their event loop; the server runs on the last CPU, the
load generators on the others, so their work does not take the server's CPU either. A refusal
that comes before its request's answer is done being counted (a closed loop sends again at
once) is counted too.

Printed per phase: the median time to first text over the rounds, its ratio to quiet (the
median of the rounds' ratios), and what mallory got (sockets open and closed, requests answered
and refused).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from adk_asgi import UserBounds
from bench.harness.cli import numbers, parser
from bench.harness.live import open_in_batches
from bench.harness.report import load_average, ms, progress, table
from bench.harness.serve import raise_fd_limit
from bench.harness.servers import ServerProcess, logs_on_error

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


def _attack(attack: Attack | None) -> str:
    if attack is None:
        return ""
    got = [f"{attack.open_sockets} sockets open"] if attack.open_sockets else []
    got += [f"closed {code}: {n}" for code, n in sorted(attack.closed.items(), key=str)]
    got += [f"{code}: {n}" for code, n in sorted(attack.statuses.items())]
    return ", ".join(got)


def report(rounds: Sequence[Round], sockets: int, bound: int, flooders: int, delay: float) -> str:
    rows = []
    for phase in PHASES:
        median = statistics.median(r.first_text[phase] for r in rounds)
        ratio = statistics.median(r.ratio(phase) for r in rounds)
        rows.append([phase, ms(median), f"{ratio:.2f}", _attack(rounds[-1].attacks.get(phase))])
    return (
        f"Time to first text of another user, quiet and while one user tries {sockets} live "
        f"sockets, then keeps {bound} (its bound), then {flooders} chat requests in flight; "
        f"the model takes {ms(delay)} ms a delta; {len(rounds)} round(s), {load_average()}:\n"
        f"{table(['phase', 'first text', 'ratio', 'mallory got (last round)'], rows)}"
    )


async def bench(
    sockets: int, bound: int, flooders: int, count: int, rounds: int, delay: float
) -> list[Round]:
    from tests.backing_services import postgres_server

    done: list[Round] = []
    with postgres_server() as postgres:
        env = {
            "BENCH_SESSIONS": postgres.create_database("starvation").url,
            "BENCH_LOCKS": "default",
            "BENCH_USER_HEADER": "1",
            "BENCH_DELTA_DELAY": str(delay),
            "BENCH_USER_REQUESTS": str(bound),
        }
        with ServerProcess("adk_asgi_shared", env=env) as server, logs_on_error({"s": server}):
            _pin(server)
            for index in range(rounds):
                progress(f"round {index + 1} of {rounds}")
                done.append(await one_round(server.url, sockets, bound, flooders, count))
    return done


def _pin(server: ServerProcess) -> None:
    """The server on the last CPU, this process and the flood's on the others: a load
    generator's work must not take the CPU of the server it measures (PostgreSQL goes where
    the scheduler puts it)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return
    for pid in (server.info["supervisor"], *server.info["workers"]):
        os.sched_setaffinity(pid, {cpus[-1]})
    os.sched_setaffinity(0, set(cpus[:-1]))


def main(argv: Sequence[str] | None = None) -> None:
    found = parser(__name__, __doc__, "one round, 100 sockets, 10 probes")
    numbers(
        found,
        sockets="live sockets the attacker tries to open (1000)",
        flood="the attacker's chat requests in flight (64)",
        probes="the victim's probes per measurement (30)",
        bound="UserBounds(requests=N): the chat requests one user may run at once (the default)",
        rounds="rounds (3)",
    )
    numbers(found, kind=float, delay="seconds the model takes per delta (0.02)")
    args = found.parse_args(argv)
    raise_fd_limit()
    sockets = args.sockets if args.sockets is not None else (100 if args.quick else 1000)
    flooders = args.flood if args.flood is not None else 64
    count = args.probes if args.probes is not None else (10 if args.quick else 30)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    delay = args.delay if args.delay is not None else 0.02
    bound = args.bound if args.bound is not None else DEFAULT_BOUND
    done = asyncio.run(bench(sockets, bound, flooders, count, rounds, delay))
    print(report(done, sockets, bound, flooders, delay))


if __name__ == "__main__":
    main()
