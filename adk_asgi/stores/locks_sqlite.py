"""Per-chat locks shared by every process that opens one SQLite file: lease rows
(:mod:`.leases`) in a table of the session database itself, so two workers on one SQLite file
need no other server.

SQLite's own file lock only lasts a transaction, and a run lasts seconds to minutes, so a
chat's lock is a row ``(chat, token, holder, expires)`` of :data:`TABLE`. Taking it is one
``BEGIN IMMEDIATE`` transaction (SQLite lets one writer in at a time, so two processes cannot
both find the row free): the row is missing or expired, so it is written with a new fencing
token and an expiry ``ttl`` seconds ahead. A process renews all of its rows in one transaction
every ``ttl / 4``; a worker killed or stopped while holding a chat keeps it for at most ``ttl``
seconds (5 by default), then anyone may take it.

Each process talks to the file through one connection (one thread), whatever number of chats
it holds, and closes it while it holds none. Fencing tokens come from one counter row
(:data:`FENCE_TABLE`), so they grow with every grant of any chat, as :mod:`.locks_postgres`'s
sequence does. A busy chat is polled with a read first, so that waiting requests do not queue
for the file's write lock that the runs need.

Expiry compares ``time.time()`` of the processes involved: they share a file, so they share a
host (SQLite over a network file system is not supported by SQLite itself).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sqlite3
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Final

import aiosqlite

from adk_asgi.stores.leases import LeasedChatLocks
from adk_asgi.stores.locks import LockUnavailable

__all__ = ["SqliteChatLocks"]

logger = logging.getLogger("adk_asgi")

TABLE: Final = "adk_asgi_locks"
FENCE_TABLE: Final = "adk_asgi_lock_fence"
_CREATE: Final = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (chat TEXT PRIMARY KEY, token INTEGER NOT NULL, "
    "holder TEXT NOT NULL DEFAULT '', expires REAL NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {FENCE_TABLE} "
    "(id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)",
)
_EXPIRES: Final = f"SELECT expires FROM {TABLE} WHERE chat = ?"
_RENEW_AT_ONCE: Final = 500
"""Chats renewed per statement (SQLite bounds the number of a statement's parameters)."""


class SqliteChatLocks(LeasedChatLocks):
    """``SqliteChatLocks("/path/to/sessions.db")``: leases in that file (``uri=True`` for a
    ``file:`` URI).

    ``ttl``: seconds a lease outlives a worker that died or stalled holding it. ``poll``:
    seconds between looks while a chat is busy. ``timeout``: how long one statement waits for
    another process's write to the file to end (SQLite's busy timeout; 5 s, the default of
    Python's ``sqlite3`` that ADK's connections have too).
    """

    def __init__(
        self,
        path: str,
        *,
        uri: bool = False,
        ttl: float = 5.0,
        poll: float = 0.025,
        timeout: float = 5.0,
    ) -> None:
        super().__init__(ttl=ttl, poll=poll)
        if not timeout > 0:
            raise ValueError("timeout must be > 0 seconds")
        self.path = path
        self.uri = uri
        self.timeout = timeout
        self.holder = secrets.token_hex(8)
        """This process's holder id, on its rows."""
        self._db: aiosqlite.Connection | None = None
        self._ready = False
        self._turn = asyncio.Lock()

    def __repr__(self) -> str:
        return f"SqliteChatLocks({self.path!r})"

    @asynccontextmanager
    async def _connection(self, patience: float) -> AsyncIterator[aiosqlite.Connection]:
        """The process's connection, for one statement or transaction at a time; a statement
        waits ``patience`` seconds for another process's write, then
        :class:`~.LockUnavailable` (the sessions in that file are stuck as well)."""
        async with self._turn:
            try:
                if self._db is None:
                    self._db = await aiosqlite.connect(
                        self.path, uri=self.uri, timeout=patience, isolation_level=None
                    )
                else:
                    await self._db.execute(f"PRAGMA busy_timeout = {round(patience * 1000)}")
                if not self._ready:
                    await _create(self._db)
                    self._ready = True
                yield self._db
            except sqlite3.OperationalError as exc:  # "database is locked"
                raise LockUnavailable(
                    f"the chat's lock could not be read: {self.path!r} stayed locked for "
                    f"{round(patience, 2):g} s"
                ) from exc

    async def _try_take(self, chat: str, patience: float) -> int:
        patience = min(patience, self.timeout)
        async with self._connection(patience) as db:
            # A read first, taking no write lock: waiting requests do not queue for the file.
            async with db.execute(_EXPIRES, (chat,)) as cursor:
                row = await cursor.fetchone()
            if row is not None and float(row[0]) > time.time():
                return 0
            return await self._take(db, chat)

    async def _take(self, db: aiosqlite.Connection, chat: str) -> int:
        async with _transaction(db):
            async with db.execute(_EXPIRES, (chat,)) as cursor:
                row = await cursor.fetchone()
            now = time.time()
            if row is not None and float(row[0]) > now:
                return 0
            await db.execute(
                f"INSERT INTO {FENCE_TABLE} (id, value) VALUES (1, 1) "
                "ON CONFLICT (id) DO UPDATE SET value = value + 1"
            )
            async with db.execute(f"SELECT value FROM {FENCE_TABLE} WHERE id = 1") as cursor:
                fence = await cursor.fetchone()
            assert fence is not None
            token = int(fence[0])
            await db.execute(
                f"INSERT OR REPLACE INTO {TABLE} (chat, token, holder, expires) "
                "VALUES (?, ?, ?, ?)",
                (chat, token, self.holder, now + self.ttl),
            )
        if row is not None:
            logger.warning("adk_asgi: a chat lock whose holder stopped renewing it was taken over")
        return token

    async def _renew(self, chats: list[str]) -> Mapping[str, int]:
        kept: dict[str, int] = {}
        async with self._connection(self.timeout) as db, _transaction(db):
            expires = time.time() + self.ttl
            for start in range(0, len(chats), _RENEW_AT_ONCE):
                batch = chats[start : start + _RENEW_AT_ONCE]
                marks = ", ".join("?" * len(batch))
                await db.execute(
                    f"UPDATE {TABLE} SET expires = ? WHERE holder = ? AND chat IN ({marks})",
                    (expires, self.holder, *batch),
                )
                async with db.execute(
                    f"SELECT chat, token FROM {TABLE} WHERE holder = ? AND chat IN ({marks})",
                    (self.holder, *batch),
                ) as cursor:
                    kept.update({str(chat): int(token) async for chat, token in cursor})
        return kept

    async def _delete(self, chat: str, token: int) -> bool:
        async with self._connection(self.timeout) as db:
            cursor = await db.execute(
                f"DELETE FROM {TABLE} WHERE chat = ? AND token = ?", (chat, token)
            )
            deleted = cursor.rowcount
            await cursor.close()
        return bool(deleted)

    async def _idle(self) -> None:
        """The connection is closed while no chat is held (a thread and a file handle less;
        an app that is never closed leaks none)."""
        async with self._turn:
            if not self._active and self._db is not None:
                db, self._db = self._db, None
                await db.close()

    async def aclose(self) -> None:
        await self._stop_renewing()
        await self._idle()


async def _create(db: aiosqlite.Connection) -> None:
    for statement in _CREATE:
        await db.execute(statement)
    async with db.execute(f"PRAGMA table_info({TABLE})") as cursor:
        columns = {row[1] async for row in cursor}
    if "holder" not in columns:  # a file whose table an earlier release created
        await db.execute(f"ALTER TABLE {TABLE} ADD COLUMN holder TEXT NOT NULL DEFAULT ''")


@asynccontextmanager
async def _transaction(db: aiosqlite.Connection) -> AsyncIterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any exception or cancellation (the
    connection is shared: a transaction left open would swallow the next statements)."""
    try:  # (a cancellation at BEGIN still lets BEGIN run on the connection's thread)
        await db.execute("BEGIN IMMEDIATE")
        yield
    except BaseException:
        with suppress(Exception):
            await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")
