"""The chat locks and claims an app gets without ``Stores(locks=)`` /
``Stores(claims=)``: kept where its sessions are kept.

Two runs of one chat must never overlap, in one worker or across several (ADK's SQL session
services refuse the later one's writes with ``StaleSessionError``, which used to reach the user
as an ``error`` chunk, both messages lost). Every worker of a deployment on a database session
service shares that database, so the lock is kept there, and several workers are correct with
no more configuration than the sessions themselves:

* PostgreSQL (``DatabaseSessionService``): advisory locks, :class:`.PostgresChatLocks` on the
  session database (asyncpg, the ``postgres`` extra).
* SQLite, native (``SqliteSessionService``) or through SQLAlchemy (``sqlite+aiosqlite``):
  leases in a table of the session file, :class:`.SqliteChatLocks`.
* In-memory sessions (one process's anyway), an in-memory SQLite database, and every other
  service: :class:`.InMemoryChatLocks` (``AdkApp.prepare()`` warns when several workers run).

:func:`describe` names a backend for ``prepare()``'s log line, without a password.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from adk_asgi.adk.private import sqlite_location
from adk_asgi.stores.claims import Claims, InMemoryClaims
from adk_asgi.stores.locks import ChatLocks, InMemoryChatLocks

logger = logging.getLogger("adk_asgi")


def locks_for(session_service: BaseSessionService) -> ChatLocks:
    """The locks that live where ``session_service`` keeps the sessions (as ``claims_for``
    picks the claim store)."""
    if isinstance(session_service, SqliteSessionService):
        name, path, uri = sqlite_location(session_service)
        if _in_memory(name, path, uri):
            return InMemoryChatLocks()  # the database is this process's alone
        from adk_asgi.stores.locks_sqlite import SqliteChatLocks

        return SqliteChatLocks(path, uri=uri)
    try:
        from google.adk.sessions.database_session_service import DatabaseSessionService
    except ImportError:  # pragma: no cover - SQLAlchemy absent: no database sessions either
        return InMemoryChatLocks()
    if isinstance(session_service, DatabaseSessionService):
        return _sql_locks(session_service.db_engine.url)
    return InMemoryChatLocks()


def _sql_locks(url: Any) -> ChatLocks:
    """The locks of a SQLAlchemy engine's database (``url``: its ``sqlalchemy.URL``)."""
    backend = url.get_backend_name()
    if backend == "sqlite":
        database = url.database or ""
        uri = str(url.query.get("uri", "")).lower() in ("true", "1")
        if _in_memory(database, database, uri):
            return InMemoryChatLocks()
        from adk_asgi.stores.locks_sqlite import SqliteChatLocks

        return SqliteChatLocks(database, uri=uri)
    if backend == "postgresql":
        if importlib.util.find_spec("asyncpg") is None:
            logger.warning(
                "adk_asgi: chat locks on PostgreSQL need asyncpg (pip install "
                "'adk-asgi[postgres]'); chats are locked in this process only"
            )
            return InMemoryChatLocks()
        from adk_asgi.stores.locks_postgres import PostgresChatLocks

        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresChatLocks(dsn)
    return InMemoryChatLocks()


def _in_memory(name: str, path: str, uri: bool) -> bool:
    if name in ("", ":memory:") or path in ("", ":memory:"):
        return True
    return uri and (path.startswith("file::memory:") or "mode=memory" in path)


def describe(backend: object) -> str:
    """``backend`` (a lock or claim store) as a log line names it: its class, and where it
    keeps its data, without a password."""
    name = type(backend).__name__
    where: str | None = None
    if (path := getattr(backend, "path", None)) is not None:
        where = str(path)
    elif (dsn := getattr(backend, "dsn", None)) is not None:
        from sqlalchemy.engine import make_url

        where = make_url(str(dsn)).render_as_string(hide_password=True)
    elif (engine := getattr(backend, "engine", None)) is not None:
        where = engine.url.render_as_string(hide_password=True)
    elif name.startswith("InMemory"):
        where = "this process only"
    return f"{name} ({where})" if where else name


def claims_for(session_service: BaseSessionService) -> Claims:
    """The claim store that lives where ``session_service`` keeps the sessions: a table next to
    ADK's own for its SQL services, so a claim is as durable and as shared as the chat."""
    if isinstance(session_service, SqliteSessionService):
        from adk_asgi.stores.claims_sqlite import SqliteClaims

        where = sqlite_location(session_service)
        if where.path in ("", ":memory:"):
            return InMemoryClaims()  # the database is this process's alone
        return SqliteClaims(where.connect, uri=where.uri)
    try:
        from google.adk.sessions.database_session_service import DatabaseSessionService
    except ImportError:  # pragma: no cover - SQLAlchemy absent: no database sessions either
        return InMemoryClaims()
    if isinstance(session_service, DatabaseSessionService):
        from adk_asgi.stores.claims_sql import SqlClaims

        return SqlClaims(session_service.db_engine)
    return InMemoryClaims()
