"""One run at a time per chat, in one process or across many.

ADK's SQL session services raise ``StaleSessionError`` when two runs of one session overlap, and
the in-memory service silently interleaves their events; a human-in-the-loop answer is a run
too. So every request that runs the agent on a chat holds that chat's lock for the validation
*and* the whole run. A request that finds the chat busy waits its turn (the stock clients never
overlap requests on purpose; a retry or a double click should be serialized, not failed) and
gives up with :class:`ChatBusy` after ``wait`` seconds.

:class:`ChatLocks` is the interface. :class:`InMemoryChatLocks` serializes the requests of one
process; several workers need a shared engine: ``SqliteChatLocks`` (:mod:`.locks_sqlite`),
``PostgresChatLocks`` (:mod:`.locks_postgres`) or ``RedisChatLocks`` (:mod:`.locks_redis`). An
app without ``Stores(locks=)`` keeps them in its session database (:mod:`.defaults`).
Each grant carries a fencing token that grows with every grant of the same chat, so a holder
whose lease ran out can be told from the one that holds the chat now.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from adk_asgi.errors import AdkAsgiError

ChatKey = tuple[str, str, str]
"""``(app name, user id, chat id)``: one ADK session."""


class ChatBusy(AdkAsgiError):
    """The chat stayed busy for longer than the caller was willing to wait."""


class LockUnavailable(ChatBusy):
    """The lock's store could not be asked within the wait (a database file that another
    process kept locked): whether the chat is busy is unknown. A :class:`ChatBusy`, so every
    endpoint refuses the request before anything runs; ``POST /chat`` answers ``503``."""


@dataclass(slots=True)
class Lease:
    """One grant of a chat's lock."""

    token: int
    """The fencing token: larger than that of every earlier grant of the same chat."""
    lost: bool = False
    """The lock was lost before it was released (a lease that could not be renewed)."""


class ChatLocks(ABC):
    """Per-chat mutual exclusion; :meth:`hold` is the only operation the endpoints use."""

    @abstractmethod
    def hold(self, key: ChatKey, wait: float) -> AbstractAsyncContextManager[Lease]:
        """Hold ``key``'s lock for the ``async with`` block, waiting up to ``wait`` seconds
        for it (then :class:`ChatBusy`)."""

    @abstractmethod
    def __len__(self) -> int:
        """How many chats this process holds or waits for (0 once every request is done)."""

    async def aclose(self) -> None:  # noqa: B027 (most backends hold nothing to close)
        """Release what the backend holds (connections); ``AdkApp.aclose`` calls it."""


def busy(wait: float) -> ChatBusy:
    return ChatBusy(f"the chat is still busy with another request after {wait:g} s")


class _Entry:
    __slots__ = ("lock", "tokens", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0
        self.tokens = 0


class InMemoryChatLocks(ChatLocks):
    """The locks of one process. Entries are dropped when nobody holds or waits for them, so
    the table does not grow with the number of chats ever seen (fencing tokens then start
    again: within one process a lease is never lost, so nothing needs fencing)."""

    def __init__(self) -> None:
        self._entries: dict[ChatKey, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def hold(self, key: ChatKey, wait: float) -> AbstractAsyncContextManager[Lease]:
        return self._hold(key, wait)

    @asynccontextmanager
    async def _hold(self, key: ChatKey, wait: float) -> AsyncIterator[Lease]:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            if entry.users == 1:  # nobody holds it or waits: taken at once, no timer
                await entry.lock.acquire()
            else:
                try:
                    async with asyncio.timeout(wait):
                        await entry.lock.acquire()
                except TimeoutError:
                    raise busy(wait) from None
            try:
                entry.tokens += 1
                yield Lease(entry.tokens)
            finally:
                entry.lock.release()
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]


async def let_go(cleanup: Coroutine[Any, Any, None]) -> None:
    """Run a hold's clean-up (its renewal stopped, its lease released) to the end, even when
    the holder is cancelled meanwhile, then raise that cancellation: a cancellation that
    landed at the clean-up's first await used to skip the release, and the chat stayed taken
    for the lease's ttl."""
    letting_go = asyncio.ensure_future(cleanup)
    try:
        await asyncio.shield(letting_go)
    except asyncio.CancelledError:
        await letting_go
        raise
