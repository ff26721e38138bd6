"""What ``DELETE /chat/{id}/stream`` finds (:func:`adk_asgi.stores.stops.stop_answer`), on the
in-memory stream store: nothing under way, an answer that ends once stopped, and one that runs
on (a live answer, which cannot be stopped midway) — that one is not said to have stopped."""

from __future__ import annotations

import asyncio

from adk_asgi.stores.resumable import InMemoryStreamStore
from adk_asgi.stores.stops import stop_answer, watch_for_stop

CHAT = ("app", "alice", "chat-1")


async def test_nothing_under_way_is_nothing_to_stop() -> None:
    store = InMemoryStreamStore()
    assert await stop_answer(store, CHAT) == "nothing"
    await store.end(CHAT, await store.begin(CHAT))
    assert await stop_answer(store, CHAT) == "nothing"


async def test_an_answer_is_said_stopped_once_its_stream_ended() -> None:
    store = InMemoryStreamStore()
    stream_id = await store.begin(CHAT)

    async def run() -> None:  # the run: its stop check, then its stream's end
        await watch_for_stop(store, CHAT, stream_id)
        await asyncio.sleep(0.1)
        await store.end(CHAT, stream_id)

    running = asyncio.create_task(run())
    assert await stop_answer(store, CHAT) == "stopped"
    assert running.done()


async def test_an_answer_that_runs_on_is_not_said_stopped() -> None:
    """A live answer never looks at the stop: the ``DELETE`` said ``stopped: true``."""
    store = InMemoryStreamStore()
    stream_id = await store.begin(CHAT)
    assert await stop_answer(store, CHAT, wait=0.2) == "running"
    assert await store.active(CHAT) == stream_id
