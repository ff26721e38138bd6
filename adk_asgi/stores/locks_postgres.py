"""Per-chat locks shared by every worker through PostgreSQL advisory locks
(``pip install 'adk-asgi[postgres]'``), for deployments that already run Postgres.

A chat's lock is a session-level advisory lock on a 64-bit hash of its key, taken with
``pg_try_advisory_lock`` on a connection the run keeps until it ends. Postgres releases it when
that connection goes away, so a worker that dies never keeps a chat. Fencing tokens come from
one sequence (``adk_asgi_lock_fence``), so they grow with every grant of any chat.

Each held chat holds one connection of the pool for its whole run (a live connection's run lasts
as long as the socket): size ``max_connections`` for the chats served at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

from adk_asgi.stores.locks import ChatKey, ChatLocks, Lease, busy

logger = logging.getLogger("adk_asgi")

_SEQUENCE: Final = "adk_asgi_lock_fence"
_CREATION_LOCK: Final = 0x61646B5F61736769  # "adk_asgi": the advisory lock around creating it


class PostgresChatLocks(ChatLocks):
    """``PostgresChatLocks("postgresql://user@host/db")`` (an asyncpg DSN).

    ``poll``: seconds between attempts while a chat is busy. ``max_connections``: the pool's
    size, the most chats this process can hold at once.
    """

    def __init__(self, dsn: str, *, poll: float = 0.025, max_connections: int = 50) -> None:
        if not poll > 0:
            raise ValueError("poll must be > 0 seconds")
        self.dsn = dsn
        self.poll = poll
        self.max_connections = max_connections
        self._pool: Any = None
        self._opening = asyncio.Lock()
        self._active = 0

    def __len__(self) -> int:
        return self._active

    def hold(self, key: ChatKey, wait: float) -> AbstractAsyncContextManager[Lease]:
        return self._hold(key, wait)

    async def _connections(self) -> Any:
        async with self._opening:
            if self._pool is None:
                import asyncpg  # type: ignore[import-untyped]  # optional: imported when used

                pool = await asyncpg.create_pool(
                    self.dsn, min_size=0, max_size=self.max_connections
                )
                async with pool.acquire() as connection, connection.transaction():
                    # ``if not exists`` is not safe against a concurrent create (the catalog's
                    # unique index): workers starting together take turns.
                    await connection.execute("select pg_advisory_xact_lock($1)", _CREATION_LOCK)
                    await connection.execute(f"create sequence if not exists {_SEQUENCE}")
                self._pool = pool
        return self._pool

    @asynccontextmanager
    async def _hold(self, key: ChatKey, wait: float) -> AsyncIterator[Lease]:
        lock_id = _lock_id(key)
        self._active += 1
        try:
            pool = await self._connections()
            try:
                async with asyncio.timeout(wait):
                    connection = await pool.acquire()
            except TimeoutError:
                raise busy(wait) from None
            try:
                lease = Lease(await self._acquire(connection, lock_id, wait))
                try:
                    yield lease
                finally:
                    await self._release(connection, lock_id, lease)
            finally:
                await pool.release(connection)
        finally:
            self._active -= 1

    async def _acquire(self, connection: Any, lock_id: int, wait: float) -> int:
        try:
            async with asyncio.timeout(wait):
                # Another worker holds it: nothing here can be woken when it is released.
                while not await connection.fetchval("select pg_try_advisory_lock($1)", lock_id):  # noqa: ASYNC110
                    await asyncio.sleep(self.poll)
        except TimeoutError:
            raise busy(wait) from None
        return int(await connection.fetchval(f"select nextval('{_SEQUENCE}')"))

    async def _release(self, connection: Any, lock_id: int, lease: Lease) -> None:
        try:
            released = await connection.fetchval("select pg_advisory_unlock($1)", lock_id)
        except Exception:  # the connection is gone, and with it the lock
            released = False
        if not released:
            lease.lost = True
            logger.error("adk_asgi: a chat lock was lost while its run went on")

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


def _lock_id(key: ChatKey) -> int:
    """The chat's advisory lock id: a signed 64-bit hash of its key (stable across workers)."""
    digest = hashlib.blake2b("\x1f".join(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)
