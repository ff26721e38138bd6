"""What an ``AdkApp`` without ``Stores(locks=)`` or ``Stores(claims=)`` locks chats and claims
answers with, per session service (docs/deployment.md's table): the session database itself
whenever every worker shares it, and ``prepare()`` says so in its log."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from adk_asgi import AdkApp, Stores
from tests.support import SqliteSessionService, scripted_agent

pytestmark = pytest.mark.backing

Setup = tuple[BaseSessionService, str]
"""A session service, and the log line ``prepare()`` writes for it."""


@pytest_asyncio.fixture(
    params=["sqlite-native", "sqlite-sqlalchemy", "postgres", "sqlite-memory", "memory"]
)
async def setup(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Setup]:
    path = str(tmp_path / "sessions.db")
    sessions: BaseSessionService
    if request.param == "sqlite-native":
        sessions = SqliteSessionService(path)
        line = f"SqliteChatLocks ({path}); answers are claimed with SqliteClaims ({path})"
    elif request.param == "sqlite-sqlalchemy":
        sessions = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
        line = (
            f"SqliteChatLocks ({path}); answers are claimed with "
            f"SqlClaims (sqlite+aiosqlite:///{path})"
        )
    elif request.param == "postgres":
        database: Any = request.getfixturevalue("postgres").create_database(
            f"defaults_{secrets.token_hex(4)}"
        )
        sessions = DatabaseSessionService(db_url=database.url)
        line = (
            f"PostgresChatLocks ({database.dsn}); answers are claimed with "
            f"SqlClaims ({database.url})"
        )
    elif request.param == "sqlite-memory":
        sessions = SqliteSessionService(":memory:")
        line = (
            "InMemoryChatLocks (this process only); answers are claimed with "
            "InMemoryClaims (this process only)"
        )
    else:
        sessions = InMemorySessionService()
        line = (
            "InMemoryChatLocks (this process only); answers are claimed with "
            "InMemoryClaims (this process only)"
        )
    yield sessions, "adk_asgi: chats are locked with " + line
    close: Callable[[], Any] | None = getattr(sessions, "close", None)
    if close is not None:
        await close()


async def test_prepare_says_what_chats_are_locked_and_answers_claimed_with(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    sessions, line = setup
    app = AdkApp(scripted_agent([]), app_name="app", session_service=sessions)
    try:
        with caplog.at_level("INFO", logger="adk_asgi"):
            await app.prepare()
        async with app.locks.hold(("app", "u", "chat-1"), wait=1) as lease:
            assert lease.token >= 1 and not lease.lost
        assert await app.claims.claim(("app", "u", "chat-1"), ["approval-1"])
        assert not await app.claims.claim(("app", "u", "chat-1"), ["approval-1"])
    finally:
        await app.aclose()
    assert [r.getMessage() for r in caplog.records if r.name == "adk_asgi"] == [line]


async def test_an_explicit_lock_backend_wins_over_the_session_database(tmp_path: Path) -> None:
    from adk_asgi.stores.locks import InMemoryChatLocks

    locks = InMemoryChatLocks()
    sessions = SqliteSessionService(str(tmp_path / "sessions.db"))
    app = AdkApp(
        scripted_agent([]), app_name="app", session_service=sessions, stores=Stores(locks=locks)
    )
    try:
        assert app.locks is locks
    finally:
        await app.aclose()
