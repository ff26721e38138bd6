"""``bench.sse_layers``'s rows, each a way of running one chat in this process, one layer more
than the row above (:class:`Layers`), and one timed batch of chats (:func:`batch`)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.apps.app import App
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from adk_asgi import AdkApp
from adk_asgi.convert.events import EventConverter
from adk_asgi.serving.pace import RunSignal, paced_by
from adk_asgi.sse.response import sse_body
from adk_asgi.wire.encoding import ChunkEncoder
from bench.harness.agent import APP_NAME, ONE_USER_FOR_MANY, USER_ID, make_agent, user_message
from bench.harness.chats import chat_body
from bench.harness.probes import GcClock

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
        self.app = AdkApp(
            make_agent(), identify=lambda conn: USER_ID, user_bounds=ONE_USER_FOR_MANY
        )
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
