"""Resumable SSE streams (``Stores(streams=InMemoryStreamStore())``) under a real uvicorn: a
reader that leaves does not stop the run, ``GET /chat/{id}/stream`` replays the answer under
way from its first chunk and follows it to ``[DONE]``, ``204`` when nothing streams or the chat
is someone else's, and ``DELETE`` stops the answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from adk_asgi import AdkApp, Stores
from adk_asgi.stores.locks import ChatKey
from adk_asgi.stores.resumable import InMemoryStreamStore
from adk_asgi.stores.stops import ATTEMPTS
from adk_asgi.testing import Text, read_ui_message
from tests.e2e.node_client import drive_chat_async
from tests.live.live_socket import serve
from tests.support import normalize_ids, parse_sse, scripted_agent, user_body

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

ANSWER = (
    "A slow answer, streamed in many small deltas so that a reader can leave midway, "
    "and a reloaded page can pick it up again before it is over."
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[tuple[AdkApp, str]]:
    agent = scripted_agent(responder=lambda _: [Text(ANSWER)], chunk_size=4, delay=0.02)
    app = AdkApp(
        agent,
        stores=Stores(streams=InMemoryStreamStore()),
        identify=lambda c: c.headers.get("x-user", "alice"),
    )
    async with serve(app) as url:
        yield app, url.replace("ws://", "http://", 1).removesuffix("/live")


async def until_streaming(client: httpx.AsyncClient, base: str, chat_id: str) -> None:
    """Return once the chat's answer is under way (its stream can be resumed)."""
    async with asyncio.timeout(10):
        while True:
            async with client.stream("GET", f"{base}/chat/{chat_id}/stream") as response:
                if response.status_code == 200:
                    return
            await asyncio.sleep(0.005)


async def leave_after(client: httpx.AsyncClient, base: str, body: dict[str, Any], n: int) -> None:
    """POST ``body`` and read ``n`` pieces of the answer, then close the connection."""
    async with client.stream("POST", f"{base}/chat", json=body) as response:
        assert response.status_code == 200
        pieces = 0
        async for _ in response.aiter_raw():
            pieces += 1
            if pieces == n:
                break


async def test_a_reader_that_leaves_does_not_stop_the_answer_and_resume_replays_it_whole(
    server: tuple[AdkApp, str],
) -> None:
    _, base = server
    async with httpx.AsyncClient(timeout=10) as client:
        whole = await client.post(f"{base}/chat", json=user_body("hi", chat_id="whole"))
        expected = normalize_ids(parse_sse(whole.content))
        await leave_after(client, base, user_body("hi", chat_id="left"), 3)
        resumed = await client.get(f"{base}/chat/left/stream")
        assert resumed.status_code == 200
        assert normalize_ids(parse_sse(resumed.content)) == expected
        assert (await client.get(f"{base}/chat/left/stream")).status_code == 204  # it ended
        history = (await client.get(f"{base}/chat/left/messages")).json()
    assert [p.get("text") for p in history[1]["parts"] if p["type"] == "text"] == [ANSWER]


async def test_several_readers_follow_one_answer(server: tuple[AdkApp, str]) -> None:
    _, base = server
    async with httpx.AsyncClient(timeout=10) as client:
        post = asyncio.create_task(client.post(f"{base}/chat", json=user_body("hi", "many")))
        await until_streaming(client, base, "many")
        readers = await asyncio.gather(*(client.get(f"{base}/chat/many/stream") for _ in range(3)))
        original = (await post).content
    assert [r.content for r in readers] == [original] * 3


async def test_nothing_to_resume_is_204_and_so_is_another_users_chat(
    server: tuple[AdkApp, str],
) -> None:
    _, base = server
    async with httpx.AsyncClient(timeout=10) as client:
        assert (await client.get(f"{base}/chat/never/stream")).status_code == 204
        post = asyncio.create_task(client.post(f"{base}/chat", json=user_body("hi", "mine")))
        await until_streaming(client, base, "mine")
        other = await client.get(f"{base}/chat/mine/stream", headers={"x-user": "mallory"})
        stop = await client.delete(f"{base}/chat/mine/stream", headers={"x-user": "mallory"})
        await post
    assert other.status_code == 204
    assert stop.json() == {"stopped": False}


