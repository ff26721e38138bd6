"""Resumable streams in Redis, so any worker serves a resume (``pip install 'adk-asgi[redis]'``).

Each answer is a Redis Stream (``XADD``, bounded by ``MAXLEN``) that readers follow with
``XREAD BLOCK``; an end entry closes it, and it expires ``keep`` seconds after. A per-chat key
names the chat's active stream; the worker that writes it renews it every ``lease / 3``. So,
unlike a producer that keeps its chunks in memory, a worker killed mid-answer loses nothing it
streamed: its readers get all of it, then — once the lease runs out without an end — a closing
``error`` chunk, ``finish`` and ``[DONE]``, instead of waiting forever.

A stop (``DELETE /chat/{id}/stream``) sets a key the writer's worker looks at every
``poll`` seconds.

Appending never waits for Redis: pieces are queued, and one task per stream writes what has
queued up as one entry at most every ``flush_interval`` (one round trip per batch, not per
chunk), so a resume lags the answer by that much at most and the run pays little for being
kept (``bench.throughput`` measures it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator
from typing import Any, Final

from adk_asgi.stores.locks import ChatKey
from adk_asgi.stores.locks_redis import DELETE_IF_HELD, RENEW_IF_HELD
from adk_asgi.stores.redis_client import cancellable, client_of
from adk_asgi.stores.resumable import StreamStore
from adk_asgi.wire.encoding import SSE_CUT_SHORT

__all__ = ["RedisStreamStore"]

logger = logging.getLogger("adk_asgi")


CHAT_STREAMS_TTL: Final = 24 * 3600
"""Seconds the list of a chat's streams is kept while one streams (at its end: ``keep``)."""

MAX_QUEUED: Final = 1024 * 1024
"""Bytes queued for Redis beyond which an append waits (Redis slower than the answer)."""


