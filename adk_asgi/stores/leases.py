"""Chat locks kept as lease rows in a shared database, renewed by one task per process.

A live socket holds its chat for as long as it stays open, idle or not, so a lock must cost
nothing while it is held: no connection, no thread, no transaction. A chat's lock is therefore
a row ``(chat, token, holder, expires)``; a connection is borrowed only for the moment of taking,
renewing or releasing it.

* Taking it writes the row when there is none, or when the one there has expired (its holder
  stopped renewing it: dead, stalled, cut off) or its holder is known to be gone
  (:class:`.PostgresChatLocks` asks the database whether the holder's process is still
  connected). Each grant draws a new fencing token.
* One task per process renews every lease that process holds, in one statement, every
  ``ttl / RENEWALS_PER_TTL`` seconds. A lease whose row no longer carries its token was taken
  by another process after it expired: it is marked :attr:`~.Lease.lost` and logged.
* Releasing deletes the row only if it still carries the grant's token, so a holder whose
  lease ran out never frees its successor's chat.

So a dead or stalled holder frees its chat within ``ttl`` seconds (10 by default), well inside
``busy_timeout``, and the number of chats held at once is bounded by nothing but memory.
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Final

from adk_asgi.stores.locks import ChatKey, ChatLocks, Lease, busy, let_go

logger = logging.getLogger("adk_asgi")

RENEWALS_PER_TTL: Final = 4
"""Renewals within one ttl: three may fail (a database busy for a moment) before a lease runs
out."""


def chat_of(key: ChatKey) -> str:
    """The row key of a chat: its three ids joined by a separator no id may contain."""
    return "\x1f".join(key)


class LeasedChatLocks(ChatLocks):
    """The hold, renew and release cycle shared by the database-backed locks; a subclass
    says how a row is taken (:meth:`_try_take`), renewed (:meth:`_renew`) and deleted
    (:meth:`_delete`)."""

    def __init__(self, *, ttl: float, poll: float) -> None:
        if not ttl > 0 or not poll > 0:
            raise ValueError("ttl and poll must be > 0 seconds")
        self.ttl = ttl
        self.poll = poll
        self._active = 0
        self._held: dict[str, Lease] = {}
        self._renewal: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return self._active

    def hold(self, key: ChatKey, wait: float) -> AbstractAsyncContextManager[Lease]:
        return self._hold(chat_of(key), wait)

    @abstractmethod
    async def _try_take(self, chat: str, patience: float) -> int:
        """One try at ``chat``'s row: the new grant's token, or 0 when another holder has it.
        ``patience``: how long a statement may wait for the database (what is left of the
        caller's wait)."""

    @abstractmethod
    async def _renew(self, chats: list[str]) -> Mapping[str, int]:
        """Extend this process's rows of ``chats`` by ``ttl``; the token each of them carries
        now (a chat missing from the answer has no row of this process any more)."""

    @abstractmethod
    async def _delete(self, chat: str, token: int) -> bool:
        """Delete ``chat``'s row if it still carries ``token``; whether it did."""

    @asynccontextmanager
    async def _hold(self, chat: str, wait: float) -> AsyncIterator[Lease]:
        self._active += 1
        try:
            lease = Lease(await self._acquire(chat, wait))
            self._held[chat] = lease
            if self._renewal is None or self._renewal.done():
                self._renewal = asyncio.create_task(
                    self._renew_while_held(), name="adk_asgi lock renewal"
                )
            try:
                yield lease
            finally:
                await let_go(self._release(chat, lease))
        finally:
            self._active -= 1
            if not self._active:
                await let_go(self._idle())

    async def _idle(self) -> None:
        """Called when this process holds and waits for no chat: let go of what a held chat
        needs only."""

    async def _acquire(self, chat: str, wait: float) -> int:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            # Another process holds it: nothing here can be woken when it is released.
            if token := await self._attempt(chat, max(deadline - loop.time(), 0.01)):
                return token
            left = deadline - loop.time()
            if left <= 0:
                raise busy(wait)
            await asyncio.sleep(min(self.poll, left))

    async def _attempt(self, chat: str, patience: float) -> int:
        """One :meth:`_try_take`, to its end even when the caller is cancelled meanwhile: a
        row it wrote is then deleted again (else the chat would stay taken for a ttl)."""
        attempt = asyncio.ensure_future(self._try_take(chat, patience))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            with suppress(Exception):
                if token := await attempt:
                    await self._delete(chat, token)
            raise

    async def _release(self, chat: str, lease: Lease) -> None:
        if self._held.get(chat) is lease:
            del self._held[chat]
        if not self._held:
            await self._stop_renewing()
        try:
            deleted = await self._delete(chat, lease.token)
        except Exception:  # the row runs out by itself
            logger.warning("adk_asgi: releasing a chat lock failed", exc_info=True)
            return
        if not deleted and not lease.lost:
            lease.lost = True
            logger.error("adk_asgi: a chat lock was lost while its run went on: %r", chat)

    async def _stop_renewing(self) -> None:
        if (renewal := self._renewal) is not None:
            self._renewal = None  # a hold that starts meanwhile starts a renewal of its own
            renewal.cancel()
            await asyncio.wait([renewal])

    async def _renew_while_held(self) -> None:
        while self._held:
            await asyncio.sleep(self.ttl / RENEWALS_PER_TTL)
            held = dict(self._held)
            try:
                kept = await self._renew(list(held))
            except Exception:  # the database is away: try again until the leases run out
                logger.warning("adk_asgi: renewing chat locks failed", exc_info=True)
                continue
            for chat, lease in held.items():
                if kept.get(chat) != lease.token and self._held.get(chat) is lease:
                    del self._held[chat]
                    lease.lost = True
                    logger.error("adk_asgi: a chat lock expired while its run went on: %r", chat)
