"""Claims in the session database of ADK's ``DatabaseSessionService``: a table next to ADK's
own, on its SQLAlchemy engine (PostgreSQL, MySQL, SQLite).

One row per claimed answer, keyed by ``(app, user, chat, answer id)``; the primary key makes the
claim atomic on every engine, and inserting a request's answers in one transaction makes it
all-or-nothing. The rows are few (one per answered tool call) and are kept, like the events,
until the chat is deleted.

:mod:`.claims_sqlite` keeps the same table in the file of ADK's ``SqliteSessionService``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from sqlalchemy import Column, Float, MetaData, String, Table, delete, insert
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_asgi.stores.claims import Claims
from adk_asgi.stores.claims_sqlite import TABLE, rows
from adk_asgi.stores.locks import ChatKey

__all__ = ["SqlClaims"]

_metadata = MetaData()
_table = Table(
    TABLE,
    _metadata,
    Column("app_name", String(128), primary_key=True),
    Column("user_id", String(128), primary_key=True),
    Column("chat_id", String(128), primary_key=True),
    Column("answer_id", String(256), primary_key=True),
    Column("claimed_at", Float, nullable=False),
)


class SqlClaims(Claims):
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._ready = False

    async def prepare(self) -> None:
        async with self.engine.begin() as conn:
            await conn.run_sync(_metadata.create_all, checkfirst=True)
        self._ready = True

    async def _prepare_lazily(self) -> None:
        """Without ``prepare()`` at start-up the first claims create the table; two workers
        doing that at once on PostgreSQL make one fail (its catalog's unique index), and the
        winner's table is there when it tries again."""
        for attempt in range(3):
            try:
                await self.prepare()
                return
            except DBAPIError:
                if attempt == 2:
                    raise
                await asyncio.sleep(0.1)

    async def claim(self, key: ChatKey, answer_ids: Collection[str]) -> bool:
        if not self._ready:
            await self._prepare_lazily()
        try:
            async with self.engine.begin() as conn:
                await conn.execute(insert(_table), rows(key, answer_ids))
        except IntegrityError:
            return False
        return True

    async def forget(self, key: ChatKey) -> None:
        if not self._ready:
            await self._prepare_lazily()
        app_name, user_id, chat_id = key
        chat = delete(_table).where(
            _table.c.app_name == app_name,
            _table.c.user_id == user_id,
            _table.c.chat_id == chat_id,
        )
        async with self.engine.begin() as conn:
            await conn.execute(chat)