async def test_delete_stops_the_answer_under_way(server: tuple[AdkApp, str]) -> None:
    _, base = server
    async with httpx.AsyncClient(timeout=10) as client:
        post = asyncio.create_task(client.post(f"{base}/chat", json=user_body("hi", "stop")))
        await until_streaming(client, base, "stop")
        stopped = await client.delete(f"{base}/chat/stop/stream")
        chunks = parse_sse((await post).content)
    assert stopped.json() == {"stopped": True}
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert ANSWER.startswith(text) and text != ANSWER
    assert chunks[-1]["type"] == "finish"


async def test_a_stopped_answer_keeps_in_history_the_text_it_showed(
    server: tuple[AdkApp, str],
) -> None:
    """ADK stores no partial text, so a stop mid-answer used to leave the user's message with
    no reply after a reload, though the page had shown part of one."""
    _, base = server
    async with httpx.AsyncClient(timeout=10) as client:
        post = asyncio.create_task(client.post(f"{base}/chat", json=user_body("hi", "kept")))
        await until_streaming(client, base, "kept")
        async with client.stream("GET", f"{base}/chat/kept/stream") as following:
            async for line in following.aiter_lines():
                if '"text-delta"' in line:
                    break  # some of the answer is on the page: the user stops it now
        await client.delete(f"{base}/chat/kept/stream")
        chunks = parse_sse((await post).content)
        history = (await client.get(f"{base}/chat/kept/messages")).json()
    shown = read_ui_message(chunks)
    assert [p for p in shown["parts"] if p["type"] == "text"]  # it was mid-answer
    assert history[1]["parts"] == [
        p if p["type"] != "text" else {**p, "state": "done"} for p in shown["parts"]
    ]


@pytest.mark.parametrize("sdk", [6, 7])
async def test_the_ai_sdk_chat_reloaded_mid_answer_resumes_it_whole(
    server: tuple[AdkApp, str], sdk: int
) -> None:
    """The real ``Chat`` of ai@6 / ai@7: stopped mid-answer (the page goes away), then a new
    ``Chat`` on the same chat id, hydrated from history, calls ``resumeStream()`` as
    ``useChat({ resume: true })`` does on mount: it ends with the whole answer, once."""
    _, base = server
    chat_id = f"reload-v{sdk}"
    spec = {
        "transport": "sse",
        "api": f"{base}/chat",
        "chatId": chat_id,
        "steps": [
            {"send": "hi", "background": True},
            {"stop": True},
            {"reload": {"url": f"{base}/chat/{chat_id}/messages", "resume": True}},
        ],
    }
    report = await drive_chat_async(spec, sdk)
    assert (report["status"], report["error"]) == ("ready", None)
    [stop] = report["stops"]
    assert stop["textBefore"] and stop["textBefore"] != ANSWER  # it really was mid-answer
    # the reloaded page found the answer still under way (history: the user's message alone)
    assert [(r["status"], r["messageCount"]) for r in report["reloads"]] == [(200, 1)]
    assert [
        (r["method"], r["url"].rsplit("/", 1)[-1], r["status"]) for r in report["responses"]
    ] == [
        ("POST", "chat", 200),
        ("GET", "stream", 200),
    ]
    [user, assistant] = report["messages"]
    assert user["parts"] == [{"type": "text", "text": "hi"}]
    texts = [p for p in assistant["parts"] if p["type"] == "text"]
    assert [(p["text"], p.get("state")) for p in texts] == [(ANSWER, "done")]


