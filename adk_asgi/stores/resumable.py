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

from adk_asgi.stores.locks import ChatKey


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

    @abstractmethod
    async def forget(self, key: ChatKey) -> None:
        """Drop every stream of ``key``'s chat, ended or not (the chat is deleted): its
        readers get the end of what they read, and a chat begun later under the same id has
        nothing to resume."""

    async def aclose(self) -> None:  # noqa: B027 (the in-memory store holds nothing to close)
        """Release what the store holds (connections)."""


class _Stream:
    __slots__ = ("changed", "done", "id", "key", "pieces", "stop")

    def __init__(self, stream_id: str, key: ChatKey) -> None:
        self.id = stream_id
        self.key = key
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
        self._active: dict[ChatKey, _Stream] = {}
        self._streams: dict[str, _Stream] = {}
        """Every stream by id: under way (active or not: a newer one may have taken the
        chat's place while its writer finishes), or ended less than ``keep`` seconds ago."""
        self._forget: dict[str, float] = {}
        """When each ended stream is forgotten (loop time)."""

    def __len__(self) -> int:
        """Streams kept: under way, or ended less than ``keep`` seconds ago."""
        return len(self._streams)

    async def begin(self, key: ChatKey) -> str:
        now = asyncio.get_running_loop().time()
        for stream_id, until in list(self._forget.items()):
            if until <= now:
                del self._forget[stream_id], self._streams[stream_id]
        stream = self._active[key] = _Stream(secrets.token_hex(8), key)
        self._streams[stream.id] = stream
        return stream.id

    async def append(self, key: ChatKey, stream_id: str, data: bytes) -> None:
        stream = self._streams.get(stream_id)
        if stream is not None and not stream.done:
            stream.pieces.append(data)
            stream.wake()

    async def end(self, key: ChatKey, stream_id: str) -> None:
        stream = self._streams.get(stream_id)
        if stream is None or stream.done:
            return
        stream.done = True
        stream.wake()
        if self._active.get(key) is stream:
            del self._active[key]
        self._forget[stream_id] = asyncio.get_running_loop().time() + self.keep

    async def active(self, key: ChatKey) -> str | None:
        stream = self._active.get(key)
        return None if stream is None else stream.id

    async def replay(self, key: ChatKey, stream_id: str) -> AsyncGenerator[bytes, None]:
        stream = self._streams.get(stream_id)
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
        stream = self._active.get(key)
        if stream is None:
            return False
        stream.stop.set()
        return True

    async def stopped(self, key: ChatKey, stream_id: str) -> None:
        stream = self._streams.get(stream_id)
        await (stream.stop.wait() if stream is not None else asyncio.Future())

    async def forget(self, key: ChatKey) -> None:
        self._active.pop(key, None)
        for stream in [s for s in self._streams.values() if s.key == key]:
            stream.done = True
            stream.wake()
            del self._streams[stream.id]
            self._forget.pop(stream.id, None)
