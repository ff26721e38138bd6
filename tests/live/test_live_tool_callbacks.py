"""An agent's own ``after_tool_callback`` over live: what it makes of a tool's result is what
the page is shown, what history keeps and what the model reads, as over SSE.

The live bridge shows a server tool's result from the tool pipeline, as it comes, and stores it
early next to a call that waits (``live/tools.py``). ADK runs the agent's ``after_tool_callback``
after the plugins' (the bridge's included): the page was shown the tool's raw result where the
model and history got the callback's, so a callback that redacts a value did not redact it for
the page. Against a real uvicorn in the test's own loop.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi import AdkApp
from adk_asgi.testing import demo_model
from demo_app import build_agent
from tests.live.test_live_connection import (
    cookie_of,
    http_history,
    open_live,
    serve,
    squash,
    wait_until_closed,
)
from tests.support import answer, counter

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


def outputs(chunks: list[dict[str, Any]]) -> list[Any]:
    return [c["output"] for c in chunks if c["type"] == "tool-output-available"]


def shown(message: dict[str, Any]) -> list[Any]:
    return [p.get("output") for p in message["parts"] if "toolCallId" in p]


async def test_a_server_tools_result_is_shown_as_the_agents_callback_made_it() -> None:
    redacting = Redacting()
    app = AdkApp(redacting.agent)
    async with serve(app) as url:
        live, socket = await open_live(url)
        async with socket:
            chunks = await live.turn("weather in Paris")
        await wait_until_closed(app)
        history = await http_history(url, cookie_of(socket), live.chat_id)
    _, said = squash(chunks)
    assert outputs(chunks) == [REDACTED]
    assert said == 'Here you go: get_weather: {"city": "Paris", "forecast": "[redacted]"}.'
    assert history == [live.user, live.assistant]
    assert redacting.calls == ["get_weather"]


async def test_an_approved_tools_result_is_shown_as_the_agents_callback_made_it() -> None:
    redacting = Redacting()
    app = AdkApp(redacting.agent, approval_timeout=30)
    async with serve(app) as url:
        live, socket = await open_live(url)
        async with socket:
            await live.turn("pay 5 to alice")
            answer(live.assistant, "process_payment", approved=True)
            chunks = await live.turn()
        await wait_until_closed(app)
        history = await http_history(url, cookie_of(socket), live.chat_id)
    assert outputs(chunks) == [RECEIPT]
    assert history == [live.user, live.assistant]
    assert redacting.calls == ["process_payment"]


async def test_a_result_stored_next_to_a_wait_is_the_agents_callbacks() -> None:
    """Stored as it came, next to a payment that waits, then the connection dropped: the
    reload and the model on the next connection get the callback's result, once."""
    redacting = Redacting()
    app = AdkApp(redacting.agent, approval_timeout=30)
    async with serve(app) as url:
        live, socket = await open_live(url)
        async with socket:
            first = await live.turn("weather in Paris and pay 5 to alice")
        await wait_until_closed(app)
        cookie = cookie_of(socket)
        reloaded = await http_history(url, cookie, live.chat_id)
        again, socket = await open_live(url, chat_id=live.chat_id, cookie=cookie)
        again.user, again.assistant = live.user, copy.deepcopy(live.assistant)
        answer(again.assistant, "process_payment", approved=True)
        async with socket:
            _, said = squash(await again.turn())
        await wait_until_closed(app)
        history = await http_history(url, cookie, live.chat_id)
    assert outputs(first) == [REDACTED]
    assert reloaded == [live.user, live.assistant]
    assert shown(history[1]) == [REDACTED, RECEIPT]
    assert history == [again.user, again.assistant]
    assert said == (
        'Here you go: get_weather: {"city": "Paris", "forecast": "[redacted]"}; process_payment:'
        ' {"amount": 5, "currency": "USD", "receipt": "r1", "recipient": "alice", "status":'
        ' "sent"}.'
    )
    assert redacting.calls == ["get_weather", "process_payment"]
