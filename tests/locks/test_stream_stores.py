"""Both stream stores on the same contract, Redis with the test session's real server: two
store objects on one Redis stand for two workers, one writing an answer and one serving a
resume. A writer that dies mid-answer: its readers get what it wrote, then a clean end."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest
import pytest_asyncio
from redis.asyncio import Redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from adk_asgi.stores.redis_client import redis_from_url
from adk_asgi.stores.resumable import InMemoryStreamStore, StreamStore
from adk_asgi.stores.resumable_redis import RedisStreamStore
from adk_asgi.wire.encoding import CUT_SHORT
from tests.asgi.test_stop_outage import CuttableProxy

pytestmark = pytest.mark.backing

CHAT = ("app", "alice", "chat-1")

Workers = Callable[..., StreamStore]


@pytest_asyncio.fixture(params=["memory", "redis"])
async def workers(request: pytest.FixtureRequest) -> AsyncIterator[Workers]:
    """Stores that share one backend (with in-memory: one and the same store)."""
    prefix = f"test:{secrets.token_hex(4)}:"
    shared = InMemoryStreamStore()
    async with AsyncExitStack() as stack:

        def make(**options: float) -> StreamStore:
            if request.param == "memory":
                return shared
            store = RedisStreamStore(request.getfixturevalue("redis_url"), prefix=prefix, **options)
            stack.push_async_callback(store.aclose)
            return store

        yield make


async def collect_rest(pieces: AsyncIterator[bytes]) -> bytes:
    return b"".join([piece async for piece in pieces])


async def collect(store: StreamStore, stream_id: str) -> bytes:
    return b"".join([piece async for piece in store.replay(CHAT, stream_id)])


async def test_a_reader_on_another_worker_replays_from_the_start_and_follows(
    workers: Workers,
) -> None:
    writer, reader = workers(), workers()
    stream_id = await writer.begin(CHAT)
    await writer.append(CHAT, stream_id, b"start;")
    assert await reader.active(CHAT) == stream_id
    following = asyncio.create_task(collect(reader, stream_id))
    await writer.append(CHAT, stream_id, b"d1;")
    await writer.append(CHAT, stream_id, b"finish;")
    await writer.end(CHAT, stream_id)
    assert await asyncio.wait_for(following, 5) == b"start;d1;finish;"
    assert await reader.active(CHAT) is None


async def test_a_stop_reaches_the_writer_on_another_worker(workers: Workers) -> None:
    writer, other = workers(poll=0.02), workers()
    stream_id = await writer.begin(CHAT)
    stopped = asyncio.create_task(writer.stopped(CHAT, stream_id))
    assert await other.stop(CHAT) is True
    await asyncio.wait_for(stopped, 5)
    await writer.end(CHAT, stream_id)
    assert await other.stop(CHAT) is False


async def test_the_readers_of_a_writer_that_died_get_what_it_wrote_and_an_end(
    redis_url: str,
) -> None:
    prefix = f"test:{secrets.token_hex(4)}:"
    writer = RedisStreamStore(redis_url, prefix=prefix, lease=0.3)
    reader = RedisStreamStore(redis_url, prefix=prefix, lease=0.3)
    try:
        stream_id = await writer.begin(CHAT)
        await writer.append(CHAT, stream_id, b'data: {"type":"start"}\n\n')
        following = reader.replay(CHAT, stream_id)
        first = await asyncio.wait_for(anext(following), 5)  # it reached Redis
        await writer.aclose()  # the worker is gone: no end, no more renewals
        rest = await asyncio.wait_for(collect_rest(following), 5)
        replayed = first + rest
    finally:
        await reader.aclose()
    assert replayed == (
        b'data: {"type":"start"}\n\n'
        b'data: {"type":"error","errorText":"' + CUT_SHORT.encode() + b'"}\n\n'
        b'data: {"type":"finish"}\n\ndata: [DONE]\n\n'
    )


async def test_more_readers_than_redis_pys_default_pool_wait_instead_of_failing(
    redis_url: str,
) -> None:
    """150 readers each hold a connection in ``XREAD BLOCK``: past redis-py's default pool (100
    in redis-py 8, which then fails a command), a store built from a URL makes a command wait
    for a connection (adk_asgi.stores.redis_client), so every reader gets the whole answer."""
    prefix = f"test:{secrets.token_hex(4)}:"
    store = RedisStreamStore(redis_url, prefix=prefix)
    try:
        chats = [("app", "alice", f"chat-{i}") for i in range(150)]
        streams = [await store.begin(chat) for chat in chats]
        readers = [
            asyncio.create_task(collect_rest(store.replay(chat, stream)))
            for chat, stream in zip(chats, streams, strict=True)
        ]
        await asyncio.sleep(0.3)  # every reader waits in XREAD BLOCK
        for chat, stream in zip(chats, streams, strict=True):
            await store.append(chat, stream, b"answer;")
            await store.end(chat, stream)
        assert await asyncio.wait_for(asyncio.gather(*readers), 20) == [b"answer;"] * 150
    finally:
        await store.aclose()


async def test_a_stop_check_cancelled_mid_command_ends(redis_url: str) -> None:
    """An answer ends by cancelling its stop check (a poll of Redis) and waiting for it. A
    cancellation that landed during the poll's command was swallowed by redis-py (Python 3.11's
    ``wait_for``) a quarter of the time: the check polled on, the request never ended, and its
    chat stayed locked. Raced 300 times, cancelled at every moment of a poll."""
    store = RedisStreamStore(redis_url, prefix=f"test:{secrets.token_hex(4)}:", poll=0.0005)
    try:
        stream_id = await store.begin(CHAT)
        for i in range(300):
            check = asyncio.create_task(store.stopped(CHAT, stream_id))
            await asyncio.sleep((i % 30) * 0.0002)
            check.cancel()
            done, _ = await asyncio.wait([check], timeout=2)
            assert done, f"stop check {i} still polls after it was cancelled"
            assert check.cancelled()
        await store.end(CHAT, stream_id)
    finally:
        await store.aclose()


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_forgetting_a_chat_drops_its_streams_ended_or_not(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """A deleted chat's answers were kept (in Redis: ``keep`` seconds after their end, and an
    unfinished one of a dead writer for its lease), resumable by a new chat under its id."""
    other = ("app", "alice", "chat-2")
    prefix = f"test:{secrets.token_hex(4)}:"
    async with AsyncExitStack() as stack:
        if backend == "memory":
            store: StreamStore = InMemoryStreamStore()
        else:
            url = request.getfixturevalue("redis_url")
            store = RedisStreamStore(url, prefix=prefix)
            stack.push_async_callback(store.aclose)
            client = redis_from_url(url)
            stack.push_async_callback(client.aclose)
        ended = await store.begin(CHAT)
        await store.append(CHAT, ended, b"old answer;")
        await store.end(CHAT, ended)
        unfinished = await store.begin(CHAT)  # its writer died: it never ends
        await store.append(CHAT, unfinished, b"cut;")
        kept = await store.begin(other)
        await store.append(other, kept, b"other chat;")
        await store.end(other, kept)
        reader = store.replay(CHAT, unfinished)
        assert await asyncio.wait_for(anext(reader), 5) == b"cut;"
        await store.forget(CHAT)
        assert await store.active(CHAT) is None
        rest = await asyncio.wait_for(collect_rest(reader), 5)  # its reader is let go
        assert await collect(store, kept) == b"other chat;"
        if isinstance(store, InMemoryStreamStore):
            assert (rest, len(store)) == (b"", 1)
            assert await collect(store, ended) == b""
        else:
            names = sorted([name.decode() async for name in client.scan_iter(f"{prefix}*")])
            assert rest.startswith(b'data: {"type":"error"')
            assert names == [prefix + "chat:" + "\x1f".join(other), prefix + "data:" + kept]


async def test_a_redis_outage_logs_a_streams_failed_writes_once_not_every_flush(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Each flush of a stream (every ``flush_interval``, 10 ms) that Redis refused logged a
    warning with its traceback: a hundred a second per stream for as long as Redis was away."""
    host, port = redis_url.removeprefix("redis://").rsplit("/", 1)[0].split(":")
    proxy = CuttableProxy((host, int(port)))
    await proxy.restore()
    client: Any = Redis.from_url(f"redis://127.0.0.1:{proxy.port}/0", retry=Retry(NoBackoff(), 0))
    store = RedisStreamStore(client, prefix=f"test:{secrets.token_hex(4)}:", flush_interval=0.005)
    try:
        stream_id = await store.begin(CHAT)
        await proxy.cut()
        for number in range(20):  # each its own flush
            await store.append(CHAT, stream_id, f"piece {number}\n".encode())
            await asyncio.sleep(0.02)
        with pytest.raises(RedisError):
            await store.end(CHAT, stream_id)  # (the end itself cannot be written either)
    finally:
        await store.aclose()
        await client.aclose()
    warned = [r.getMessage() for r in caplog.records if "a stream to Redis failed" in r.msg]
    first, counted = warned  # (two pieces may share a flush on a busy machine)
    assert first == (
        "adk_asgi: writing a stream to Redis failed; later failures of this stream are counted"
        " when it ends"
    )
    assert re.fullmatch(r"adk_asgi: (1\d|20) writes of a stream to Redis failed", counted)