class FailingStore(InMemoryStreamStore):
    """A stream store whose backend fails on purpose: ``stopped`` (the run's stop check) and
    ``stop`` (the ``DELETE``'s write) each raise their first ``n`` calls, as a Redis that drops
    its connections does."""

    def __init__(self, *, stopped_failures: int = 0, stop_failures: int = 0) -> None:
        super().__init__()
        self.stopped_failures = stopped_failures
        self.stop_failures = stop_failures

    async def stopped(self, key: ChatKey, stream_id: str) -> None:
        if self.stopped_failures:
            self.stopped_failures -= 1
            raise ConnectionError("the stream store went away")
        await super().stopped(key, stream_id)

    async def stop(self, key: ChatKey) -> bool:
        if self.stop_failures:
            self.stop_failures -= 1
            raise ConnectionError("the stream store went away")
        return await super().stop(key)


@pytest_asyncio.fixture(loop_scope="module")
async def failing() -> AsyncIterator[tuple[FailingStore, str]]:
    store = FailingStore()
    agent = scripted_agent(responder=lambda _: [Text(ANSWER)], chunk_size=4, delay=0.02)
    async with serve(AdkApp(agent, stores=Stores(streams=store))) as url:
        yield store, url.replace("ws://", "http://", 1).removesuffix("/live")


async def until_text(client: httpx.AsyncClient, base: str, chat_id: str) -> None:
    """Return once the chat's answer has streamed some of its text."""
    await until_streaming(client, base, chat_id)
    async with client.stream("GET", f"{base}/chat/{chat_id}/stream") as following:
        async for line in following.aiter_lines():
            if '"text-delta"' in line:
                return


def stopped_answer(chunks: list[dict[str, Any]]) -> None:
    """Check that ``chunks`` are of an answer whose run was aborted mid-text."""
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert ANSWER.startswith(text) and text and text != ANSWER, text
    assert chunks[-4:] == [
        {"type": "text-end", "id": chunks[-4].get("id")},
        {"type": "abort"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_a_stop_check_that_fails_once_is_retried_and_the_answer_stops(
    failing: tuple[FailingStore, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The run's stop check died with the store's first error: the ``DELETE`` said
    ``stopped: true`` and the answer ran on to ``finishReason: "stop"``."""
    store, base = failing
    store.stopped_failures = 1
    async with httpx.AsyncClient(timeout=10) as client:
        post = asyncio.create_task(client.post(f"{base}/chat", json=user_body("hi", "flaky")))
        await until_text(client, base, "flaky")
        stopped = await client.delete(f"{base}/chat/flaky/stream")
        chunks = parse_sse((await post).content)
    assert (stopped.status_code, stopped.json()) == (200, {"stopped": True})
    stopped_answer(chunks)
    assert store.stopped_failures == 0
    assert "checking whether the user stopped an answer failed" in caplog.text


async def test_a_stop_the_store_refuses_on_all_but_the_last_try_is_written_and_stops_the_answer(
    failing: tuple[FailingStore, str],
) -> None:
    store, base = failing
    store.stop_failures = ATTEMPTS - 1
    async with httpx.AsyncClient(timeout=10) as client:
        post = asyncio.create_task(client.post(f"{base}/chat", json=user_body("hi", "retry")))
        await until_text(client, base, "retry")
        stopped = await client.delete(f"{base}/chat/retry/stream")
        chunks = parse_sse((await post).content)
    assert (stopped.status_code, stopped.json()) == (200, {"stopped": True})
    stopped_answer(chunks)


async def test_a_stop_the_store_cannot_write_is_a_503_and_the_answer_goes_on(
    failing: tuple[FailingStore, str],
) -> None:
    """The ``DELETE`` said ``stopped: true`` for a stop that was never written."""
    store, base = failing
    store.stop_failures = ATTEMPTS
    async with httpx.AsyncClient(timeout=10) as client:
        post = asyncio.create_task(client.post(f"{base}/chat", json=user_body("hi", "down")))
        await until_streaming(client, base, "down")
        refused = await client.delete(f"{base}/chat/down/stream")
        chunks = parse_sse((await post).content)
    assert (refused.status_code, refused.json()) == (
        503,
        {"error": "the stream store cannot be reached: the answer was not stopped"},
    )
    assert "".join(c["delta"] for c in chunks if c["type"] == "text-delta") == ANSWER
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}
