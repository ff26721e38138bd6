"""Live waits that outlive their connection: a browser call answered from a new connection, and
an approval past its wait closed when the chat is opened again (a late answer is refused for
what it is). Against a real uvicorn in the test's own loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from google.adk.agents import LlmAgent
from google.adk.tools.function_tool import FunctionTool

from adk_asgi import AdkApp, Limits
from adk_asgi.hitl.pending import chat_state
from adk_asgi.testing import ChatClient, demo_model
from demo_app import build_agent
from tests.live.live_chunks import closing, squash
from tests.live.live_server import chat_users, stored_history, wait_until_closed
from tests.live.live_socket import live_chat, serve
from tests.support import counter, normalize_ids

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[tuple[AdkApp, str]]:
    app = AdkApp(build_agent(), limits=Limits(approval_timeout=0.3))
    async with serve(app) as url:
        yield app, url


def browser(url: str) -> ChatClient:
    """A new browser's chat with the server at ``url``, over its live socket."""
    base = url.replace("ws://", "http://", 1).removesuffix("/live")
    return ChatClient(base_url=base, transport="live")


async def test_a_browser_call_left_open_is_answered_from_a_new_connection(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    async with browser(url) as chat:
        first = (await chat.send("play track 2")).chunks
        await chat.disconnect()
        await wait_until_closed(app)
        # a new connection (the next request opens it) answers the call
        went_on = await chat.tool_result("change_bgm", {"playing": 2})
    assert went_on is not None
    played, text = squash(went_on.chunks)
    assert normalize_ids(first)[-3:] == [
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "change_bgm",
            "input": {"track": 2},
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    assert played == [
        {"type": "start", "messageId": "<msg1>"},
        *closing(text),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert text == 'Here you go: change_bgm: {"playing": 2}.'
    history = await stored_history(app, chat.id)
    assert [p["state"] for p in history[1]["parts"] if p["type"] == "tool-change_bgm"] == [
        "output-available"
    ]


async def test_an_approval_past_its_wait_is_closed_when_the_chat_opens_again(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    async with browser(url) as chat:
        asked = await chat.send("pay 5 to alice")
        await chat.disconnect()
        await wait_until_closed(app)
        await past_the_recorded_wait(app, chat.id)  # with nobody connected
        late = await chat.approve("process_payment")  # from a new connection
    assert asked.message is not None and late is not None
    call_id = asked.message["parts"][1]["toolCallId"]
    assert (late.status, late.chunks, late.closed) == (0, [], None)  # an error frame
    assert late.error == (
        f"approval 'approval-{call_id}' was closed unanswered (Not run: the approval was"
        " not answered in time.)"
    )
    history = await stored_history(app, chat.id)
    assert [
        (p["state"], p["errorText"])
        for p in history[1]["parts"]
        if p["type"] == "tool-process_payment"
    ] == [("output-error", "Not run: the approval was not answered in time.")]


async def past_the_recorded_wait(app: AdkApp, chat_id: str) -> None:
    """Return once the one approval the chat waits for is past the wait its session records
    (``approval_timeout`` after it was asked). The server reads the wall clock against that
    expiry only when the chat is opened again: no event happens at the expiry itself, so this
    waits for the wall clock to pass it, the instant read from the session (no margin)."""
    [user_id] = chat_users(app, chat_id)
    session = await app.session_service.get_session(
        app_name=app.app_name, user_id=user_id, session_id=chat_id
    )
    assert session is not None
    [expires] = chat_state(session.events, app.services.tools).expires.values()
    assert expires - time.time() <= 0.3  # approval_timeout after it was asked, or less
    await asyncio.sleep(max(expires - time.time(), 0) + 0.001)
    assert time.time() > expires


async def test_an_approval_another_request_took_is_not_acted_on_by_the_connection() -> None:
    """The connection's own wait claims the user's answer like any request
    (:mod:`adk_asgi.stores.claims`): when another request, on any worker, took it first, the payment
    does not run here."""
    payments: list[str] = []

    def process_payment(amount: float, recipient: str, currency: str = "USD") -> dict[str, Any]:
        """Send money."""
        payments.append(recipient)
        return {"status": "sent"}

    agent = LlmAgent(
        name="demo_agent",
        model=demo_model(id_factory=counter("call_"), chunk_size=200),
        tools=[FunctionTool(process_payment, require_confirmation=True)],
    )
    app = AdkApp(agent, identify=lambda conn: "alice")
    async with live_chat(app) as chat:
        paused = (await chat.send("pay 5 to alice")).chunks
        call_id = paused[2]["toolCallId"]
        key = app.services.chat_key("alice", chat.id)
        assert await app.claims.claim(key, [f"approval-{call_id}"])  # another request
        went_on = await chat.approve("process_payment")
        assert went_on is not None
        denied, text = squash(went_on.chunks)
    assert denied[:2] == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-denied", "toolCallId": "<call1>"},
    ]
    assert text == "Here you go: process_payment was denied."
    assert payments == []


STORED_RESPONSES = {
    "process_payment": ["call_1", "call_2", "approval-call_2", "call_2"],
    "change_bgm": ["call_1", "call_2"],
}
"""The function responses in the session, by the call that waited: a payment has ADK's
placeholder ("requires confirmation"), the user's approval, then its result, stored once
(approved on a new connection, it was stored twice: the weather, run on the first, counted as
not returned yet)."""

WEATHER = 'get_weather: {"city": "Paris", "forecast": "windy", "temperature_c": 19}'
PAID = 'process_payment: {"amount": 5, "currency": "USD", "recipient": "alice", "status": "sent"}'


@pytest.mark.parametrize(
    ("text", "tool", "decision", "reply"),
    [
        (
            "weather in Paris and pay 5 to alice",
            "process_payment",
            {"approved": True},
            f"Here you go: {WEATHER}; {PAID}.",
        ),
        (
            "weather in Paris and play track 1",
            "change_bgm",
            {"output": {"playing": 1}},
            f'Here you go: {WEATHER}; change_bgm: {{"playing": 1}}.',
        ),
    ],
    ids=["approval", "browser tool"],
)
async def test_a_server_result_next_to_a_wait_outlives_the_connection(
    text: str, tool: str, decision: dict[str, Any], reply: str
) -> None:
    """ADK's live flow stores a step's results together once all its calls returned: the
    weather, shown at once next to a call that waits, was stored only when that wait ended, so
    a reload showed it unrun, and a dropped connection lost it. It is stored as it comes: a
    reload shows the message the stream built, and the model gets the result when the wait is
    answered from a new connection."""
    app = AdkApp(
        build_agent(demo_model(id_factory=counter("call_"))), limits=Limits(approval_timeout=30)
    )
    async with live_chat(app) as chat:
        await chat.send(text)
        await chat.disconnect()
        await wait_until_closed(app)
        assert await chat.history() == chat.messages
        # from a new connection
        if "approved" in decision:
            went_on = await chat.approve(tool, decision["approved"])
        else:
            went_on = await chat.tool_result(tool, decision["output"])
        assert went_on is not None
        _, said = squash(went_on.chunks)
        history = await chat.history()
        session = await app.session_service.get_session(
            app_name=app.app_name, user_id=chat_users(app, chat.id)[0], session_id=chat.id
        )
    assert history == chat.messages
    assert session is not None
    stored = [r.id for e in session.events for r in e.get_function_responses()]
    assert stored == STORED_RESPONSES[tool]  # each result once, the weather's included
    assert [p["state"] for p in history[1]["parts"] if "toolCallId" in p] == [
        "output-available",
        "output-available",
    ]
    assert said == reply
