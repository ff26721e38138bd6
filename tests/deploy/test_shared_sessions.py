"""Several workers on one session database (real SQLite and PostgreSQL): tables created once at
start-up, and a chat auto-created by two workers at once is not an error. Each ``AdkApp`` with
its own ``DatabaseSessionService`` stands for one worker process."""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from google.adk.sessions.database_session_service import DatabaseSessionService

from adk_asgi import AdkApp, Stores
from adk_asgi.stores.locks import InMemoryChatLocks
from adk_asgi.stores.locks_redis import RedisChatLocks
from adk_asgi.testing import ChatClient, Text, demo_model
from demo_app import build_agent
from tests.support import counter, parse_sse, scripted_agent

pytestmark = pytest.mark.backing

Worker = Callable[[], AdkApp]


@pytest_asyncio.fixture(params=["sqlite", "postgres"])
async def fresh_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """The SQLAlchemy URL of a new, empty database."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"
    else:
        postgres: Any = request.getfixturevalue("postgres")
        yield postgres.create_database(f"fresh_{secrets.token_hex(4)}").url


@pytest_asyncio.fixture
async def workers(fresh_database: str) -> AsyncIterator[Worker]:
    async with AsyncExitStack() as stack:

        def worker() -> AdkApp:
            sessions = DatabaseSessionService(db_url=fresh_database)
            app = AdkApp(scripted_agent([]), app_name="app", session_service=sessions)
            stack.push_async_callback(sessions.close)
            stack.push_async_callback(app.aclose)
            return app

        yield worker


async def test_workers_starting_together_create_the_tables_once(workers: Worker) -> None:
    """Each worker's lock is its own (the default): the race is real, and prepare survives it."""
    first, second, third = workers(), workers(), workers()
    await asyncio.gather(first.prepare(), second.prepare(), third.prepare())
    session = await first.services.open_session("u", "chat-1")
    assert await second.services.session("u", "chat-1") == session


async def test_a_chat_opened_by_two_workers_at_once_is_one_session(workers: Worker) -> None:
    first, second = workers(), workers()
    await first.prepare()
    await second.prepare()
    for round_ in range(10):
        chat_id = f"chat-{round_}"
        a, b = await asyncio.gather(
            first.services.open_session("u", chat_id), second.services.open_session("u", chat_id)
        )
        assert (a.id, b.id) == (chat_id, chat_id)
        assert a.events == b.events == []


@pytest.mark.parametrize(
    ("sessions", "locks", "warning"),
    [
        ("memory", "process", "several workers share nothing with in-memory sessions"),
        ("database", "process", "several workers lock chats each in its own memory"),
        ("database", "default", None),
        ("database", "redis", None),
    ],
)
async def test_prepare_warns_of_what_several_workers_cannot_share(
    sessions: str,
    locks: str,
    warning: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    options: dict[str, Any] = {}
    if sessions == "database":
        url = f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"
        options["session_service"] = DatabaseSessionService(db_url=url)
    if locks == "redis":
        options["stores"] = Stores(locks=RedisChatLocks(request.getfixturevalue("redis_url")))
    elif locks == "process":
        options["stores"] = Stores(locks=InMemoryChatLocks())
    app = AdkApp(scripted_agent([]), app_name="app", **options)
    try:
        with caplog.at_level("WARNING", logger="adk_asgi"):
            await app.prepare()
    finally:
        await app.aclose()
        if "session_service" in options:
            await options["session_service"].close()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [w.split(":")[1].strip() for w in warnings] == ([warning] if warning else [])


@pytest_asyncio.fixture
async def locked_sqlite(tmp_path: Path) -> AsyncIterator[tuple[AdkApp, sqlite3.Connection]]:
    """An app on a SQLite file that waits 50 ms for a lock, and another connection to the file
    that can hold its write lock, as another process's long write would."""
    path = tmp_path / "sessions.db"
    sessions = DatabaseSessionService(
        db_url=f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 0.05}
    )
    app = AdkApp(scripted_agent([[Text("Hello there!")]]), app_name="app", session_service=sessions)
    await app.prepare()
    other = sqlite3.connect(path, isolation_level=None)
    try:
        yield app, other
    finally:
        other.close()
        await app.aclose()
        await sessions.close()


def first_message(chat_id: str) -> dict[str, Any]:
    text = {"type": "text", "text": "hi"}
    return {"id": chat_id, "messages": [{"id": "u1", "role": "user", "parts": [text]}]}


async def test_a_database_busy_for_a_moment_is_waited_for(
    locked_sqlite: tuple[AdkApp, sqlite3.Connection],
) -> None:
    app, other = locked_sqlite
    other.execute("BEGIN EXCLUSIVE")
    asyncio.get_running_loop().call_later(0.15, other.execute, "ROLLBACK")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://t") as client:
        response = await client.post("/chat", json=first_message("chat-1"))
    assert response.status_code == 200, response.text
    assert [c["type"] for c in parse_sse(response.content)][-1] == "finish"


async def test_a_database_busy_for_too_long_is_a_json_503_not_a_500_page(
    locked_sqlite: tuple[AdkApp, sqlite3.Connection],
) -> None:
    app, other = locked_sqlite
    other.execute("BEGIN EXCLUSIVE")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://t") as client:
        response = await client.post("/chat", json=first_message("chat-2"))
    other.execute("ROLLBACK")
    assert (response.status_code, response.json()) == (
        503,
        {"error": "the chat's session could not be read or written; try again"},
    )


async def test_a_chat_on_a_database_runs_on_the_session_its_checks_read(
    fresh_database: str,
) -> None:
    """The Runner is handed the session the request read and wrote (serving/session_handover.py): a
    database service refuses an append to a session older than storage, so every write in
    between must have gone through that object. A new chat, an approval, a payment, a message
    after it."""
    sessions = DatabaseSessionService(db_url=fresh_database)
    agent = build_agent(demo_model(id_factory=counter("call_"), chunk_size=200))
    app = AdkApp(agent, app_name="app", session_service=sessions)
    try:
        await app.prepare()
        async with ChatClient(app, chat_id="chat-1") as chat:
            await chat.send("pay 5 to alice")
            paid = await chat.approve("process_payment")
            after = await chat.send("hi")
            history = await chat.history()
    finally:
        await app.aclose()
        await sessions.close()
    outputs = [c["output"] for c in paid.chunks if c["type"] == "tool-output-available"]
    assert outputs == [{"status": "sent", "amount": 5, "recipient": "alice", "currency": "USD"}]
    assert [c["type"] for c in after.chunks][-1] == "finish"
    assert "error" not in [c["type"] for c in paid.chunks + after.chunks]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