class _Queue:
    """The pieces of one stream waiting for Redis, and the task that writes them."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0
        self.ready = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()
        self.closing = False
        self.end = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.failed = 0
        """Writes that Redis refused: the first is logged, the rest counted (one a flush)."""


class RedisStreamStore(StreamStore):
    """``RedisStreamStore("redis://host:6379/0")``, or an existing ``redis.asyncio.Redis``.

    ``lease``: seconds after which a stream whose worker stopped renewing it counts as cut.
    ``maxlen``: pieces kept per stream (a longer answer replays from its oldest kept piece).
    ``keep``: seconds an ended stream stays readable. ``poll``: seconds between stop checks.
    ``flush_interval``: seconds between two writes of a stream (what a resume can lag behind
    the answer): pieces made meanwhile go out together.
    """

    def __init__(
        self,
        redis: Any,
        *,
        prefix: str = "adk_asgi:stream:",
        lease: float = 15.0,
        maxlen: int = 100_000,
        keep: float = 60.0,
        poll: float = 0.25,
        flush_interval: float = 0.01,
    ) -> None:
        self._client: Any
        self._client, self._owns_client = client_of(redis)
        if not (lease > 0 and keep > 0 and poll > 0 and maxlen > 0):
            raise ValueError("lease, keep, poll and maxlen must be > 0")
        self.prefix = prefix
        self.lease = lease
        self.maxlen = maxlen
        self.keep = keep
        self.poll = poll
        self.flush_interval = flush_interval
        self._renew = self._client.register_script(RENEW_IF_HELD)
        self._clear = self._client.register_script(DELETE_IF_HELD)
        self._renewals: dict[str, asyncio.Task[None]] = {}
        self._queues: dict[str, _Queue] = {}

    def _active_key(self, key: ChatKey) -> str:
        return self.prefix + "active:" + "\x1f".join(key)

    def _data(self, stream_id: str) -> str:
        return self.prefix + "data:" + stream_id

    def _stop_key(self, stream_id: str) -> str:
        return self.prefix + "stop:" + stream_id

    def _chat_streams(self, key: ChatKey) -> str:
        """The set of the chat's streams whose data may still be kept, for :meth:`forget`."""
        return self.prefix + "chat:" + "\x1f".join(key)

    async def begin(self, key: ChatKey) -> str:
        stream_id = secrets.token_hex(8)
        name = self._active_key(key)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.set(name, stream_id, px=self._lease_ms())
            pipe.sadd(self._chat_streams(key), stream_id)
            pipe.expire(self._chat_streams(key), CHAT_STREAMS_TTL)
            await cancellable(pipe.execute())
        self._renewals[stream_id] = asyncio.create_task(
            self._keep_active(name, stream_id), name="adk_asgi stream lease"
        )
        queue = self._queues[stream_id] = _Queue()
        queue.task = asyncio.create_task(self._write(stream_id, queue), name="adk_asgi stream")
        return stream_id

    def _lease_ms(self) -> int:
        return max(1, round(self.lease * 1000))

    async def _keep_active(self, name: str, stream_id: str) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                if not await cancellable(
                    self._renew(keys=[name], args=[stream_id, self._lease_ms()])
                ):
                    return  # another stream of the chat began: this one is not active
            except Exception:  # Redis unreachable: try again until the lease runs out
                logger.warning("adk_asgi: renewing a stream lease failed", exc_info=True)

    async def append(self, key: ChatKey, stream_id: str, data: bytes) -> None:
        queue = self._queues.get(stream_id)
        if queue is None:
            return  # not begun here, or ended
        queue.pieces.append(data)
        queue.size += len(data)
        queue.ready.set()
        if queue.size > MAX_QUEUED:
            queue.room.clear()
            await queue.room.wait()

    async def _write(self, stream_id: str, queue: _Queue) -> None:
        """Write what has queued up, as one entry, until the stream ends and nothing is left."""
        data = self._data(stream_id)
        while True:
            await queue.ready.wait()
            queue.ready.clear()
            if queue.pieces:
                batch = b"".join(queue.pieces)
                queue.pieces.clear()
                queue.size = 0
                queue.room.set()
                try:
                    await cancellable(
                        self._client.xadd(data, {b"d": batch}, maxlen=self.maxlen, approximate=True)
                    )
                except Exception:  # the readers get a cut stream, not the run an error
                    queue.failed += 1
                    if queue.failed == 1:  # (not a warning every flush_interval of an outage)
                        logger.warning(
                            "adk_asgi: writing a stream to Redis failed; later failures of this"
                            " stream are counted when it ends",
                            exc_info=True,
                        )
            if queue.closing and not queue.pieces:
                if queue.failed > 1:
                    logger.warning("adk_asgi: %d writes of a stream to Redis failed", queue.failed)
                return
            if not queue.closing:
                with contextlib.suppress(TimeoutError):  # the end is written at once
                    async with asyncio.timeout(self.flush_interval):
                        await queue.end.wait()

    async def end(self, key: ChatKey, stream_id: str) -> None:
        queue = self._queues.pop(stream_id, None)
        if queue is not None and queue.task is not None:
            queue.closing = True
            queue.ready.set()
            queue.end.set()
            await asyncio.wait([queue.task])
        renewal = self._renewals.pop(stream_id, None)
        if renewal is not None:
            renewal.cancel()
            await asyncio.wait([renewal])
        data = self._data(stream_id)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.xadd(data, {b"e": b"1"}, maxlen=self.maxlen, approximate=True)
            pipe.expire(data, max(1, round(self.keep)))
            pipe.delete(self._stop_key(stream_id))
            pipe.expire(self._chat_streams(key), max(1, round(self.keep)))
            await cancellable(pipe.execute())
        await cancellable(self._clear(keys=[self._active_key(key)], args=[stream_id]))

    async def active(self, key: ChatKey) -> str | None:
        value = await cancellable(self._client.get(self._active_key(key)))
        return None if value is None else value.decode() if isinstance(value, bytes) else value

    async def replay(self, key: ChatKey, stream_id: str) -> AsyncGenerator[bytes, None]:
        data, last = self._data(stream_id), "0-0"
        block = max(1, round(min(self.lease, 1.0) * 1000))
        while True:
            reply = await cancellable(self._client.xread({data: last}, block=block, count=1000))
            if not reply:
                if await self.active(key) != stream_id and not await self._ended(data):
                    yield SSE_CUT_SHORT  # its writer stopped renewing it and never ended it
                    return
                continue
            for entry_id, fields in reply[0][1]:
                last = entry_id
                if b"e" in fields:
                    return
                yield fields[b"d"]

    async def _ended(self, data: str) -> bool:
        """Whether the stream has its end entry (it ended between two reads)."""
        entries = await cancellable(self._client.xrevrange(data, count=1))
        return bool(entries) and b"e" in entries[0][1]

    async def stop(self, key: ChatKey) -> bool:
        stream_id = await self.active(key)
        if stream_id is None:
            return False
        await cancellable(
            self._client.set(self._stop_key(stream_id), b"1", ex=max(1, round(self.keep)))
        )
        return True

    async def stopped(self, key: ChatKey, stream_id: str) -> None:
        while not await cancellable(self._client.exists(self._stop_key(stream_id))):  # noqa: ASYNC110
            await asyncio.sleep(self.poll)  # (a poll: another worker sets the key)

    async def forget(self, key: ChatKey) -> None:
        chat_streams = self._chat_streams(key)
        stream_ids = await cancellable(self._client.smembers(chat_streams))
        names = [chat_streams, self._active_key(key)]
        for stream_id in stream_ids:
            stream_id = stream_id.decode() if isinstance(stream_id, bytes) else stream_id
            names += [self._data(stream_id), self._stop_key(stream_id)]
        await cancellable(self._client.delete(*names))

    async def aclose(self) -> None:
        tasks = [*self._renewals.values()]
        tasks += [q.task for q in self._queues.values() if q.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self._renewals.clear()
        self._queues.clear()
        if self._owns_client:
            with contextlib.suppress(Exception):
                await self._client.aclose()
