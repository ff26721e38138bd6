"""Claims in the file of ADK's ``SqliteSessionService`` (aiosqlite, no SQLAlchemy): the table
of :mod:`.claims_sql`, written by every process that opens the file."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection

import aiosqlite

from adk_asgi.stores.claims import Claims
from adk_asgi.stores.locks import ChatKey

TABLE = "adk_asgi_claims"


def rows(key: ChatKey, answer_ids: Collection[str]) -> list[dict[str, object]]:
    app_name, user_id, chat_id = key
    now = time.time()
    return [
        {"app_name": app_name, "user_id": user_id, "chat_id": chat_id, "answer_id": answer_id}
        | {"claimed_at": now}
        for answer_id in sorted(set(answer_ids))
    ]


_CREATE = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    app_name TEXT NOT NULL, user_id TEXT NOT NULL, chat_id TEXT NOT NULL,
    answer_id TEXT NOT NULL, claimed_at REAL NOT NULL,
    PRIMARY KEY (app_name, user_id, chat_id, answer_id))"""
_INSERT = (
    f"INSERT INTO {TABLE} (app_name, user_id, chat_id, answer_id, claimed_at) "
    "VALUES (:app_name, :user_id, :chat_id, :answer_id, :claimed_at)"
)


_DELETE = f"DELETE FROM {TABLE} WHERE app_name = ? AND user_id = ? AND chat_id = ?"


class SqliteClaims(Claims):
    def __init__(self, path: str, *, uri: bool = False, timeout: float = 30.0) -> None:
        self.path = path
        self.uri = uri
        self.timeout = timeout
        """How long a claim waits for another process's write to the file to end."""
        self._ready = False

    async def prepare(self) -> None:
        async with aiosqlite.connect(self.path, uri=self.uri, timeout=self.timeout) as db:
            await db.execute(_CREATE)
            await db.commit()
        self._ready = True

    async def claim(self, key: ChatKey, answer_ids: Collection[str]) -> bool:
        if not self._ready:
            await self.prepare()
        async with aiosqlite.connect(self.path, uri=self.uri, timeout=self.timeout) as db:
            try:
                await db.executemany(_INSERT, rows(key, answer_ids))
                await db.commit()
            except sqlite3.IntegrityError:
                await db.rollback()
                return False
        return True

    async def forget(self, key: ChatKey) -> None:
        if not self._ready:
            await self.prepare()
        async with aiosqlite.connect(self.path, uri=self.uri, timeout=self.timeout) as db:
            await db.execute(_DELETE, key)
            await db.commit()
