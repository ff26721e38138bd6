"""Live resume from a new connection (``Stores(streams=InMemoryStreamStore())``), under a real
uvicorn in the test's event loop: the page's socket closes mid-answer (a reload), the answer goes
on without it, and a ``resume`` on a new connection — the stock v7 transport's frame: a new
``requestId``, the chat's ``id``, no ``lastSequence``, no chat in the URL — replays it from its
start and follows it to its end. The model answers that turn once; history is what the client
shows."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from adk_asgi import AdkApp, Limits, Stores
from adk_asgi.stores.resumable import InMemoryStreamStore
from adk_asgi.testing import demo_model, read_ui_message
from adk_asgi.wire.encoding import CUT_SHORT
from demo_app import build_agent
from tests.live.live_server import leftover_tasks, wait_until_closed
from tests.live.live_socket import (
    Live,
    cookie_of,
    http_history,
    open_live,
    send_resume,
    serve,
    text_frames_until_end,
    unframe,
)
from tests.support import answer, normalize_ids

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

PROMPTS = {
    "text": "hello",
    "tool call": "weather in Paris",
    "approval": "weather in Paris then pay 5 to alice",
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[tuple[AdkApp, str]]:
    app = AdkApp(build_agent(demo_model(delay=0.03)), stores=Stores(streams=InMemoryStreamStore()))
    async with serve(app) as url:
        yield app, url


async def leave_mid_answer(live: Live, text: str, chunks: int = 4) -> None:
    """Send ``text``, read the first ``chunks`` chunks of the answer, then close the socket."""
    request_id = await live.send(text)
    seen = 0
    while seen < chunks:
        frame = json.loads(await asyncio.wait_for(live.socket.recv(), 10))
        if frame.get("requestId") == request_id and frame["type"] == "chunk":
            seen += 1
        assert frame["type"] in ("start", "chunk"), frame
    await live.socket.close()


async def resume(url: str, chat_id: str, cookie: str) -> tuple[Live, list[dict[str, Any]]]:
    """A reloaded page: a new connection (no chat in its URL, as the stock transport opens it)
    that resumes ``chat_id``; returns it and the chunks of its resume."""
    again, socket = await open_live(url, chat_id, cookie=cookie)
    await send_resume(socket, chat_id, "resume-1")
    return again, unframe(await text_frames_until_end(socket, "resume-1"), "resume-1")


async def uninterrupted(url: str, text: str, approve: bool) -> list[list[dict[str, Any]]]:
    """The responses of a run nobody interrupts: to ``text``, then to the approval."""
    live, socket = await open_live(url)
    async with socket:
        responses = [await live.turn(text)]
        if approve:
            answer(live.assistant, "process_payment", approved=True)
            responses.append(await live.turn())
    return [normalize_ids(chunks) for chunks in responses]


@pytest.mark.parametrize("kind", list(PROMPTS))
async def test_a_reload_mid_answer_resumes_it_whole_on_a_new_connection(
    server: tuple[AdkApp, str], kind: str
) -> None:
    app, url = server
    approve = kind == "approval"
    expected = await uninterrupted(url, PROMPTS[kind], approve)
    live, socket = await open_live(url)
    await leave_mid_answer(live, PROMPTS[kind])
    again, resumed = await resume(url, live.chat_id, cookie_of(socket))
    responses = [normalize_ids(resumed)]
    async with again.socket:
        again.user, again.assistant = live.user, read_ui_message(resumed)
        if approve:  # the payment left waiting is approved from the new page
            answer(again.assistant, "process_payment", approved=True)
            responses.append(normalize_ids(await again.turn()))
        shown = [again.user, again.assistant]
        await again.turn("hello")  # the model did not answer the resumed turn again meanwhile
        shown += [again.user, again.assistant]
        history = await http_history(url, cookie_of(again.socket), live.chat_id)
    assert responses == expected
    assert history == shown
    await wait_until_closed(app)


async def test_a_resume_that_comes_after_the_answer_ended_finds_it_in_history(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    baseline = asyncio.all_tasks()
    live, socket = await open_live(url)
    await leave_mid_answer(live, "hello")
    await wait_until_closed(app)  # the answer ended, and the connection with it
    assert await leftover_tasks(baseline) == []
    _, socket = await open_live(url, live.chat_id, cookie=cookie_of(socket))
    async with socket:
        await send_resume(socket, live.chat_id, "resume-1")
        assert json.loads(await asyncio.wait_for(socket.recv(), 10)) == {
            "type": "no-active",
            "requestId": "resume-1",
        }
        history = await http_history(url, cookie_of(socket), live.chat_id)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["parts"][-1]["state"] == "done"


async def test_an_answer_past_the_detached_timeout_ends_its_replay_with_an_error() -> None:
    app = AdkApp(
        build_agent(demo_model(delay=0.05)),
        stores=Stores(streams=InMemoryStreamStore()),
        limits=Limits(live_detached_timeout=0.2),
    )
    async with serve(app) as url:
        live, socket = await open_live(url)
        await leave_mid_answer(live, "hello", chunks=3)
        again, resumed = await resume(url, live.chat_id, cookie_of(socket))
        await again.socket.close()
        await wait_until_closed(app)
    assert resumed[-2:] == [{"type": "error", "errorText": CUT_SHORT}, {"type": "finish"}]
