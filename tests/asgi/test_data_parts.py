"""App data parts (``send_data``) through the ASGI app: exact streams over SSE and live, and
history (docs/data-parts.md).

A tool sends a ``data-weather`` card while it runs (loading, then done: one id), and a
transient notice; a ``before_model_callback`` sends a card of its own. The stream shows each
part when it is sent — the tool's before its result — the transient notice is never stored,
and history shows the card where the stream did, updated in place.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from google.adk.agents import ParallelAgent, SequentialAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.run_config import RunConfig, ToolThreadPoolConfig
from google.adk.models.llm_request import LlmRequest
from google.adk.tools import ToolContext

from adk_asgi import AdkApp, DataPartError, Messages, send_data
from adk_asgi.hitl import bookkeeping
from adk_asgi.testing import Call, Text
from adk_asgi.testing.asgi_websocket import websocket
from tests.support import counter, parse_sse, scripted_agent, user_body

pytestmark = pytest.mark.asyncio

NO_QUEUE = (
    "send_data is called from a tool or a callback of an agent that ADK runs on its event"
    " queue: an LlmAgent or a workflow at the root, not a classic ParallelAgent,"
    " SequentialAgent or LoopAgent tree"
)
LOADING = {"city": "Paris", "status": "loading"}
SUNNY = {"city": "Paris", "status": "sunny", "temperature": 21}


async def get_weather(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """The weather in a city, with a card that shows its progress."""
    send_data(tool_context, "weather", {"city": city, "status": "loading"}, id="w1")
    send_data(tool_context, "notice", {"text": f"Looking up {city}"}, transient=True)
    await asyncio.sleep(0)  # (the tool goes on in its own time)
    send_data(
        tool_context, "weather", {"city": city, "status": "sunny", "temperature": 21}, id="w1"
    )
    return {"forecast": "sunny"}


def planning(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    """A callback's part: shown (and stored) before each model call."""
    calls = sum(1 for c in llm_request.contents for p in c.parts or [] if p.function_response)
    send_data(callback_context, "plan", {"modelCall": calls + 1})


def weather_app() -> AdkApp:
    agent = scripted_agent(
        [[Call("get_weather", {"city": "Paris"})], [Text("Sunny.")]],
        tools=[get_weather],
        before_model_callback=planning,
    )
    return AdkApp(
        agent,
        live_agent=agent,
        messages=Messages(message_id_factory=counter("msg")),
        identify=lambda _: "alice",
    )


CALL = [
    {
        "type": "tool-input-start",
        "toolCallId": "call_1",
        "toolName": "get_weather",
        "providerExecuted": True,
    },
    {
        "type": "tool-input-available",
        "toolCallId": "call_1",
        "toolName": "get_weather",
        "input": {"city": "Paris"},
        "providerExecuted": True,
    },
]
CARDS = [
    {"type": "data-weather", "id": "w1", "data": LOADING},
    {"type": "data-notice", "data": {"text": "Looking up Paris"}, "transient": True},
    {"type": "data-weather", "id": "w1", "data": SUNNY},
]
RESULT = {"type": "tool-output-available", "toolCallId": "call_1", "output": {"forecast": "sunny"}}
HISTORY = [
    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather in Paris"}]},
    {
        "id": "msg1",
        "role": "assistant",
        "parts": [
            {"type": "data-plan", "data": {"modelCall": 1}},
            {"type": "step-start"},
            {
                "type": "tool-get_weather",
                "toolCallId": "call_1",
                "state": "output-available",
                "input": {"city": "Paris"},
                "output": {"forecast": "sunny"},
                "providerExecuted": True,
            },
            {"type": "data-weather", "id": "w1", "data": SUNNY},
            {"type": "data-plan", "data": {"modelCall": 2}},
            {"type": "step-start"},
            {"type": "text", "text": "Sunny.", "state": "done"},
        ],
    },
]


