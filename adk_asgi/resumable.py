"""Resumable SSE streams: a chat's answer outlives its HTTP response, and can be read again.

The AI SDK resumes a chat (``useChat({ resume: true })`` on mount, ``chat.resumeStream()``) with
``GET /chat/{id}/stream``: the whole active stream from its first chunk, then live until it
ends; ``204`` when nothing streams. So with a store configured the run no longer stops when its
reader goes away (a reload, a dropped connection): it finishes and is recorded, and every byte
of its body is kept here while it streams, for any number of readers.

:class:`StreamStore` is the interface; :class:`InMemoryStreamStore` serves one process. A
stream that ended stays readable for ``keep`` seconds (a reader that asked just before its end),
then is forgotten: its message is in the chat's history by then.
"""

from __future__ import annotations

import asyncio
import secrets
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator

from .locks import ChatKey


class StreamStore(ABC):
    """The active SSE stream of each chat: written by the run, read by any number of readers."""

    @abstractmethod
    async def begin(self, key: ChatKey) -> str:
        """A new stream for ``key``'s chat, now its active one; returns its id."""

    @abstractmethod
    async def append(self, key: ChatKey, stream_id: str, data: bytes) -> None:
        """The next piece of the stream's SSE body."""

    @abstractmethod
    async def end(self, key: ChatKey, stream_id: str) -> None:
        """The stream is complete; the chat has no active stream any more."""

    @abstractmethod
    async def active(self, key: ChatKey) -> str | None:
        """The id of the chat's stream under way, or ``None``."""

    @abstractmethod
    def replay(self, key: ChatKey, stream_id: str) -> AsyncGenerator[bytes, None]:
        """The stream from its first byte, then each piece as it is appended, until its end."""

    @abstractmethod
    async def stop(self, key: ChatKey) -> bool:
        """Ask the chat's active stream to stop (the user pressed stop); whether one was
        active."""

    @abstractmethod
    async def stopped(self, key: ChatKey, stream_id: str) -> None:
        """Return once :meth:`stop` asked this stream to stop."""

    async def aclose(self) -> None:  # noqa: B027 (the in-memory store holds nothing to close)
        """Release what the store holds (connections)."""


class _Stream:
    __slots__ = ("changed", "done", "id", "pieces", "stop")

    def __init__(self, stream_id: str) -> None:
        self.id = stream_id
        self.pieces: list[bytes] = []
        self.done = False
        self.changed = asyncio.Event()
        self.stop = asyncio.Event()

    def wake(self) -> None:
        """Wake the readers waiting for more; each waits on a fresh event after that."""
        self.changed.set()
        self.changed = asyncio.Event()


class InMemoryStreamStore(StreamStore):
    """The streams of one process: readers must reach the worker that runs the chat."""

    def __init__(self, *, keep: float = 60.0) -> None:
        self.keep = keep
        self._streams: dict[ChatKey, _Stream] = {}
        self._ended: dict[str, tuple[_Stream, float]] = {}
        """Ended streams by id, with when they are forgotten (loop time)."""

    def __len__(self) -> int:
        """Streams kept: under way, or ended less than ``keep`` seconds ago."""
        return len(self._streams) + len(self._ended)

    async def begin(self, key: ChatKey) -> str:
        now = asyncio.get_running_loop().time()
        for stream_id, (_, until) in list(self._ended.items()):
            if until <= now:
                del self._ended[stream_id]
        stream = self._streams[key] = _Stream(secrets.token_hex(8))
        return stream.id

    def _get(self, key: ChatKey, stream_id: str) -> _Stream | None:
        stream = self._streams.get(key)
        return stream if stream is not None and stream.id == stream_id else None

    async def append(self, key: ChatKey, stream_id: str, data: bytes) -> None:
        stream = self._get(key, stream_id)
        if stream is not None:
            stream.pieces.append(data)
            stream.wake()

    async def end(self, key: ChatKey, stream_id: str) -> None:
        stream = self._get(key, stream_id)
        if stream is not None:
            stream.done = True
            stream.wake()
            del self._streams[key]
            self._ended[stream_id] = (stream, asyncio.get_running_loop().time() + self.keep)

    async def active(self, key: ChatKey) -> str | None:
        stream = self._streams.get(key)
        return None if stream is None else stream.id

    async def replay(self, key: ChatKey, stream_id: str) -> AsyncGenerator[bytes, None]:
        stream = self._get(key, stream_id) or self._ended.get(stream_id, (None, 0.0))[0]
        if stream is None:
            return
        sent = 0
        while True:
            changed = stream.changed
            if sent < len(stream.pieces):
                pieces = stream.pieces[sent:]
                sent += len(pieces)
                yield b"".join(pieces)
            elif stream.done:
                return
            else:
                await changed.wait()

    async def stop(self, key: ChatKey) -> bool:
        stream = self._streams.get(key)
        if stream is None:
            return False
        stream.stop.set()
        return True

    async def stopped(self, key: ChatKey, stream_id: str) -> None:
        stream = self._get(key, stream_id)
        await (stream.stop.wait() if stream is not None else asyncio.Future())
