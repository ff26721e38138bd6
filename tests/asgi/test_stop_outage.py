"""A stop (``DELETE /chat/{id}/stream``) across two workers whose Redis is briefly unreachable:
real uvicorn servers, the test session's real Redis, and between one worker and Redis a TCP
proxy that the test cuts (its connections closed, new ones refused) and restores, as a network
partition or a Redis failover does. redis-py's own retries are off, so the worker sees the
outage."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from adk_asgi import AdkApp, Stores
from adk_asgi.stores.resumable_redis import RedisStreamStore
from adk_asgi.testing import Text
from tests.asgi.test_resumable import until_text
from tests.live.live_socket import serve
from tests.support import parse_sse, scripted_agent, user_body

pytestmark = [pytest.mark.backing, pytest.mark.e2e]

ANSWER = "A long answer, streamed slowly enough that Redis can go away and come back. " * 8


class CuttableProxy:
    """A TCP proxy on loopback to ``target``: :meth:`cut` closes its connections and stops
    listening (connections are refused), :meth:`restore` listens on the same port again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pipes: set[asyncio.Task[None]] = set()

    async def restore(self) -> None:
        self._server = await asyncio.start_server(self._connect, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        await self._server.wait_closed()
        for pipe in self._pipes:
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers |= {writer, up_writer}
        for source, sink in [(reader, up_writer), (up_reader, writer)]:
            pipe = asyncio.create_task(self._pipe(source, sink))
            self._pipes.add(pipe)
            pipe.add_done_callback(self._pipes.discard)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except ConnectionError:
            pass
        finally:
            sink.close()
            self._writers.discard(sink)


@asynccontextmanager
async def two_workers(redis_url: str) -> AsyncIterator[tuple[CuttableProxy, str, str]]:
    """Two workers on one Redis: the first reaches it through the proxy. Yields the proxy and
    the workers' base URLs."""
    host, port = redis_url.removeprefix("redis://").rsplit("/", 1)[0].split(":")
    proxy = CuttableProxy((host, int(port)))
    await proxy.restore()
    prefix = f"test:{secrets.token_hex(4)}:"
    async with AsyncExitStack() as stack:
        urls = []
        for url in [f"redis://127.0.0.1:{proxy.port}/0", redis_url]:
            client: Any = Redis.from_url(url, retry=Retry(NoBackoff(), 0))
            stack.push_async_callback(client.aclose)
            store = RedisStreamStore(client, prefix=prefix, poll=0.02)
            agent = scripted_agent(responder=lambda _: [Text(ANSWER)], chunk_size=4, delay=0.02)
            app = AdkApp(agent, stores=Stores(streams=store), identify=lambda _: "alice")
            live = await stack.enter_async_context(serve(app))
            urls.append(live.replace("ws://", "http://", 1).removesuffix("/live"))
        try:
            yield proxy, urls[0], urls[1]
        finally:
            await proxy.cut()


def stopped_midway(chunks: list[dict[str, Any]]) -> None:
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert ANSWER.startswith(text) and text and text != ANSWER, text
    assert chunks[-4:] == [
        {"type": "text-end", "id": chunks[-4].get("id")},
        {"type": "abort"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_a_stop_reaches_a_worker_whose_redis_was_briefly_unreachable(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker running the answer loses Redis while the user stops it on another worker:
    its stop check fails, is retried, and sees the stop once Redis is back; the ``DELETE``
    answers ``stopped: true`` only once the answer really ended."""
    async with two_workers(redis_url) as (proxy, cut_off, other), httpx.AsyncClient() as client:
        post = asyncio.create_task(
            client.post(f"{cut_off}/chat", json=user_body("hi", "outage"), timeout=30)
        )
        await until_text(client, other, "outage")
        await proxy.cut()
        stop = asyncio.create_task(client.delete(f"{other}/chat/outage/stream", timeout=30))
        await asyncio.sleep(0.5)
        assert not stop.done()  # it waits for the answer to end
        await proxy.restore()
        stopped = await stop
        chunks = parse_sse((await post).content)
    assert (stopped.status_code, stopped.json()) == (200, {"stopped": True})
    stopped_midway(chunks)
    assert "checking whether the user stopped an answer failed" in caplog.text


async def test_a_stop_on_a_worker_cut_from_redis_is_a_503_and_works_once_it_is_back(
    redis_url: str,
) -> None:
    async with two_workers(redis_url) as (proxy, cut_off, other), httpx.AsyncClient() as client:
        post = asyncio.create_task(
            client.post(f"{other}/chat", json=user_body("hi", "partition"), timeout=30)
        )
        await until_text(client, cut_off, "partition")
        await proxy.cut()
        refused = await client.delete(f"{cut_off}/chat/partition/stream", timeout=30)
        await proxy.restore()
        stopped = await client.delete(f"{cut_off}/chat/partition/stream", timeout=30)
        chunks = parse_sse((await post).content)
    assert (refused.status_code, refused.json()) == (
        503,
        {"error": "the stream store cannot be reached: the answer was not stopped"},
    )
    assert (stopped.status_code, stopped.json()) == (200, {"stopped": True})
    stopped_midway(chunks)
