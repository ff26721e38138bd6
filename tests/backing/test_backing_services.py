"""The session's real PostgreSQL and Redis (``tests/backing_services.py``) are there and do what
the locking and durable-state backends will rely on: advisory locks, ADK's DatabaseSessionService
shared between two instances, and Redis' ``SET NX PX``."""

from __future__ import annotations

import asyncio
import time
import uuid

import asyncpg
import pytest
import redis.asyncio as aioredis
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.genai import types

from tests.backing_services import Postgres

pytestmark = pytest.mark.backing


async def test_postgres_answers_and_advisory_locks_exclude_other_connections(
    postgres: Postgres,
) -> None:
    assert postgres.url.startswith("postgresql+asyncpg://")
    assert postgres.dsn == "postgresql://" + postgres.url.removeprefix("postgresql+asyncpg://")
    key = 7_341_289  # any bigint; the tests share the server, so keep it to this test
    first = await asyncpg.connect(postgres.dsn)
    try:
        second = await asyncpg.connect(postgres.dsn)
        try:
            assert await first.fetchval("select 1") == 1
            assert await first.fetchval("select current_database()") == postgres.database
            assert await first.fetchval("show server_encoding") == "UTF8"
            assert first.get_server_pid() != second.get_server_pid()

            assert await first.fetchval("select pg_try_advisory_lock($1)", key) is True
            # Session-level advisory locks are re-entrant for their holder, never shared.
            assert await second.fetchval("select pg_try_advisory_lock($1)", key) is False
            holders = await second.fetch(
                "select pid from pg_locks where locktype = 'advisory' and granted"
                " and ((classid::bigint << 32) | objid::bigint) = $1",
                key,
            )
            assert [row["pid"] for row in holders] == [first.get_server_pid()]

            assert await first.fetchval("select pg_advisory_unlock($1)", key) is True
            assert await second.fetchval("select pg_try_advisory_lock($1)", key) is True
            assert await first.fetchval("select pg_try_advisory_lock($1)", key) is False
            assert await second.fetchval("select pg_advisory_unlock($1)", key) is True
        finally:
            await second.close()
    finally:
        await first.close()


async def test_adk_database_session_service_shares_sessions_between_instances(
    postgres: Postgres,
) -> None:
    app_name = f"backing-{uuid.uuid4().hex}"  # the database is shared by the session's tests
    event = Event(
        invocation_id="inv-1",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="Approve the payment?")]),
        actions=EventActions(state_delta={"pending": "payment-1", "user:name": "Ada"}),
    )
    async with DatabaseSessionService(db_url=postgres.url) as writer:
        session = await writer.create_session(app_name=app_name, user_id="u1", state={"n": 1})
        await writer.append_event(session, event)

    async with DatabaseSessionService(db_url=postgres.url) as reader:
        stored = await reader.get_session(app_name=app_name, user_id="u1", session_id=session.id)
        listed = await reader.list_sessions(app_name=app_name, user_id="u1")

    assert stored is not None
    assert stored.id == session.id
    assert stored.state == {"n": 1, "pending": "payment-1", "user:name": "Ada"}
    assert [(e.id, e.author, e.invocation_id) for e in stored.events] == [
        (event.id, "user", "inv-1")
    ]
    stored_content = stored.events[0].content
    assert stored_content is not None and stored_content.parts is not None
    assert [part.text for part in stored_content.parts] == ["Approve the payment?"]
    assert [s.id for s in listed.sessions] == [session.id]


async def test_redis_set_nx_px_takes_a_key_once_until_it_expires(redis_url: str) -> None:
    assert redis_url.startswith("redis://127.0.0.1:") and redis_url.endswith("/0")
    client = aioredis.from_url(redis_url)
    key = f"backing:lock:{uuid.uuid4().hex}"  # the server is shared by the session's tests
    try:
        assert await client.ping() is True
        assert await client.set(key, "owner-1", nx=True, px=1000) is True
        assert await client.set(key, "owner-2", nx=True, px=1000) is None
        assert await client.get(key) == b"owner-1"
        assert 0 < await client.pttl(key) <= 1000

        deadline = time.monotonic() + 5.0
        while await client.exists(key):
            assert time.monotonic() < deadline, "the key outlived its 1000 ms expiry by 4 s"
            await asyncio.sleep(0.05)
        assert await client.get(key) is None
        assert await client.set(key, "owner-2", nx=True, px=1000) is True
        assert await client.get(key) == b"owner-2"
    finally:
        await client.delete(key)
        await client.aclose()