def http(app: AdkApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_sse_shows_each_part_when_it_is_sent_and_history_where_it_was_shown() -> None:
    app = weather_app()
    async with http(app) as client:
        response = await client.post("/chat", json=user_body("weather in Paris"))
        history = await client.get("/chat/chat-1/messages")
    t = "msg1-txt1"
    assert parse_sse(response.content) == [
        {"type": "start", "messageId": "msg1"},
        {"type": "data-plan", "data": {"modelCall": 1}},
        {"type": "start-step"},
        *CALL,
        *CARDS,
        RESULT,
        {"type": "data-plan", "data": {"modelCall": 2}},
        {"type": "finish-step"},  # (a step ends when the next one starts)
        {"type": "start-step"},
        {"type": "text-start", "id": t},
        {"type": "text-delta", "id": t, "delta": "Sunny"},
        {"type": "text-delta", "id": t, "delta": "."},
        {"type": "text-end", "id": t},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert history.json() == HISTORY
    session = await app.services.session_service.get_session(
        app_name=app.services.app_name, user_id="alice", session_id="chat-1"
    )
    assert session is not None
    stored = [bookkeeping.read(e).data_part for e in session.events]
    assert [p["type"] for p in stored if p is not None] == [
        "data-plan",
        "data-weather",
        "data-weather",
        "data-plan",
    ]  # (the transient notice is not)
    await app.aclose()


async def test_live_shows_each_part_when_it_is_sent_and_history_where_it_was_shown() -> None:
    app = weather_app()
    try:
        async with websocket(app, "/live?chatId=chat-1") as socket:
            message = {
                "id": "u1",
                "role": "user",
                "parts": [{"type": "text", "text": "weather in Paris"}],
            }
            await socket.send_json(
                {
                    "type": "send",
                    "requestId": "r1",
                    "id": "chat-1",
                    "trigger": "submit-message",
                    "messageId": None,
                    "messages": [message],
                }
            )
            chunks: list[dict[str, Any]] = []
            while (frame := await socket.receive_json())["type"] != "end":
                if frame["type"] == "chunk":
                    chunks.append(frame["chunk"])
        async with http(app) as client:
            history = (await client.get("/chat/chat-1/messages")).json()
    finally:
        await app.aclose()
    t = "msg1-txt1"
    assert chunks == [
        {"type": "start", "messageId": "msg1"},
        {"type": "data-plan", "data": {"modelCall": 1}},  # (live: once, on the user's content)
        {"type": "start-step"},
        *CALL,
        *CARDS,
        RESULT,
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": t},
        {"type": "text-delta", "id": t, "delta": "Sunny"},
        {"type": "text-delta", "id": t, "delta": "."},
        {"type": "text-end", "id": t},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    second = {"type": "data-plan", "data": {"modelCall": 2}}
    assert history == [
        HISTORY[0],
        {**HISTORY[1], "parts": [p for p in HISTORY[1]["parts"] if p != second]},
    ]


async def test_send_data_outside_a_run_or_with_what_no_client_takes_is_refused() -> None:
    refused: list[str] = []

    async def careless(tool_context: ToolContext) -> dict[str, Any]:
        """Sends what no client could take."""
        for name, data in [("bad name", 1), ("error", 1), ("ok", None), ("ok", {1j: 2})]:
            try:
                send_data(tool_context, name, data)
            except DataPartError as exc:
                refused.append(type(exc).__name__)
        return {"done": True}

    agent = scripted_agent([[Call("careless", {})], [Text("ok")]], tools=[careless])
    app = AdkApp(
        agent, messages=Messages(message_id_factory=counter("msg")), identify=lambda _: "alice"
    )
    async with http(app) as client:
        response = await client.post("/chat", json=user_body("go"))
    assert [c["type"] for c in parse_sse(response.content) if c["type"].startswith("data-")] == []
    assert refused == ["DataPartError"] * 4
    await app.aclose()


def report_card(tool_context: ToolContext) -> dict[str, Any]:
    """A sync tool: on the event loop unless ADK's thread pool runs it."""
    try:
        send_data(tool_context, "card", {"sync": True})
    except RuntimeError as exc:
        return {"refused": str(exc)}
    return {"sent": True}


@pytest.mark.parametrize("pooled", [False, True], ids=["on the loop", "in the thread pool"])
async def test_a_sync_tool_sends_parts_on_the_loop_and_is_told_off_it(pooled: bool) -> None:
    agent = scripted_agent([[Call("report_card", {})], [Text("ok")]], tools=[report_card])
    pool = RunConfig(tool_thread_pool_config=ToolThreadPoolConfig()) if pooled else None
    app = AdkApp(agent, identify=lambda _: "alice", run_config=pool)
    async with http(app) as client:
        response = await client.post("/chat", json=user_body("go"))
    chunks = parse_sse(response.content)
    await app.aclose()
    shown = [c for c in chunks if c["type"] in ("data-card", "tool-output-available")]
    if pooled:
        assert shown == [
            {
                "type": "tool-output-available",
                "toolCallId": "call_1",
                "output": {"refused": "send_data is called on the agent's event loop"},
            }
        ]
    else:
        assert shown == [
            {"type": "data-card", "data": {"sync": True}},
            {"type": "tool-output-available", "toolCallId": "call_1", "output": {"sent": True}},
        ]


@pytest.mark.filterwarnings("ignore:(Parallel|Sequential)Agent is deprecated")
@pytest.mark.parametrize("tree", [ParallelAgent, SequentialAgent])
async def test_a_classic_agent_tree_is_told_it_has_no_queue_for_parts(
    tree: type[ParallelAgent | SequentialAgent],
) -> None:
    """ADK runs its classic trees with no event queue: a part could not be put in order."""
    worker = scripted_agent([[Call("report_card", {})], [Text("ok")]], tools=[report_card])
    app = AdkApp(tree(name="tree", sub_agents=[worker]), identify=lambda _: "alice")
    async with http(app) as client:
        response = await client.post("/chat", json=user_body("go"))
    await app.aclose()
    outputs = [c["output"] for c in parse_sse(response.content) if c["type"].startswith("tool-o")]
    assert outputs == [{"refused": NO_QUEUE}]
