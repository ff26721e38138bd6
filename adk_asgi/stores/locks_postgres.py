"""Per-chat locks shared by every worker through PostgreSQL (``pip install
'adk-asgi[postgres]'``), for deployments that already run Postgres.

A chat's lock is a lease row of :data:`TABLE` (:mod:`.leases`): a pooled connection is borrowed
only to take, renew or release it, so a thousand idle live sockets pin no connection. Expiry is
reckoned on the database's clock, so the workers' clocks need not agree.

A worker killed while it holds chats frees them at once, not after the ttl: each process holds
one session-level advisory lock on its holder id, on a connection of its own, and a row whose
holder's advisory lock can be taken belongs to a process that is gone (PostgreSQL drops a
session's advisory locks with its connection). A stalled worker (stopped, cut off) keeps its
connection, so its chats free when their leases run out. Fencing tokens come from one sequence
(``adk_asgi_lock_fence``), so they grow with every grant of any chat.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Mapping
from typing import Any, Final

from adk_asgi.stores.leases import LeasedChatLocks

__all__ = ["PostgresChatLocks"]

logger = logging.getLogger("adk_asgi")

TABLE: Final = "adk_asgi_locks"
_SEQUENCE: Final = "adk_asgi_lock_fence"
_CREATION_LOCK: Final = 0x61646B5F61736769  # "adk_asgi": the advisory lock around creating them
_CREATE: Final = (
    f"create sequence if not exists {_SEQUENCE}",
    f"create table if not exists {TABLE} (chat text primary key, token bigint not null, "
    "holder bigint not null, expires timestamptz not null)",
)
# One statement takes a free, expired or orphaned row (its holder's advisory lock is free: the
# holder's connection is gone). ``xmax <> 0``: the row was there and is taken over.
_TAKE: Final = f"""
insert into {TABLE} as held (chat, token, holder, expires)
values ($1, nextval('{_SEQUENCE}'), $2, clock_timestamp() + make_interval(secs => $3))
on conflict (chat) do update
set token = excluded.token, holder = excluded.holder, expires = excluded.expires
where held.expires <= clock_timestamp() or pg_try_advisory_xact_lock(held.holder)
returning token, xmax <> 0 as taken_over
"""
_RENEW: Final = f"""
update {TABLE} set expires = clock_timestamp() + make_interval(secs => $3)
where holder = $1 and chat = any($2::text[])
returning chat, token
"""
_DELETE: Final = f"delete from {TABLE} where chat = $1 and token = $2"


class PostgresChatLocks(LeasedChatLocks):
    """``PostgresChatLocks("postgresql://user@host/db")`` (an asyncpg DSN).

    ``ttl``: seconds a lease outlives a worker that stopped renewing it (stalled, cut off; a
    killed one frees its chats at once). ``poll``: seconds between attempts while a chat is
    busy. ``max_connections``: the pool's size, the most lock statements at once (a held chat
    takes none).
    """

    def __init__(
        self, dsn: str, *, ttl: float = 10.0, poll: float = 0.025, max_connections: int = 10
    ) -> None:
        super().__init__(ttl=ttl, poll=poll)
        self.dsn = dsn
        self.max_connections = max_connections
        self.holder = secrets.randbits(63)
        """This process's holder id: the key of its advisory lock, and of its rows."""
        self._pool: Any = None
        self._presence: Any = None
        self._opening = asyncio.Lock()

    async def _connections(self) -> Any:
        """The pool, with this process's advisory lock held (again, after its connection
        dropped: the rows it took meanwhile may have been taken over, as renewal finds)."""
        async with self._opening:
            import asyncpg  # type: ignore[import-untyped]  # optional: imported when used

            if self._pool is None:
                pool = await asyncpg.create_pool(
                    self.dsn, min_size=0, max_size=self.max_connections
                )
                async with pool.acquire() as connection, connection.transaction():
                    # ``if not exists`` is not safe against a concurrent create (the catalog's
                    # unique index): workers starting together take turns.
                    await connection.execute("select pg_advisory_xact_lock($1)", _CREATION_LOCK)
                    for statement in _CREATE:
                        await connection.execute(statement)
                self._pool = pool
            if self._presence is None or self._presence.is_closed():
                presence = await asyncpg.connect(self.dsn)
                await presence.execute("select pg_advisory_lock($1)", self.holder)
                self._presence = presence
        return self._pool

    async def _try_take(self, chat: str, patience: float) -> int:
        pool = await self._connections()
        try:
            async with asyncio.timeout(patience):
                row = await pool.fetchrow(_TAKE, chat, self.holder, self.ttl)
        except TimeoutError:  # the caller's wait ran out while the database was asked
            return 0
        if row is None:
            return 0
        if row["taken_over"]:
            logger.warning("adk_asgi: a chat lock whose holder stopped or died was taken over")
        return int(row["token"])

    async def _renew(self, chats: list[str]) -> Mapping[str, int]:
        pool = await self._connections()
        rows = await pool.fetch(_RENEW, self.holder, chats, self.ttl)
        return {row["chat"]: int(row["token"]) for row in rows}

    async def _delete(self, chat: str, token: int) -> bool:
        pool = await self._connections()
        return bool(await pool.execute(_DELETE, chat, token) == "DELETE 1")

    async def aclose(self) -> None:
        await self._stop_renewing()
        if self._presence is not None:
            await self._presence.close()
            self._presence = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
