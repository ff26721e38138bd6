"""Where the bridge's CPU per delta goes with many SSE chats at once, layer by layer, in process.

``python -m bench.sse_layers [--chats N] [--deltas D] [--rounds R] [--quick]``

``bench.concurrency`` measures the whole server against bare ``run_async`` at the same
concurrency; this bench splits the difference. N chats (50) of D deltas (300) run at once in
this process, one row after the other, each row adding one layer to the one above it:

* ``floor``: bare ``Runner.run_async`` (SSE streaming, no plugin, sessions created first).
* ``runner``: the ``AdkApp``'s own runner: its plugins, the run options that tag every event
  with the ids the client knows, the run paced to its reader (``pace.paced_by``).
* ``converter``: the same run through ``sse_body``: every event converted to UI message chunks
  and encoded as SSE (``EventConverter``, ``ChunkEncoder``), the bytes dropped.
* ``app``: ``POST /chat`` of the ``AdkApp`` called as an ASGI app (body decode, identity,
  chat lock, the session made in the request, the chat's title, the coalescing writer and its
  tasks), with a ``send`` that drops the bytes: everything but uvicorn and the socket.

Rounds rotate the rows' order. Each row's CPU (``time.process_time``) is split into the
garbage collector's share (``gc.callbacks``) and the rest, per delta; *step* is the median over
rounds of the row's CPU per delta minus the row above's. Every chat is checked: exactly D text
deltas. See ``docs/internals/performance-notes.md`` ("Many chats at once").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from google.adk.agents._streaming_mode import StreamingMode  # run_config re-exports it implicitly
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from adk_asgi import AdkApp
from adk_asgi.convert.events import EventConverter
from adk_asgi.serving.pace import RunSignal, paced_by
from adk_asgi.sse.response import sse_body
from adk_asgi.wire.encoding import ChunkEncoder
from bench.harness.agent import APP_NAME, USER_ID, make_agent, quiet, user_message
from bench.harness.chats import chat_body
from bench.harness.placement import loop_factory
from bench.harness.probes import GcClock
from bench.harness.report import load_average, progress, table

TEXT_DELTA: Final = b'"type":"text-delta"'

Chat = Callable[[int], Awaitable[None]]
"""One chat of the given number of deltas, checked."""


class Layers:
    """The rows, each a way of running one chat."""

    def __init__(self) -> None:
        self.floor_runner = Runner(
            app=App(name=APP_NAME, root_agent=make_agent()),
            session_service=InMemorySessionService(),
        )
        self.app = AdkApp(make_agent(), identify=lambda conn: USER_ID)
        self.services = self.app.services
        self.rows: dict[str, Chat] = {
            "floor": self.floor,
            "runner": self.runner,
            "converter": self.converter,
            "app": self.asgi,
        }

    async def floor(self, deltas: int) -> None:
        runner = self.floor_runner
        session = await runner.session_service.create_session(app_name=APP_NAME, user_id=USER_ID)
        config = RunConfig(streaming_mode=StreamingMode.SSE)
        seen = 0
        async for event in runner.run_async(
            user_id=USER_ID,
            session_id=session.id,
            new_message=user_message(deltas),
            run_config=config,
        ):
            seen += bool(event.partial)
        _check("floor", seen, deltas)

    def _app_run(self, session_id: str, deltas: int, signal: RunSignal) -> Any:
        return self.services.runner.run_async(
            user_id=USER_ID,
            session_id=session_id,
            new_message=user_message(deltas),
            run_config=self.services.sse_run_config(
                EventConverter(message_id="m1", policy=self.services.tools), "u1"
            ),
            abort_signal=signal,
        )

    async def _app_session(self) -> str:
        runner = self.services.runner
        session = await runner.session_service.create_session(
            app_name=runner.app_name, user_id=USER_ID
        )
        return session.id

    async def runner(self, deltas: int) -> None:
        session_id, signal, seen = await self._app_session(), RunSignal(), 0
        with paced_by(signal):
            async for event in self._app_run(session_id, deltas, signal):
                seen += bool(event.partial)
        _check("runner", seen, deltas)

    async def converter(self, deltas: int) -> None:
        session_id, signal, seen = await self._app_session(), RunSignal(), 0
        converter = EventConverter(message_id="m1", policy=self.services.tools)
        with paced_by(signal):
            events = self._app_run(session_id, deltas, signal)
            async for piece in sse_body(events, converter, ChunkEncoder(6)):
                seen += piece.count(TEXT_DELTA)
        _check("converter", seen, deltas)

    async def asgi(self, deltas: int) -> None:
        body = json.dumps(chat_body(deltas)).encode()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/chat",
            "raw_path": b"/chat",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"content-type", b"application/json")],
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1),
        }
        requested, answered = False, asyncio.Event()
        seen = 0

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": body, "more_body": False}
            await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal seen
            if message["type"] == "http.response.body":
                seen += message.get("body", b"").count(TEXT_DELTA)
            await asyncio.sleep(0)  # a socket write yields to the loop too

        await self.app(scope, receive, send)
        answered.set()
        _check("app", seen, deltas)


def _check(row: str, seen: int, deltas: int) -> None:
    if seen != deltas:
        raise RuntimeError(f"{row}: {seen} text deltas, not {deltas}")


@dataclass(frozen=True, slots=True)
class Batch:
    cpu: float
    """CPU seconds of the batch, the garbage collector's included."""
    gc: float
    collections: int


