"""An agent's own tool callbacks over live act as they do over SSE (``live/agent_callbacks.py``).

* ``after_tool_callback``: what it makes of a tool's result is what the page is shown, what
  history keeps and what the model reads. The live bridge shows a server tool's result from the
  tool pipeline, as it comes, and stores it early next to a call that waits; ADK runs the
  agent's callbacks after the plugins' (the bridge's included), so the page was shown the raw
  result where the model and history got the callback's: a callback that redacts a value did
  not redact it for the page.
* ``before_tool_callback``: a call it answers is not asked about. The bridge asked the user (or
  the browser) first, where over SSE ADK runs the agent's callbacks before the tool asks.
* An app's plugin that replaces a result (``live/app_plugins.py``): ADK then runs none of the
  later plugins, the bridge's gate included, which never learnt that the call returned; next to
  a call waiting for approval, the step never paused, the approval was never shown, and it
  closed unanswered when its wait ran out.

Against a real uvicorn in the test's own loop (``ChatClient`` over the network), and the ASGI
client for SSE.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi import AdkApp, Limits
from adk_asgi.testing import ChatClient, ChatResponse, demo_model
from demo_app import build_agent
from tests.live.live_chunks import squash
from tests.live.live_server import wait_until_closed
from tests.servers import in_loop_uvicorn
from tests.support import counter

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

REDACTED = {"city": "Paris", "forecast": "[redacted]"}
RECEIPT = {"status": "sent", "amount": 5, "recipient": "alice", "currency": "USD", "receipt": "r1"}


class Redacting:
    """The demo agent with a callback that redacts the weather and adds a payment's receipt;
    each of its calls is recorded (it must run once per result)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.agent = build_agent(demo_model(id_factory=counter("call_")))
        self.agent.after_tool_callback = self.after_tool

    def after_tool(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> dict[str, Any] | None:
        self.calls.append(tool.name)
        if tool.name == "get_weather":
            return REDACTED
        if tool.name == "process_payment":
            return {**tool_response, "receipt": "r1"}
        return None


@asynccontextmanager
async def live_chat(app: AdkApp) -> AsyncIterator[ChatClient]:
    """A new browser's chat with ``app`` under uvicorn, over its live socket."""
    async with in_loop_uvicorn(app) as base, ChatClient(base_url=base, transport="live") as chat:
        yield chat


def streamed(reply: ChatResponse | None) -> list[dict[str, Any]]:
    """The chunks of a response that streamed to its end."""
    assert reply is not None and (reply.status, reply.error) == (200, None), reply
    return reply.chunks


async def reloaded(app: AdkApp, chat: ChatClient) -> list[dict[str, Any]]:
    """The page left (its socket closed, and the server's connection ended), then reloaded
    its history."""
    await chat.disconnect()
    await wait_until_closed(app)
    return await chat.history()


async def pay_approved(chat: ChatClient) -> list[dict[str, Any]]:
    """A payment asked for, then approved, on one connection; the approval's response."""
    streamed(await chat.send("pay 5 to alice"))
    return streamed(await chat.approve("process_payment"))


def outputs(chunks: list[dict[str, Any]]) -> list[Any]:
    return [c["output"] for c in chunks if c["type"] == "tool-output-available"]


def shown(message: dict[str, Any]) -> list[Any]:
    return [p.get("output") for p in message["parts"] if "toolCallId" in p]


async def test_a_server_tools_result_is_shown_as_the_agents_callback_made_it() -> None:
    redacting = Redacting()
    app = AdkApp(redacting.agent)
    async with live_chat(app) as chat:
        chunks = streamed(await chat.send("weather in Paris"))
        history = await reloaded(app, chat)
    _, said = squash(chunks)
    assert outputs(chunks) == [REDACTED]
    assert said == 'Here you go: get_weather: {"city": "Paris", "forecast": "[redacted]"}.'
    assert history == chat.messages
    assert redacting.calls == ["get_weather"]


async def test_an_approved_tools_result_is_shown_as_the_agents_callback_made_it() -> None:
    redacting = Redacting()
    app = AdkApp(redacting.agent, limits=Limits(approval_timeout=30))
    async with live_chat(app) as chat:
        chunks = await pay_approved(chat)
        history = await reloaded(app, chat)
    assert outputs(chunks) == [RECEIPT]
    assert history == chat.messages
    assert redacting.calls == ["process_payment"]


async def test_a_result_stored_next_to_a_wait_is_the_agents_callbacks() -> None:
    """Stored as it came, next to a payment that waits, then the connection dropped: the
    reload and the model on the next connection get the callback's result, once."""
    redacting = Redacting()
    app = AdkApp(redacting.agent, limits=Limits(approval_timeout=30))
    async with live_chat(app) as chat:
        first = streamed(await chat.send("weather in Paris and pay 5 to alice"))
        before = await reloaded(app, chat)
        shown_first = copy.deepcopy(chat.messages)
        # the approval goes over a new connection
        _, said = squash(streamed(await chat.approve("process_payment")))
        history = await reloaded(app, chat)
    assert outputs(first) == [REDACTED]
    assert before == shown_first
    assert shown(history[1]) == [REDACTED, RECEIPT]
    assert history == chat.messages
    assert said == (
        'Here you go: get_weather: {"city": "Paris", "forecast": "[redacted]"}; process_payment:'
        ' {"amount": 5, "currency": "USD", "receipt": "r1", "recipient": "alice", "status":'
        ' "sent"}.'
    )
    assert redacting.calls == ["get_weather", "process_payment"]


class Blocking:
    """The demo agent with a ``before_tool_callback`` that answers ``blocked`` calls itself
    (every call of those tools, or none with ``blocked=()``); each of its calls is recorded."""

    def __init__(self, *blocked: str) -> None:
        self.blocked = blocked
        self.calls: list[str] = []
        self.agent = build_agent(demo_model(id_factory=counter("call_")))
        self.agent.before_tool_callback = self.before_tool

    def before_tool(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        self.calls.append(tool.name)
        return {"blocked": "not today"} if tool.name in self.blocked else None


def tool_chunks(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in chunks if c["type"].startswith("tool-")]


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        (
            "pay 5 to alice",
            "process_payment",
            {"amount": 5, "recipient": "alice", "currency": "USD"},
        ),
        ("play track 2", "change_bgm", {"track": 2}),
    ],
    ids=["approval", "browser tool"],
)
async def test_a_call_the_agents_callback_answers_is_not_asked_about(
    text: str, tool: str, args: dict[str, Any]
) -> None:
    answered = [
        {"type": "tool-input-start", "toolCallId": "call_1", "toolName": tool},
        {"type": "tool-input-available", "toolCallId": "call_1", "toolName": tool, "input": args},
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": {"blocked": "not today"},
        },
    ]
    over_sse = Blocking(tool)
    async with ChatClient(AdkApp(over_sse.agent), chat_id="chat-1") as chat:
        sent = await chat.send(text)
    assert tool_chunks(sent.chunks) == answered
    live_blocking = Blocking(tool)
    app = AdkApp(live_blocking.agent)
    async with live_chat(app) as chat:
        chunks = streamed(await chat.send(text))
        history = await reloaded(app, chat)
    assert tool_chunks(chunks) == answered
    assert history == chat.messages
    assert live_blocking.calls == over_sse.calls == [tool]


