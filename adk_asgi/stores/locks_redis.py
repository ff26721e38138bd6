"""Per-chat locks shared by every worker through Redis (``pip install 'adk-asgi[redis]'``).

The classic single-instance Redis lock: ``SET key token NX PX ttl`` takes it (in one script
with drawing the token, so tokens grow in the order the chat is granted), a renewal task
extends it while the run goes on (``PEXPIRE`` only if the key still holds this grant's token),
and release deletes it only if it still holds that token (compare-and-delete), so a lease that
ran out can never release its successor's lock. The token is a fencing token: ``INCR`` of a
per-chat counter, so it grows with every grant of the chat, across workers and restarts. The
counter expires a week (:data:`FENCE_KEEP`) after the chat's last grant, so Redis does not keep
a key for every chat ever served; a chat idle that long starts again at 1, when no holder of
an older grant can still be running (a lease is renewed every ``ttl / 3`` or marked lost).

A worker that dies keeps the chat for at most ``ttl`` seconds. A lease that cannot be renewed
(Redis unreachable for longer than the ttl) is marked ``lost``; exactly-once effects must not
rest on the lock alone (docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, Final

from adk_asgi.stores.locks import ChatKey, ChatLocks, Lease, busy, let_go
from adk_asgi.stores.redis_client import cancellable, client_of

__all__ = ["RedisChatLocks"]

logger = logging.getLogger("adk_asgi")

_ACQUIRE: Final = """
if redis.call('exists', KEYS[1]) == 0 then
  local token = redis.call('incr', KEYS[2])
  redis.call('pexpire', KEYS[2], ARGV[2])
  redis.call('set', KEYS[1], token, 'PX', ARGV[1])
  return token
end
return 0
"""
FENCE_KEEP: Final = 7 * 24 * 3600.0
"""Seconds a chat's fencing counter outlives its last grant."""
RENEW_IF_HELD: Final = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
"""Extend ``KEYS[1]`` by ``ARGV[2]`` ms only if it still holds ``ARGV[1]`` (also used by the
Redis stream store for its leases)."""
DELETE_IF_HELD: Final = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""
"""Delete ``KEYS[1]`` only if it still holds ``ARGV[1]``: compare-and-delete."""


class RedisChatLocks(ChatLocks):
    """``RedisChatLocks("redis://host:6379/0")``, or an existing ``redis.asyncio.Redis``.

    ``ttl``: seconds a lock outlives a worker that died holding it; it is renewed every
    ``ttl / 3`` while held. ``poll``: seconds between attempts while a chat is busy.
    """

    def __init__(
        self,
        redis: Any,
        *,
        prefix: str = "adk_asgi:lock:",
        ttl: float = 10.0,
        poll: float = 0.025,
    ) -> None:
        self._client: Any
        self._client, self._owns_client = client_of(redis)
        if not ttl > 0 or not poll > 0:
            raise ValueError("ttl and poll must be > 0 seconds")
        self.prefix = prefix
        self.ttl = ttl
        self.poll = poll
        self._fence_keep_ms = round(max(FENCE_KEEP, 100 * ttl) * 1000)
        self._take = self._client.register_script(_ACQUIRE)
        self._renew = self._client.register_script(RENEW_IF_HELD)
        self._release = self._client.register_script(DELETE_IF_HELD)
        self._active = 0

    def __len__(self) -> int:
        return self._active

    def hold(self, key: ChatKey, wait: float) -> AbstractAsyncContextManager[Lease]:
        return self._hold(key, wait)

    def _name(self, key: ChatKey) -> str:
        return self.prefix + "\x1f".join(key)

    @asynccontextmanager
    async def _hold(self, key: ChatKey, wait: float) -> AsyncIterator[Lease]:
        name = self._name(key)
        self._active += 1
        try:
            lease = await self._acquire(name, wait)
            renewal = asyncio.create_task(self._keep(name, lease), name="adk_asgi lock renewal")
            try:
                yield lease
            finally:
                await let_go(self._let_go(renewal, name, lease))
        finally:
            self._active -= 1

    async def _let_go(self, renewal: asyncio.Task[None], name: str, lease: Lease) -> None:
        renewal.cancel()
        await asyncio.wait([renewal])
        await cancellable(self._release(keys=[name], args=[lease.token]))

    async def _acquire(self, name: str, wait: float) -> Lease:
        ttl_ms = max(1, round(self.ttl * 1000))
        try:
            async with asyncio.timeout(wait):
                # Another worker holds it: nothing here can be woken when it is released.
                keys, args = [name, name + ":fence"], [ttl_ms, self._fence_keep_ms]
                while not (token := await cancellable(self._take(keys=keys, args=args))):  # noqa: ASYNC110
                    await asyncio.sleep(self.poll)
                return Lease(int(token))
        except TimeoutError:
            raise busy(wait) from None

    async def _keep(self, name: str, lease: Lease) -> None:
        """Renew the lease every ``ttl / 3`` until cancelled; mark it lost if it is gone."""
        ttl_ms = max(1, round(self.ttl * 1000))
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                renewed = await cancellable(self._renew(keys=[name], args=[lease.token, ttl_ms]))
            except Exception:  # Redis unreachable: try again until the lease runs out
                logger.warning("adk_asgi: renewing a chat lock failed", exc_info=True)
                continue
            if not renewed:
                lease.lost = True
                logger.error("adk_asgi: a chat lock expired while its run went on: %s", name)
                return

    async def aclose(self) -> None:
        if self._owns_client:
            with suppress(Exception):
                await self._client.aclose()
