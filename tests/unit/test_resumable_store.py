"""The in-memory stream store alone: a replay starts at the first byte and follows to the end,
a new stream of the chat replaces the old one, ``stop`` reaches the stream under way only."""

from __future__ import annotations

import asyncio

from adk_asgi.stores.resumable import InMemoryStreamStore

CHAT = ("app", "alice", "chat-1")


async def collect(store: InMemoryStreamStore, stream_id: str) -> bytes:
    return b"".join([piece async for piece in store.replay(CHAT, stream_id)])


async def test_a_replay_starts_at_the_first_byte_and_follows_to_the_end() -> None:
    store = InMemoryStreamStore()
    stream_id = await store.begin(CHAT)
    await store.append(CHAT, stream_id, b"start;")
    early = asyncio.create_task(collect(store, stream_id))
    await asyncio.sleep(0)
    await store.append(CHAT, stream_id, b"d1;")
    late = asyncio.create_task(collect(store, stream_id))
    await asyncio.sleep(0)
    await store.append(CHAT, stream_id, b"finish;")
    assert await store.active(CHAT) == stream_id
    await store.end(CHAT, stream_id)
    assert await asyncio.gather(early, late) == [b"start;d1;finish;"] * 2
    assert (await store.active(CHAT), len(store)) == (None, 1)
    assert await collect(store, stream_id) == b"start;d1;finish;"  # kept for a while


async def test_a_new_stream_replaces_the_old_and_stop_reaches_only_the_active_one() -> None:
    store = InMemoryStreamStore()
    first = await store.begin(CHAT)
    second = await store.begin(CHAT)
    await store.append(CHAT, first, b"lost;")  # the old stream's writer is ignored
    await store.append(CHAT, second, b"kept;")
    await store.end(CHAT, first)
    assert await store.active(CHAT) == second
    stopped_old = asyncio.create_task(store.stopped(CHAT, first))
    stopped_new = asyncio.create_task(store.stopped(CHAT, second))
    assert await store.stop(CHAT) is True
    await asyncio.wait_for(stopped_new, 1)
    assert not stopped_old.done()
    stopped_old.cancel()
    await store.end(CHAT, second)
    assert await store.stop(CHAT) is False


async def test_an_ended_stream_is_forgotten_after_keep() -> None:
    store = InMemoryStreamStore(keep=0)
    old = await store.begin(CHAT)
    await store.end(CHAT, old)
    await store.begin(("app", "bob", "chat-2"))
    assert len(store) == 1
    assert await collect(store, old) == b""
