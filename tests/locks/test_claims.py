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

import aiosqlite
import pytest
import pytest_asyncio
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from adk_asgi import AdkApp, Stores
from adk_asgi.stores.claims import Claims, InMemoryClaims
from adk_asgi.stores.claims_sql import SqlClaims
from adk_asgi.stores.claims_sqlite import TABLE, SqliteClaims
from adk_asgi.stores.defaults import claims_for
from adk_asgi.stores.locks_redis import RedisChatLocks
from tests.support import SqliteSessionService, scripted_agent

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


class Clock:
    """Time the test moves on by hand (``InMemoryClaims(clock=...)``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_in_memory_claims_are_forgotten_after_keep_so_memory_stays_bounded() -> None:
    """They were kept for the process's life: one entry per answer ever claimed."""
    clock = Clock()
    claims = InMemoryClaims(keep=60, clock=clock)
    for chat in range(100):
        assert await claims.claim(("app", "alice", f"chat-{chat}"), ["approval-1", "call-1"])
    assert len(claims) == 200
    clock.now += 30
    assert await claims.claim(CHAT, ["approval-2"]) is True
    assert await claims.claim(CHAT, ["approval-1"]) is False  # still kept: 30 s old
    assert len(claims) == 201
    clock.now += 30  # the first hundred chats' claims are 60 s old
    assert await claims.claim(("app", "bob", "chat-1"), ["approval-1"]) is True
    assert len(claims) == 2  # approval-2 of CHAT and bob's
    assert await claims.claim(CHAT, ["approval-2"]) is False


async def test_in_memory_claims_forget_a_deleted_chat_and_only_it() -> None:
    claims = InMemoryClaims()
    other = ("app", "alice", "chat-2")
    assert await claims.claim(CHAT, ["approval-1", "call-1"])
    assert await claims.claim(other, ["approval-1"])
    await claims.forget(CHAT)
    assert len(claims) == 1
    assert len(claims._order) == 1  # nothing of the deleted chat is left
    assert await claims.claim(CHAT, ["approval-1", "call-1"]) is True  # a new chat, that id
    assert await claims.claim(other, ["approval-1"]) is False
    await claims.forget(("app", "alice", "never"))
    assert len(claims) == 3


async def claim_rows(claims: Claims) -> list[tuple[str, str, str, str]]:
    """Every row of the claims table."""
    query = f"SELECT app_name, user_id, chat_id, answer_id FROM {TABLE} ORDER BY 1, 2, 3, 4"
    if isinstance(claims, SqliteClaims):
        async with aiosqlite.connect(claims.path) as db, db.execute(query) as cursor:
            return [tuple(row) for row in await cursor.fetchall()]
    assert isinstance(claims, SqlClaims)
    async with claims.engine.connect() as conn:
        return [tuple(row) for row in await conn.execute(text(query))]


async def test_forgetting_a_chat_deletes_its_claim_rows_on_every_worker(workers: Workers) -> None:
    first, second = workers(), workers()
    assert await first.claim(CHAT, ["approval-1", "call-1"])
    assert await first.claim(("app", "alice", "chat-2"), ["approval-1"])
    assert await first.claim(("app", "bob", "chat-1"), ["approval-1"])
    await second.forget(CHAT)
    assert await claim_rows(first) == [
        ("app", "alice", "chat-2", "approval-1"),
        ("app", "bob", "chat-1", "approval-1"),
    ]
    assert await first.claim(CHAT, ["approval-1"]) is True  # a new chat under that id


async def test_forgetting_before_any_claim_creates_the_table(workers: Workers) -> None:
    claims = workers()
    await claims.forget(CHAT)
    assert await claim_rows(claims) == []


@pytest.mark.parametrize(
    ("claims", "warned"),
    [("default", False), ("in-memory", True), ("sqlite", False)],
)
async def test_prepare_warns_when_several_workers_claim_in_memory(
    claims: str,
    warned: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    redis_url: str,
) -> None:
    """Claims in memory quietly made "once across workers" "once per process"."""
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    sessions = SqliteSessionService(str(tmp_path / "sessions.db"))
    stores = Stores(locks=RedisChatLocks(redis_url))
    if claims == "in-memory":
        stores = Stores(locks=stores.locks, claims=InMemoryClaims())
    elif claims == "sqlite":
        stores = Stores(locks=stores.locks, claims=SqliteClaims(str(tmp_path / "claims.db")))
    app = AdkApp(scripted_agent([]), app_name="app", session_service=sessions, stores=stores)
    try:
        with caplog.at_level("WARNING", logger="adk_asgi"):
            await app.prepare()
    finally:
        await app.aclose()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == ([CLAIMS_IN_MEMORY] if warned else [])


CLAIMS_IN_MEMORY = (
    "adk_asgi: several workers claim answers each in its own memory: an approval may be acted "
    "on once per worker, not once. Pass stores=Stores(claims=...), a store the workers share "
    "(docs/deployment.md#exactly-once)."
)