async def batch(chat: Chat, chats: int, deltas: int, clock: GcClock) -> Batch:
    before = clock.read()
    cpu = time.process_time()
    await asyncio.gather(*(chat(deltas) for _ in range(chats)))
    cpu = time.process_time() - cpu
    after = clock.read()
    return Batch(
        cpu, after["seconds"] - before["seconds"], int(after["collections"] - before["collections"])
    )


async def run(chats: int, deltas: int, rounds: int) -> dict[str, list[Batch]]:
    layers, clock = Layers(), GcClock()
    clock.install()
    names = list(layers.rows)
    for chat in layers.rows.values():  # warm-up: ADK's lazy imports, the first session
        await chat(5)
    found: dict[str, list[Batch]] = {name: [] for name in names}
    for number in range(rounds):
        progress(f"round {number + 1} of {rounds}")
        order = names[number % len(names) :] + names[: number % len(names)]
        for name in order:
            found[name].append(await batch(layers.rows[name], chats, deltas, clock))
    await layers.app.aclose()
    return found


def report(found: dict[str, list[Batch]], chats: int, deltas: int) -> str:
    per_delta = 1e6 / (chats * deltas)
    floor = found["floor"]
    rows, above = [], None
    for name, batches in found.items():
        cpu = [b.cpu * per_delta for b in batches]
        gc_cpu = [b.gc * per_delta for b in batches]
        step = "-"
        if above is not None:
            steps = [
                (a.cpu - b.cpu) * per_delta for a, b in zip(batches, found[above], strict=True)
            ]
            step = f"{statistics.median(steps):+.1f}"
        ratio = statistics.median(a.cpu / b.cpu for a, b in zip(batches, floor, strict=True))
        rows.append(
            [
                name,
                f"{statistics.median(cpu):.1f}",
                f"{statistics.median(c - g for c, g in zip(cpu, gc_cpu, strict=True)):.1f}",
                f"{statistics.median(gc_cpu):.1f}",
                f"{statistics.median(b.collections for b in batches):.0f}",
                step,
                f"{ratio:.3f}",
            ]
        )
        above = name
    header = ["row", "CPU µs/delta", "without GC", "GC", "collections", "step", "/ floor"]
    return (
        f"{chats} chats at once, {deltas} text deltas each, in this process; medians over "
        f"{len(floor)} rounds\n"
        + table(header, rows)
        + "\nstep: the median per-round difference to the row above; / floor: the median"
        " per-round ratio of CPU\n  collections: the garbage collector's, per batch"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sse_layers", description=__doc__)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--deltas", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10 chats, 2 rounds")
    args = parser.parse_args(argv)
    chats, rounds = (10, 2) if args.quick else (args.chats, args.rounds)
    quiet()
    print(f"load average (1, 5, 15 min) before {load_average()}")
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        found = runner.run(run(chats, args.deltas, rounds))
    print(report(found, chats, args.deltas))
    print(f"load average (1, 5, 15 min) after {load_average()}")


if __name__ == "__main__":
    main()
