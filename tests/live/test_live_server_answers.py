"""Long-running tools the server answers (a back office), in live mode: the response that
shows the call ends (the model has nothing to answer yet), a ``send`` that answers it from
the browser gets an ``error`` frame with nothing stored or run, and ``AdkApp.answer_call``
waits for the connection's hold on the chat, then answers it once and runs the agent on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types

from adk_asgi import AdkApp, CallAlreadyAnswered, ChatBusy, Limits
from adk_asgi.testing import Call, ChatClient, Text
from tests.asgi.test_server_answers import (
    ANSWERED_PARTS,
    APPROVED,
    ASKED_STREAM,
    ASKING,
    REFUND,
    asked_parts,
    history,
    request_refund,
)
from tests.live.live_server import stored_history, wait_until_closed
from tests.live.live_socket import live_chat, open_live
from tests.live.test_live_requests import next_frame
from tests.servers import in_loop_uvicorn
from tests.support import counter, normalize_ids, scripted_agent

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]


class BackOffice:
    def __init__(self, refund: Callable[..., Any] = request_refund) -> None:
        self.seen: list[dict[str, Any]] = []
        self.model_calls = 0
        agent = scripted_agent(
            responder=self.respond,
            tools=[LongRunningFunctionTool(refund)],
            chunk_size=200,
        )
        self.app = AdkApp(agent, identify=lambda c: "alice", limits=Limits(busy_timeout=0.2))

    def respond(self, contents: list[types.Content]) -> list[Any]:
        self.model_calls += 1
        for part in contents[-1].parts or []:
            if part.function_response is not None:
                result = part.function_response.response or {}
                self.seen.append(result)
                return [Text(f"The back office said: approved={result.get('approved')}.")]
        return [Text(ASKING), Call("request_refund", REFUND)]

    async def events(self, chat_id: str) -> int:
        session = await self.app.services.session("alice", chat_id)
        assert session is not None
        return len(session.events)


async def test_a_back_office_approval_in_live_mode_is_answered_by_the_server() -> None:
    office = BackOffice()
    app = office.app
    async with in_loop_uvicorn(app) as base:
        browser = ChatClient(
            base_url=base, transport="live", chat_id="chat-1", id_factory=counter("u")
        )
        chat_id = browser.id
        async with browser:
            asked = await browser.send("refund order A7")
            # as over SSE: it ends there, waiting for the app
            assert normalize_ids(asked.chunks) == ASKED_STREAM
            assert asked.message is not None
            message_id = asked.message["id"]
            before = await stored_history(app, chat_id)
            stored = await office.events(chat_id)

            # (a server-executed call: the stock client does not send by itself; the page submits)
            assert await browser.tool_result("request_refund", {"approved": True}) is None
            forged = await browser.submit()
            assert (forged.status, forged.chunks, forged.error, forged.closed) == (
                0,
                [],
                "tool call 'call_1' is answered by the server, not the browser",
                None,
            )
            await asyncio.sleep(0.05)  # (anything the forged answer set off would show now)
            assert await stored_history(app, chat_id) == before
            assert await office.events(chat_id) == stored
            assert office.model_calls == 1

            # The connection holds the chat: the app's answer waits busy_timeout, takes nothing.
            with pytest.raises(ChatBusy):
                await app.answer_call("alice", chat_id, "call_1", APPROVED)
        await wait_until_closed(app)

        assert await app.answer_call("alice", chat_id, "call_1", APPROVED) == message_id
        assert (office.model_calls, office.seen) == (2, [APPROVED])
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "refund order A7"}]}
        assert await stored_history(app, chat_id) == [
            user,
            {"id": message_id, "role": "assistant", "parts": ANSWERED_PARTS},
        ]
        with pytest.raises(CallAlreadyAnswered):
            await app.answer_call("alice", chat_id, "call_1", {"approved": False})

        # A page that opens the chat live again reads the outcome; the model says nothing more.
        # (the resume frame itself, raw)
        live, socket = await open_live(base.replace("http://", "ws://", 1) + "/live", chat_id)
        async with socket:
            resumed = {"type": "resume", "requestId": "again", "id": chat_id}
            await socket.send(json.dumps({**resumed, "headers": {}, "body": {}}))
            assert await next_frame(live) == {"type": "no-active", "requestId": "again"}
        await wait_until_closed(app)
        assert office.model_calls == 2


async def test_a_new_connection_does_not_wait_for_the_servers_answer() -> None:
    """A stored back-office call is nobody's on the page: a connection that opens on it goes
    straight to the model (no answering phase), and an answer to it is refused."""
    office = BackOffice()
    app = office.app
    async with live_chat(app, chat_id="chat-1", id_factory=counter("u")) as browser:
        await browser.send("refund order A7")
        await browser.disconnect()
        await wait_until_closed(app)
        page = browser.messages[-1]
        # a new connection (the next request opens it), answering the call on the page
        assert await browser.tool_result("request_refund", {"approved": True}) is None
        forged = await browser.submit()
        assert (forged.status, forged.chunks, forged.error, forged.closed) == (
            0,
            [],
            "tool call 'call_1' is answered by the server, not the browser",
            None,
        )
        await browser.disconnect()
        await wait_until_closed(app)
        assert office.model_calls == 1
        assert await app.answer_call("alice", browser.id, "call_1", APPROVED) == page["id"]
        assert office.seen == [APPROVED]


@pytest.mark.parametrize("returned", [{}, "", 0, []], ids=["{}", "empty-text", "0", "[]"])
@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_long_running_tool_that_returns_a_falsy_value_leaves_its_call_to_the_server(
    transport: str, returned: Any
) -> None:
    """ADK sends no response for a long-running tool's falsy result (it tests truth, not
    ``None``). Live mode showed such a call finished and waited for the model's next words,
    which never came: the page hung. Now the call is left open, as over SSE, for the app."""

    def answered_later(order: str, amount: float) -> Any:
        """Ask the back office to approve a refund; a clerk answers later, from the server."""
        return returned

    answered_later.__name__ = "request_refund"  # (the tool's name is the function's)
    office = BackOffice(answered_later)
    app = office.app
    async with in_loop_uvicorn(app) as base:
        page = ChatClient(
            base_url=base, transport=transport, chat_id="chat-1", id_factory=counter("u")
        )
        async with page:
            asked = await page.send("refund order A7")
        assert normalize_ids(asked.chunks) == ASKED_STREAM
        assert asked.message is not None
        message_id = asked.message["id"]
        await wait_until_closed(app)
        assert await stored_history(app, page.id) == history(message_id, *asked_parts())
        assert await app.answer_call("alice", page.id, "call_1", APPROVED) == message_id
    assert (office.model_calls, office.seen) == (2, [APPROVED])
    assert await stored_history(app, page.id) == history(message_id, *ANSWERED_PARTS)
