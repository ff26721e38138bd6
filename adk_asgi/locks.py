"""One run at a time per chat.

ADK's SQL session services raise ``StaleSessionError`` when two runs of one session overlap, and
the in-memory service silently interleaves their events; a human-in-the-loop answer is a run
too. So every request that runs the agent on a chat holds that chat's lock for the validation
*and* the whole run. A request that finds the chat busy waits its turn (the stock clients never
overlap requests on purpose; a retry or a double click should be serialized, not failed) and
gives up with :class:`ChatBusy` after ``wait`` seconds.

Locks live on the ``AdkApp`` instance and are dropped when nobody holds or waits for them, so
the table does not grow with the number of chats ever seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .errors import AdkAsgiError

ChatKey = tuple[str, str]  # (user id, chat id); the app name is fixed per AdkApp


class ChatBusy(AdkAsgiError):
    """The chat stayed busy for longer than the caller was willing to wait."""


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class ChatLocks:
    def __init__(self) -> None:
        self._entries: dict[ChatKey, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def busy(self, key: ChatKey) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.lock.locked()

    @asynccontextmanager
    async def hold(self, key: ChatKey, wait: float) -> AsyncIterator[None]:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            try:
                async with asyncio.timeout(wait):
                    await entry.lock.acquire()
            except TimeoutError:
                raise ChatBusy(
                    f"the chat is still busy with another request after {wait:g} s"
                ) from None
            try:
                yield
            finally:
                entry.lock.release()
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]