async def test_an_approved_call_meets_the_agents_callback_as_often_as_over_sse() -> None:
    """Before the user is asked, and again as ADK runs the approved call, in both modes."""
    over_sse = Blocking()
    async with ChatClient(AdkApp(over_sse.agent), chat_id="chat-1") as chat:
        await chat.send("pay 5 to alice")
        paid = await chat.approve("process_payment")
    assert paid is not None
    live_blocking = Blocking()
    app = AdkApp(live_blocking.agent, limits=Limits(approval_timeout=30))
    async with live_chat(app) as chat:
        chunks = await pay_approved(chat)
    assert (
        outputs(chunks)
        == outputs(paid.chunks)
        == [{"status": "sent", "amount": 5, "recipient": "alice", "currency": "USD"}]
    )
    assert live_blocking.calls == over_sse.calls == ["process_payment", "process_payment"]


class RedactingPlugin(BasePlugin):
    """An app's plugin that redacts the weather."""

    def __init__(self) -> None:
        super().__init__(name="redacting")
        self.redacted = 0

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        if tool.name != "get_weather":
            return None
        self.redacted += 1
        return REDACTED


async def test_a_result_an_apps_plugin_replaced_next_to_an_approval_lets_the_approval_show() -> (
    None
):
    plugin = RedactingPlugin()
    agent = build_agent(demo_model(id_factory=counter("call_")))
    app = AdkApp(agent, plugins=[plugin], limits=Limits(approval_timeout=30))
    async with live_chat(app) as chat:
        first = streamed(await chat.send("weather in Paris and pay 5 to alice"))
        _, said = squash(streamed(await chat.approve("process_payment")))
        history = await reloaded(app, chat)
    assert [c["type"] for c in tool_chunks(first)] == [
        "tool-input-start",
        "tool-input-available",
        "tool-input-start",
        "tool-input-available",
        "tool-output-available",
        "tool-approval-request",
    ]
    assert outputs(first) == [REDACTED]
    assert said == (
        'Here you go: get_weather: {"city": "Paris", "forecast": "[redacted]"}; process_payment:'
        ' {"amount": 5, "currency": "USD", "recipient": "alice", "status": "sent"}.'
    )
    assert history == chat.messages
    assert plugin.redacted == 1
    assert app.runner.plugin_manager.get_plugin("redacting").redacted == 1  # (still the app's)


async def test_a_tool_that_returns_nothing_meets_the_agents_callback_once() -> None:
    """ADK runs the agent's callbacks after the plugins' unless a plugin answered: the gate,
    which ran them, answers even for a result of ``None`` (as ADK stores it)."""
    redacting = Redacting()

    def get_weather(city: str) -> None:
        """The weather station takes the city and answers nothing."""

    redacting.agent.tools[0] = FunctionTool(get_weather)
    redacting.agent.after_tool_callback = lambda **_: redacting.calls.append("get_weather")
    app = AdkApp(redacting.agent)
    async with live_chat(app) as chat:
        chunks = streamed(await chat.send("weather in Paris"))
    assert outputs(chunks) == [None]
    assert redacting.calls == ["get_weather"]
