"""Answers claimed once, on every store: several store objects on one database stand for several
workers, and a new object on the same database for a restarted one. PostgreSQL is the real
server of the test session."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from sqlalchemy.ext.asyncio import create_async_engine

from adk_asgi.app import claims_for
from adk_asgi.claims import Claims, InMemoryClaims
from adk_asgi.claims_sql import SqlClaims
from adk_asgi.claims_sqlite import SqliteClaims

pytestmark = pytest.mark.backing

CHAT = ("app", "alice", "chat-1")

Workers = Callable[[], Claims]


@pytest_asyncio.fixture(params=["sqlite-file", "sqlalchemy-sqlite", "postgres"])
async def workers(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Workers]:
    """A factory of claim stores on one database, as the workers of a deployment have."""
    async with AsyncExitStack() as stack:
        if request.param == "postgres":  # the server is the session's: a database of our own
            database = request.getfixturevalue("postgres").create_database(
                f"claims_{secrets.token_hex(4)}"
            )

        def make() -> Claims:
            if request.param == "sqlite-file":
                return SqliteClaims(str(tmp_path / "sessions.db"))
            if request.param == "sqlalchemy-sqlite":
                url = f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"
            else:
                url = database.url
            engine = create_async_engine(url)
            stack.push_async_callback(engine.dispose)
            return SqlClaims(engine)

        yield make


async def test_an_answer_is_claimed_once_across_workers_and_restarts(workers: Workers) -> None:
    first, second = workers(), workers()
    await first.prepare()
    assert await first.claim(CHAT, ["approval-1"]) is True
    assert await second.claim(CHAT, ["approval-1"]) is False
    assert await workers().claim(CHAT, ["approval-1"]) is False  # a restarted worker
    assert await second.claim(("app", "alice", "chat-2"), ["approval-1"]) is True  # another chat
    assert await second.claim(("app", "bob", "chat-1"), ["approval-1"]) is True  # another user


async def test_a_request_claims_all_of_its_answers_or_none(workers: Workers) -> None:
    first, second = workers(), workers()
    assert await first.claim(CHAT, ["call-2"]) is True
    assert await second.claim(CHAT, ["call-1", "call-2", "call-3"]) is False
    assert await first.claim(CHAT, ["call-3", "call-1"]) is True  # the refused claim left nothing


async def test_a_claim_raced_by_many_workers_has_one_winner(workers: Workers) -> None:
    stores = [workers() for _ in range(8)]
    for round_ in range(10):
        answer = [f"approval-{round_}"]
        won = await asyncio.gather(*(store.claim(CHAT, answer) for store in stores))
        assert won.count(True) == 1, f"round {round_}: {won}"


async def test_the_first_claims_of_fresh_workers_create_the_table_once(workers: Workers) -> None:
    """No ``prepare()``: the workers' first claims race to create the table."""
    stores = [workers() for _ in range(4)]
    won = await asyncio.gather(*(store.claim(CHAT, ["approval-1"]) for store in stores))
    assert won.count(True) == 1


@pytest.mark.parametrize("kind", ["in-memory", "sqlite-file", "sqlite-memory", "database"])
async def test_the_default_store_lives_where_the_sessions_live(kind: str, tmp_path: Path) -> None:
    expected: type[Claims]
    service: Any
    if kind == "in-memory":
        service, expected = InMemorySessionService(), InMemoryClaims
    elif kind == "sqlite-file":
        service, expected = SqliteSessionService(str(tmp_path / "s.db")), SqliteClaims
    elif kind == "sqlite-memory":
        service, expected = SqliteSessionService(":memory:"), InMemoryClaims
    else:
        url = f"sqlite+aiosqlite:///{tmp_path / 's.db'}"
        service, expected = DatabaseSessionService(db_url=url), SqlClaims
    claims = claims_for(service)
    assert type(claims) is expected
    if isinstance(service, DatabaseSessionService):
        assert isinstance(claims, SqlClaims) and claims.engine is service.db_engine
        await service.close()


async def test_a_claim_is_kept_in_the_session_database_file(tmp_path: Path) -> None:
    """ADK's sessions and the claims share the file, so copying or restoring it keeps both."""
    path = tmp_path / f"{secrets.token_hex(4)}.db"
    sessions = SqliteSessionService(str(path))
    await sessions.create_session(app_name="app", user_id="alice", session_id="chat-1")
    assert await claims_for(sessions).claim(CHAT, ["approval-1"]) is True
    assert await claims_for(SqliteSessionService(str(path))).claim(CHAT, ["approval-1"]) is False
