"""The frames a live connection has yet to send, bounded, and its reader's limits.

The reader answers some frames itself (``pong``, an ``error``) as fast as the client sends
them, and the writer sends them only as fast as the client reads: the reader waits while half
the outbox is taken (:meth:`Outbox.room`), so a client that floods the socket is slowed by TCP,
not cut off. The outbox overflows only when what the *model* says is not read, and the client
is then told so (close 1008 with a reason), not closed as if all were well (1000).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Final

logger = logging.getLogger("adk_asgi")

OUTBOX_SIZE: Final = 1024
"""Frames a client may fall behind by before its connection is closed."""
NOT_READING: Final = (1008, "the client did not read what it was sent")
"""The close of a connection whose outbox overflowed: a policy violation, with its reason."""


def too_large(limit: int) -> tuple[int, str]:
    """The close of a connection that sent a frame over ``max_frame_size`` (1009)."""
    return 1009, f"a frame is larger than {limit} bytes"


def frame_size(text: str) -> int:
    """The frame's size in UTF-8 bytes, encoding only when the length alone does not tell
    (a character is 1 to 4 bytes)."""
    return len(text) if text.isascii() else len(text.encode())


class Outbox:
    """The frames waiting for the writer; ``None`` from :meth:`get` once closed and empty."""

    def __init__(self, size: int = OUTBOX_SIZE) -> None:
        self._items: deque[str | bytes] = deque()
        self._size = size
        self._ready = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self.closed = False
        self.overflowed = False
        """Closed because the client fell :data:`OUTBOX_SIZE` frames behind."""
        self.gone = False
        """The client has gone: frames are dropped (its answer may still be recorded)."""

    def client_gone(self) -> None:
        self.gone = True
        self._items.clear()
        self._room.set()

    def put(self, frame: str | bytes) -> None:
        if self.closed or self.gone:
            return  # the session is over, or the client: nothing more goes out
        if len(self._items) >= self._size:
            logger.warning("adk_asgi: a live client is not reading; closing its connection")
            self.overflowed = True
            self.close()
            return
        self._items.append(frame)
        if len(self._items) >= self._size // 2:
            self._room.clear()
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()
        self._room.set()

    async def room(self) -> None:
        """Return once no more than half the outbox is taken (or it is closed)."""
        await self._room.wait()

    async def get(self) -> str | bytes | None:
        while not self._items:
            if self.closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        frame = self._items.popleft()
        if len(self._items) < self._size // 2:
            self._room.set()
        return frame
