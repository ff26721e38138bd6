"""Helpers shared by the test suites: SSE parsing, id normalisation, tiny agents, a virtual
clock."""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import json
import os
import selectors
import sqlite3
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import Executor
from contextlib import closing
from typing import Any, ParamSpec, TypeVar, TypeVarTuple

from google.adk.agents import LlmAgent
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.adk.sessions.sqlite_session_service import (
    SqliteSessionService as AdkSqliteSessionService,
)

from adk_asgi.convert.tool_answers import add_tool_output, respond_to_approval
from adk_asgi.testing import ScriptedLlm, Turn
from adk_asgi.wire.sse_frames import DONE, sse_data, sse_event

P = ParamSpec("P")
T = TypeVar("T")
Ts = TypeVarTuple("Ts")

SSE_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}


def parse_sse(body: bytes | str) -> list[dict[str, Any]]:
    """The chunks of an SSE body, checking the framing the server writes: every event one
    ``data:`` line (no comment, no other field), ``data: [DONE]`` last."""
    text = body.decode() if isinstance(body, bytes) else body
    events = sse_data(text)
    assert events[-1:] == [DONE], f"body does not end with [DONE]: {text[-80:]!r}"
    assert text == "".join(sse_event(e.encode()).decode() for e in events), text
    return [json.loads(event) for event in events[:-1]]


class SqliteSessionService(AdkSqliteSessionService):
    """ADK's native SQLite session service, the connection its constructor opens closed.

    ADK (2.13) checks an existing file's schema in ``__init__`` inside ``with
    sqlite3.connect(...)``, which ends a transaction but never closes the connection. From
    Python 3.13 a connection collected unclosed raises ``ResourceWarning``, an error in this
    suite, in whichever test the garbage collector happens to run (the connection sits in a
    reference cycle). The same check, its connection closed."""

    def _is_migration_needed(self) -> bool:
        if not os.path.exists(self._db_path):
            return False
        try:
            with closing(sqlite3.connect(self._db_connect_path, uri=self._db_connect_uri)) as db:
                columns = [row[1] for row in db.execute("PRAGMA table_info(events)")]
        except sqlite3.Error as exc:
            raise RuntimeError(f"Error accessing database {self._db_path}: {exc}") from exc
        return bool(columns) and "event_data" not in columns  # an events table of old


def counter(prefix: str) -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"{prefix}{next(numbers)}"


def scripted_agent(
    turns: Iterable[Turn] | None = None,
    *,
    responder: Callable[..., Turn] | None = None,
    tools: list[Any] | None = None,
    chunk_size: int = 5,
    delay: float = 0.0,
    name: str = "test_agent",
    **options: Any,
) -> LlmAgent:
    """An agent on a ScriptedLlm; ``options`` go to ``LlmAgent`` (e.g. callbacks)."""
    model = (
        ScriptedLlm(
            responder=responder, chunk_size=chunk_size, delay=delay, id_factory=counter("call_")
        )
        if responder is not None
        else ScriptedLlm(
            turns=list(turns or []), chunk_size=chunk_size, delay=delay, id_factory=counter("call_")
        )
    )
    return LlmAgent(name=name, model=model, tools=tools or [], **options)


def user_body(text: str, chat_id: str = "chat-1", message_id: str = "u1") -> dict[str, Any]:
    return {
        "id": chat_id,
        "messages": [{"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
    }


_ID_KEYS = {"messageId": "msg", "id": "block", "toolCallId": "call", "approvalId": "approval"}


def normalize_ids(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace server-made ids by stable placeholders (``<call1>``…), in order of appearance,
    so a stream with random ids can still be compared exactly."""
    seen: dict[tuple[str, str], str] = {}
    counts: dict[str, int] = {}
    result = []
    for chunk in chunks:
        copy = dict(chunk)
        for key, kind in _ID_KEYS.items():
            value = copy.get(key)
            if isinstance(value, str):
                if (kind, value) not in seen:
                    counts[kind] = counts.get(kind, 0) + 1
                    seen[(kind, value)] = f"<{kind}{counts[kind]}>"
                copy[key] = seen[(kind, value)]
        result.append(copy)
    return result


def answer(message: dict[str, Any], tool: str, **change: Any) -> dict[str, Any]:
    """Update the first unanswered part of ``tool`` in ``message``, in place, the way
    addToolApprovalResponse / addToolOutput do (``ChatClient``'s own functions):
    ``approved=True|False`` (with an optional ``reason``) or ``output=...``."""
    messages: list[dict[str, Any]] = [message]
    if "approved" in change:
        respond_to_approval(messages, tool, change["approved"], change.get("reason"))
    else:
        add_tool_output(messages, tool, "output-available", change["output"], None)
    message.clear()
    message.update(messages[0])
    return message


# --- virtual time ------------------------------------------------------------------------------


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock stands still while anything can run, then jumps to the next
    timer (trio's "autojump" clock).

    ``await asyncio.sleep(t)`` on it returns once every task that can go on without a timer has
    done so and every timer due before ``t`` has fired, in order, however slow the machine: a
    test can wait for "everything that should happen within ``t``" without guessing how long
    that takes, and a wait that should never end (an hour's write interval) costs nothing but
    never ends before a shorter one. ``loop.time()`` is the virtual clock; real I/O still wakes
    the loop, but nothing may wait for a thread (the clock would jump while it works).
    """

    def __init__(self) -> None:
        self._virtual_now = 0.0
        super().__init__(selector=_JumpingSelector(self._advance))

    def time(self) -> float:
        return self._virtual_now

    def _advance(self, seconds: float) -> None:
        self._virtual_now += seconds

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[*Ts], T], *args: *Ts
    ) -> asyncio.Future[T]:
        raise RuntimeError(f"{func!r} would run in a thread, which a virtual clock cannot wait for")


class _JumpingSelector(selectors.BaseSelector):
    """The default selector, polled; where the loop would block until its next timer (nothing
    ready, no I/O), the clock jumps to that timer instead."""

    def __init__(self, advance: Callable[[float], None]) -> None:
        self._selector = selectors.DefaultSelector()
        self._advance = advance

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = self._selector.select(0)
        if events or timeout == 0:
            return events
        if timeout is None:  # no timer at all: only I/O can wake the loop
            return self._selector.select(None)
        self._advance(timeout)
        return []

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._selector.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._selector.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._selector.modify(fileobj, events, data)

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self._selector.get_key(fileobj)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._selector.get_map()

    def close(self) -> None:
        self._selector.close()


def on_virtual_clock(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """Run an async test on a :class:`VirtualClockLoop` (a plain test for pytest-asyncio,
    with the same name, parameters and fixtures)."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        with asyncio.Runner(loop_factory=VirtualClockLoop) as runner:
            runner.run(test(*args, **kwargs))

    return run


class CountedSessions(InMemorySessionService):
    """ADK's in-memory session service, counting the reads of each chat's session."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: collections.Counter[str] = collections.Counter()

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        self.reads[session_id] += 1
        return await super().get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
