"""A page reloaded mid-answer, with the real AI SDK clients — over SSE (the stock
``DefaultChatTransport``, resumed by ``GET /chat/{id}/stream``) and in live mode: the stock ai@7
``WebSocketChatTransport`` ("ws") and the served ``transport.js`` under ai@6 and ai@7 ("ws-js"),
against ``Stores(streams=InMemoryStreamStore())`` under a real uvicorn in this event loop.

The page's socket closes as a browser closes it on unload (no ``abort``), the answer goes on
without it, and the reloaded page — a new ``Chat`` on the same chat id, hydrated from
``GET /chat/{id}/messages``, calling ``resumeStream()`` as ``useChat({ resume: true })`` does on
mount — gets it replayed from its first chunk on a new connection and followed to its end. It
ends with exactly the message an uninterrupted run of the same client shows, the model answers
the turn once, and history shows what the client shows: for text, a server tool, and a payment
left waiting for approval that the reloaded page approves."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from adk_asgi import AdkApp, Stores
from adk_asgi.stores.resumable import InMemoryStreamStore
from adk_asgi.testing import demo_model
from tests.e2e.demo_under_test import ToolRuns, build_agent
from tests.e2e.node_client import drive_chat_async
from tests.live.live_chunks import joined
from tests.live.live_server import wait_until_closed
from tests.live.live_socket import http_history, serve, unframe
from tests.support import normalize_ids

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

CLIENTS = [("ws", 7), ("ws-js", 6), ("ws-js", 7)]
PROMPTS = {
    "text": "hello",
    "tool call": "weather in Paris",
    "approval": "weather in Paris then pay 5 to alice",  # text, then the payment's approval
}
HISTORY_MID_ANSWER = {"text": 1, "tool call": 2, "approval": 2}
"""How many messages the reloaded page finds in history while the answer is under way: the
user's alone, or with the steps the answer finished before its text (the weather)."""
TOOL_RUNS = {
    "text": {},
    "tool call": {"get_weather": 1},
    "approval": {"get_weather": 1, "process_payment": 1},
}
"""How many times each server tool really ran for the chat: once, reload or not."""
APPROVE = {"approve": {"tool": "process_payment", "approved": True}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[tuple[AdkApp, str, ToolRuns]]:
    """The demo agent (its server tools count their runs per chat) on the demo model, slowed to
    two characters every 30 ms: the shortest text before a reload ("Done. Next,
    process_payment.") lasts ~0.4 s, several times what a reload takes."""
    runs = ToolRuns()
    agent = build_agent(runs)
    agent.model = demo_model(chunk_size=2, delay=0.03)
    app = AdkApp(agent, stores=Stores(streams=InMemoryStreamStore()))
    async with serve(app) as url:
        yield app, url, runs


def chat_spec(url: str, transport: str, sdk: int, *steps: Any) -> dict[str, Any]:
    """A fresh browser (its own identity cookie) on a new chat."""
    base = url.replace("ws://", "http://", 1).removesuffix("/live")
    spec: dict[str, Any] = {
        "transport": transport,
        "wsUrl": url,
        "transportJsUrl": f"{base}/transport.js",
        "chatId": f"chat-{secrets.token_hex(4)}",
        "headers": {"cookie": f"adk_asgi_uid={secrets.token_urlsafe(24)}"},
        "steps": list(steps),
        # the idle wait after a step: short, so the reload follows the unload at once
        "idleMs": 50,
    }
    if transport == "ws-js":
        spec["wsTransportOptions"] = {"sdk": sdk}  # as a page on that SDK constructs it
    return spec


def responses(report: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The chunks of each request the client sent over live (``send`` and ``resume``), in
    order, each checked for its framing (``start``, chunks numbered from 0, ``end``; the
    request of a page that went away mid-answer has no ``end``), with generated ids replaced
    and each run of text deltas joined: the server merges deltas that come close together on
    a live socket, so only a replay from the stream store has them one by one."""
    result = []
    for sent in report["frames"]:
        if sent["dir"] != "out" or sent["frame"].get("type") not in ("send", "resume"):
            continue
        request_id = sent["frame"]["requestId"]
        frames = [
            e["frame"]
            for e in report["frames"]
            if e["dir"] == "in" and e["frame"].get("requestId") == request_id
        ]
        if frames[-1]["type"] != "end":  # cut short by the unload
            frames.append({"type": "end", "requestId": request_id})
        result.append(joined(normalize_ids(unframe(frames, request_id))))
    return result


def comparable(value: Any, ids: dict[str, str] | None = None) -> Any:
    """``value`` (messages) with every generated id (``id``, ``toolCallId``) replaced by a
    placeholder numbered in order of appearance: the same id, the same placeholder."""
    ids = {} if ids is None else ids
    if isinstance(value, list):
        return [comparable(item, ids) for item in value]
    if not isinstance(value, dict):
        return value
    result = {}
    for key, item in value.items():
        if key in ("id", "toolCallId") and isinstance(item, str):
            result[key] = ids.setdefault(item, f"<id{len(ids) + 1}>")
        else:
            result[key] = comparable(item, ids)
    return result


@pytest.mark.parametrize("kind", list(PROMPTS))
@pytest.mark.parametrize(("transport", "sdk"), CLIENTS, ids=[f"{t}-v{v}" for t, v in CLIENTS])
async def test_a_page_reloaded_mid_answer_resumes_it_whole_on_a_new_connection(
    server: tuple[AdkApp, str, ToolRuns], transport: str, sdk: int, kind: str
) -> None:
    """The same chat twice at once, each in a fresh browser: uninterrupted, and reloaded
    mid-answer (then, for the approval, approved from the reloaded page). The reloaded page
    ends with the uninterrupted run's messages, having received its responses."""
    app, url, runs = server
    then = [APPROVE] if kind == "approval" else []
    uninterrupted = chat_spec(url, transport, sdk, {"send": PROMPTS[kind]}, *then)
    reloaded = chat_spec(url, transport, sdk)
    base = url.replace("ws://", "http://", 1).removesuffix("/live")
    chat_id = reloaded["chatId"]
    reloaded["steps"] = [
        {"send": PROMPTS[kind], "background": True},
        {"stop": "unload"},  # the page goes away mid-answer: its socket closes
        {"reload": {"url": f"{base}/chat/{chat_id}/messages", "resume": True}},
        *then,  # the reloaded page approves the payment the resumed answer asks for
    ]
    expected, report = await asyncio.gather(
        drive_chat_async(uninterrupted, sdk), drive_chat_async(reloaded, sdk)
    )
    await wait_until_closed(app)
    for run in (expected, report):
        assert (run["status"], run["error"], run["timeout"], run["loop"]) == (
            "ready",
            None,
            False,
            False,
        ), run
    [stop] = report["stops"]
    assert (stop["status"], stop["statusAfter"]) == ("streaming", "error")
    assert stop["textBefore"]  # it really was mid-answer
    assert [s["closeCode"] for s in report["sockets"]] == [1001, 1000]  # a new page, a new socket
    # The reloaded page found the answer still under way, and resumed it on its new socket:
    # replayed from its first chunk and followed to its end, as the uninterrupted run got it.
    assert [(r["status"], r["messageCount"]) for r in report["reloads"]] == [
        (200, HISTORY_MID_ANSWER[kind])
    ]
    [left, resumed, *approved] = responses(report)
    expected_responses = responses(expected)
    assert resumed == expected_responses[0]
    assert left[-1]["type"] != "finish"  # the first page never saw the end of it
    assert approved == expected_responses[1:]
    # what the client shows is exactly what the uninterrupted run shows, and what history shows
    assert comparable(report["messages"]) == comparable(expected["messages"])
    cookie = reloaded["headers"]["cookie"]
    assert await http_history(url, cookie, chat_id) == report["messages"]
    assert dict(runs.by_chat.get(chat_id, {})) == TOOL_RUNS[kind]


@pytest.mark.parametrize("kind", list(PROMPTS))
@pytest.mark.parametrize("sdk", [6, 7])
async def test_an_sse_page_reloaded_mid_answer_resumes_it_whole(
    server: tuple[AdkApp, str, ToolRuns], sdk: int, kind: str
) -> None:
    """The same over SSE (``DefaultChatTransport``): the page's request goes away mid-answer,
    the run goes on, and the reloaded page's ``GET /chat/{id}/stream`` replays and follows it,
    for text, a server tool and an approval the reloaded page then gives."""
    _, url, runs = server
    base = url.replace("ws://", "http://", 1).removesuffix("/live")
    then = [APPROVE] if kind == "approval" else []

    def sse_spec(*steps: Any) -> dict[str, Any]:
        spec = chat_spec(url, "sse", sdk, *steps)
        spec["api"] = f"{base}/chat"
        return spec

    uninterrupted = sse_spec({"send": PROMPTS[kind]}, *then)
    reloaded = sse_spec()
    chat_id = reloaded["chatId"]
    reloaded["steps"] = [
        {"send": PROMPTS[kind], "background": True},
        {"stop": True},  # the page's request goes away mid-answer
        {"reload": {"url": f"{base}/chat/{chat_id}/messages", "resume": True}},
        *then,
    ]
    expected, report = await asyncio.gather(
        drive_chat_async(uninterrupted, sdk), drive_chat_async(reloaded, sdk)
    )
    for run in (expected, report):
        assert (run["status"], run["error"]) == ("ready", None), run
    [stop] = report["stops"]
    assert stop["textBefore"]  # it really was mid-answer
    assert [(r["status"], r["messageCount"]) for r in report["reloads"]] == [
        (200, HISTORY_MID_ANSWER[kind])
    ]
    methods = [(r["method"], r["url"].rsplit("/", 1)[-1], r["status"]) for r in report["responses"]]
    approve = [("POST", "chat", 200)] if kind == "approval" else []
    assert methods == [("POST", "chat", 200), ("GET", "stream", 200), *approve]
    assert comparable(report["messages"]) == comparable(expected["messages"])
    cookie = reloaded["headers"]["cookie"]
    assert await http_history(url, cookie, chat_id) == report["messages"]
    assert dict(runs.by_chat.get(chat_id, {})) == TOOL_RUNS[kind]
