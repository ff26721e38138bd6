"""Per-chat locks shared by every process that opens one SQLite file: leases in a table of the
session database itself, so two workers on one SQLite file need no other server.

SQLite's own file lock only lasts a transaction, and a run lasts seconds to minutes, so a
chat's lock is a *lease*: a row ``(chat, token, expires)`` of :data:`TABLE`. Taking it is one
``BEGIN IMMEDIATE`` transaction (SQLite lets one writer in at a time, so two processes cannot
both find the row free): the row is missing or expired, so it is written with a new fencing
token and an expiry ``ttl`` seconds ahead. A task renews it every ``ttl / 3`` while the run goes
on, but only while the row still holds this grant's token; release deletes the row only if it
still holds that token, so a lease that ran out never releases its successor's. A worker killed
while holding a chat keeps it for at most ``ttl`` seconds, then anyone may take it.

Fencing tokens come from one counter row (:data:`FENCE_TABLE`), so they grow with every grant of
any chat, as :mod:`.locks_postgres`'s sequence does. A busy chat is polled with a read first,
so that waiting requests do not queue for the file's write lock that the runs need.

Expiry compares ``time.time()`` of the processes involved: they share a file, so they share a
host (SQLite over a network file system is not supported by SQLite itself).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Final

import aiosqlite

from adk_asgi.stores.locks import ChatKey, ChatLocks, Lease, LockUnavailable, busy, let_go

logger = logging.getLogger("adk_asgi")

TABLE: Final = "adk_asgi_locks"
FENCE_TABLE: Final = "adk_asgi_lock_fence"
_CREATE: Final = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} "
    "(chat TEXT PRIMARY KEY, token INTEGER NOT NULL, expires REAL NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {FENCE_TABLE} "
    "(id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)",
)
_EXPIRES: Final = f"SELECT expires FROM {TABLE} WHERE chat = ?"


class SqliteChatLocks(ChatLocks):
    """``SqliteChatLocks("/path/to/sessions.db")``: leases in that file (``uri=True`` for a
    ``file:`` URI).

    ``ttl``: seconds a lease outlives a worker that died holding it. ``poll``: seconds between
    looks while a chat is busy. ``timeout``: how long one statement waits for another
    process's write to the file to end (SQLite's busy timeout; 5 s, the default of Python's
    ``sqlite3`` that ADK's connections have too).
    """

    def __init__(
        self,
        path: str,
        *,
        uri: bool = False,
        ttl: float = 30.0,
        poll: float = 0.025,
        timeout: float = 5.0,
    ) -> None:
        if not ttl > 0 or not poll > 0 or not timeout > 0:
            raise ValueError("ttl, poll and timeout must be > 0 seconds")
        self.path = path
        self.uri = uri
        self.ttl = ttl
        self.poll = poll
        self.timeout = timeout
        self._ready = False
        self._active = 0

    def __repr__(self) -> str:
        return f"SqliteChatLocks({self.path!r})"

    def __len__(self) -> int:
        return self._active

    def hold(self, key: ChatKey, wait: float) -> AbstractAsyncContextManager[Lease]:
        return self._hold(key, wait)

    def _connect(self) -> aiosqlite.Connection:
        return aiosqlite.connect(
            self.path, uri=self.uri, timeout=self.timeout, isolation_level=None
        )

    @asynccontextmanager
    async def _hold(self, key: ChatKey, wait: float) -> AsyncIterator[Lease]:
        chat = "\x1f".join(key)
        self._active += 1
        try:
            async with self._connect() as db:
                if not self._ready:
                    await self._create(db)
                lease = Lease(await self._acquire(db, chat, wait))
                renewal = asyncio.create_task(
                    self._keep(db, chat, lease), name="adk_asgi lock renewal"
                )
                try:
                    yield lease
                finally:
                    await let_go(self._let_go(renewal, db, chat, lease))
        finally:
            self._active -= 1

    async def _create(self, db: aiosqlite.Connection) -> None:
        for statement in _CREATE:
            await db.execute(statement)
        self._ready = True

    async def _acquire(self, db: aiosqlite.Connection, chat: str, wait: float) -> int:
        """The lease's token, within ``wait`` seconds: :class:`ChatBusy` when it stayed held,
        :class:`LockUnavailable` when another process kept the whole file locked for
        ``timeout`` seconds (or what was left of ``wait``): the sessions are stuck as well."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            patience = max(min(deadline - loop.time(), self.timeout), 0.01)
            try:  # a statement waits for the file no longer than the request does
                await _busy_timeout(db, patience)
                if not self._ready:
                    await self._create(db)
                # Another process holds it: nothing here can be woken when it is released.
                if await self._free(db, chat) and (token := await self._attempt(db, chat)):
                    return token  # (no await in between: a cancellation would lose the lease)
            except sqlite3.OperationalError as exc:  # "database is locked"
                raise LockUnavailable(
                    f"the chat's lock could not be read: {self.path!r} stayed locked for "
                    f"{round(patience, 2):g} s"
                ) from exc
            left = deadline - loop.time()
            if left <= 0:
                raise busy(wait)
            await asyncio.sleep(min(self.poll, left))

    async def _free(self, db: aiosqlite.Connection, chat: str) -> bool:
        """A read, taking no write lock: whether the chat looks free (or its lease ran out)."""
        async with db.execute(_EXPIRES, (chat,)) as cursor:
            row = await cursor.fetchone()
        return row is None or float(row[0]) <= time.time()

    async def _attempt(self, db: aiosqlite.Connection, chat: str) -> int:
        """One try at taking the lease; its token, or 0. A cancellation that lands while the
        transaction runs waits for it, and gives back a lease it took (else the chat would stay
        taken until the lease ran out)."""
        attempt = asyncio.ensure_future(self._take(db, chat))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            with suppress(Exception):
                if token := await attempt:
                    await self._release(db, chat, token)
            raise

    async def _take(self, db: aiosqlite.Connection, chat: str) -> int:
        await db.execute("BEGIN IMMEDIATE")
        try:
            async with db.execute(_EXPIRES, (chat,)) as cursor:
                row = await cursor.fetchone()
            now = time.time()
            if row is not None and float(row[0]) > now:
                await db.execute("ROLLBACK")
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
                f"INSERT OR REPLACE INTO {TABLE} (chat, token, expires) VALUES (?, ?, ?)",
                (chat, token, now + self.ttl),
            )
            await db.execute("COMMIT")
            await _busy_timeout(db, self.timeout)  # renewals wait for the file as long as any
        except BaseException:
            with suppress(Exception):
                await db.execute("ROLLBACK")
            raise
        if row is not None:
            logger.warning("adk_asgi: a chat lock whose holder stopped renewing it was taken over")
        return token

    async def _keep(self, db: aiosqlite.Connection, chat: str, lease: Lease) -> None:
        """Renew the lease every ``ttl / 3`` until cancelled; mark it lost if it is gone."""
        renew = f"UPDATE {TABLE} SET expires = ? WHERE chat = ? AND token = ?"
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                cursor = await db.execute(renew, (time.time() + self.ttl, chat, lease.token))
                renewed = cursor.rowcount
                await cursor.close()
            except Exception:  # the file stayed locked: try again until the lease runs out
                logger.warning("adk_asgi: renewing a chat lock failed", exc_info=True)
                continue
            if not renewed:
                lease.lost = True
                logger.error("adk_asgi: a chat lock expired while its run went on: %r", chat)
                return

    async def _let_go(
        self, renewal: asyncio.Task[None], db: aiosqlite.Connection, chat: str, lease: Lease
    ) -> None:
        renewal.cancel()
        await asyncio.wait([renewal])
        await self._release(db, chat, lease.token)

    async def _release(self, db: aiosqlite.Connection, chat: str, token: int) -> None:
        try:
            await db.execute(f"DELETE FROM {TABLE} WHERE chat = ? AND token = ?", (chat, token))
        except Exception:  # the lease runs out by itself
            logger.warning("adk_asgi: releasing a chat lock failed", exc_info=True)


async def _busy_timeout(db: aiosqlite.Connection, seconds: float) -> None:
    await db.execute(f"PRAGMA busy_timeout = {round(seconds * 1000)}")
