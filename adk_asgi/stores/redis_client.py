"""The Redis client the bridge builds from a URL (``RedisChatLocks(url)``,
``RedisStreamStore(url)``).

``redis.asyncio.from_url`` gives a pool that *fails* a command (``MaxConnectionsError``) once
all its connections are in use: 100 in redis-py 8. A worker with a hundred chats streaming at
once has more commands than that in flight (each stream's writes and stop checks, each
resumed reader's ``XREAD BLOCK``, each lock's renewal), and its chats would fail under exactly
the load a shared Redis is there for (measured: ``bench.scale_out --redis-from-url``). A
blocking pool makes a command wait for a free connection instead, as a database pool does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Final, TypeVar

T = TypeVar("T")

MAX_CONNECTIONS: Final = 256
"""Connections per client (a worker's locks or stream store); Redis allows 10,000 clients."""
WAIT_FOR_CONNECTION: Final = 20.0
"""Seconds a command waits for a free connection before it fails."""


def client_of(redis: Any) -> tuple[Any, bool]:
    """The client for ``redis`` (a URL, or a ``redis.asyncio.Redis`` the app owns), and whether
    the bridge owns it (built here from the URL, so closed by the bridge)."""
    if isinstance(redis, str):
        return redis_from_url(redis), True
    return redis, False


def redis_from_url(url: str) -> Any:
    """A ``redis.asyncio.Redis`` for ``url`` on a blocking pool it owns (closed with it)."""
    import redis.asyncio as aioredis  # an optional dependency: imported only when used

    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=MAX_CONNECTIONS, timeout=WAIT_FOR_CONNECTION
    )
    return aioredis.Redis.from_pool(pool)


async def cancellable(command: Awaitable[T]) -> T:
    """``await command`` (a redis-py call), then raise a cancellation it swallowed.

    redis-py bounds a socket write with ``asyncio.wait_for``, which before Python 3.12 returns
    the result instead of raising when a cancellation lands just as the write completes. The
    cancelled task then runs on, and a loop that talks to Redis until it is cancelled (a stop
    check, a lease renewal, a wait for a busy chat) never ends: measured, a quarter of random
    cancels of such a loop, and a fifth of the SSE answers of ``bench.scale_out`` kept their
    chat locked. A cancellation asked for during the command and not delivered is raised
    here; one that was delivered and handled (``uncancel()``) is not.
    """
    task = asyncio.current_task()
    asked = task.cancelling() if task is not None else 0
    result = await command
    if task is not None and task.cancelling() > asked:
        raise asyncio.CancelledError
    return result
