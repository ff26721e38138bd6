"""``adk_asgi.testing.ChatClient`` against a real AdkApp on the scripted models: the chunks as
streamed, the messages as the stock client builds them, the exact continuation bodies, refusals,
identity, the automatic requests, and the examples of docs/testing.md#testing-your-app."""

from __future__ import annotations

import re
import textwrap
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import HTTPConnection
from starlette.routing import Mount, Route, WebSocketRoute

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import ChatClient, ChatResponse, Text, Thought, demo_model
from adk_asgi.wire.values import CHAT_ID_RULE
from demo_app import build_agent
from tests.streams import (
    PAID_ALICE_SAID,
    PARIS_WEATHER,
    PAY_ALICE,
    SENT_ALICE,
    approval_asked,
    text_step,
    weather_answer,
)
from tests.support import counter, scripted_agent


def demo_app(**options: Any) -> AdkApp:
    """The demo agent (scripted), with counted ids so every id but ADK's approvals is known."""
    agent = build_agent(demo_model(id_factory=counter("call_"), chunk_size=200))
    return AdkApp(agent, messages=Messages(message_id_factory=counter("msg")), **options)


@pytest.fixture
async def chat() -> AsyncIterator[ChatClient]:
    async with ChatClient(demo_app(), chat_id="chat-1", id_factory=counter("u")) as client:
        yield client


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def closing(text: str, message_id: str = "msg1") -> list[dict[str, Any]]:
    """The demo's closing step: one sentence in one delta."""
    return text_step(f"{message_id}-txt1", [text])


def continuation(messages: Sequence[dict[str, Any]], message_id: str = "msg1") -> dict[str, Any]:
    """The body the stock client posts after an answer: the whole chat, naming the message."""
    return {
        "id": "chat-1",
        "messages": list(messages),
        "trigger": "submit-message",
        "messageId": message_id,
    }


async def test_plain_text_with_reasoning() -> None:
    agent = scripted_agent([[Thought("Greet."), Text("Hello there!")]], chunk_size=6)
    app = AdkApp(agent, messages=Messages(message_id_factory=counter("msg")))
    async with ChatClient(app, chat_id="c", id_factory=counter("u")) as chat:
        reply = await chat.send("hi")
        assert reply.body == {"id": "c", "messages": [user("hi")], "trigger": "submit-message"}
        assert reply.chunks == [
            {"type": "start", "messageId": "msg1"},
            {"type": "start-step"},
            {"type": "reasoning-start", "id": "msg1-rsn1"},
            {"type": "reasoning-delta", "id": "msg1-rsn1", "delta": "Greet."},
            {"type": "reasoning-end", "id": "msg1-rsn1"},
            {"type": "text-start", "id": "msg1-txt2"},
            {"type": "text-delta", "id": "msg1-txt2", "delta": "Hello "},
            {"type": "text-delta", "id": "msg1-txt2", "delta": "there!"},
            {"type": "text-end", "id": "msg1-txt2"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert reply.message == {
            "id": "msg1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "id": "msg1-rsn1", "text": "Greet.", "state": "done"},
                {"type": "text", "text": "Hello there!", "state": "done"},
            ],
        }
        assert (reply.status, reply.error, reply.finish_reason, reply.followup) == (
            200,
            None,
            "stop",
            None,
        )
        assert reply.text == "Hello there!"
        assert chat.messages == [user("hi"), reply.message]
        # A reload shows the same, the reasoning part's id included.
        assert await chat.history() == chat.messages


async def test_a_server_tool(chat: ChatClient) -> None:
    reply = await chat.send("weather in Paris")
    assert reply.chunks == weather_answer("msg1", "call_1", "msg1-txt1")
    assert chat.messages == [
        user("weather in Paris"),
        {
            "id": "msg1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {
                    "type": "tool-get_weather",
                    "toolCallId": "call_1",
                    "state": "output-available",
                    "providerExecuted": True,
                    "input": {"city": "Paris"},
                    "output": PARIS_WEATHER,
                },
                {"type": "step-start"},
                {"type": "text", "text": reply.text, "state": "done"},
            ],
        },
    ]
    assert reply.followup is None  # the stream ended on text: nothing is sent by itself
    assert await chat.history() == chat.messages


async def test_an_approval_approved(chat: ChatClient) -> None:
    asked = await chat.send("pay 5 to alice")
    approval_id = asked.chunks[4]["approvalId"]
    assert asked.chunks == approval_asked(
        "process_payment", PAY_ALICE, "msg1", "call_1", approval_id
    )
    waiting = {
        "type": "tool-process_payment",
        "toolCallId": "call_1",
        "state": "approval-requested",
        "input": PAY_ALICE,
        "approval": {"id": approval_id},
    }
    assert asked.message == {
        "id": "msg1",
        "role": "assistant",
        "parts": [{"type": "step-start"}, waiting],
    }
    assert await chat.history() == chat.messages  # a reload shows the same card

    paid = await chat.approve("process_payment")
    assert paid is not None
    answered = {**waiting, "state": "approval-responded"}
    answered["approval"] = {"id": approval_id, "approved": True}
    sent = {"id": "msg1", "role": "assistant", "parts": [{"type": "step-start"}, answered]}
    assert paid.body == continuation([user("pay 5 to alice"), sent])
    assert paid.chunks == [
        {"type": "start", "messageId": "msg1"},
        {"type": "tool-output-available", "toolCallId": "call_1", "output": SENT_ALICE},
        *closing(PAID_ALICE_SAID),
        {"type": "finish", "finishReason": "stop"},
    ]
    done = {**answered, "state": "output-available", "output": SENT_ALICE}
    assert chat.messages == [
        user("pay 5 to alice"),
        {
            "id": "msg1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                done,
                {"type": "step-start"},
                {"type": "text", "text": PAID_ALICE_SAID, "state": "done"},
            ],
        },
    ]
    assert paid.message == chat.messages[1]
    assert await chat.history() == chat.messages


async def test_an_approval_denied_with_a_reason(chat: ChatClient) -> None:
    asked = await chat.send("pay 5 to alice")
    approval_id = asked.chunks[4]["approvalId"]
    denied = await chat.deny(approval_id, reason="not today")
    assert denied is not None
    assert denied.body["messages"][1]["parts"][1] == {
        "type": "tool-process_payment",
        "toolCallId": "call_1",
        "state": "approval-responded",
        "input": PAY_ALICE,
        "approval": {"id": approval_id, "approved": False, "reason": "not today"},
    }
    assert denied.chunks == [
        {"type": "start", "messageId": "msg1"},
        {"type": "tool-output-denied", "toolCallId": "call_1"},
        *closing("Here you go: process_payment was denied."),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert chat.messages[1]["parts"][1] == {
        "type": "tool-process_payment",
        "toolCallId": "call_1",
        "state": "output-denied",
        "input": PAY_ALICE,
        "approval": {"id": approval_id, "approved": False, "reason": "not today"},
    }
    # a reload shows the reason too (it went to the tool as the confirmation's payload)
    assert await chat.history() == chat.messages


async def test_a_browser_tool_result(chat: ChatClient) -> None:
    asked = await chat.send("play track 3")
    assert asked.chunks == [
        {"type": "start", "messageId": "msg1"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "call_1", "toolName": "change_bgm"},
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "change_bgm",
            "input": {"track": 3},
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    played = await chat.tool_result("change_bgm", {"playing": 3})
    assert played is not None
    result = {
        "type": "tool-change_bgm",
        "toolCallId": "call_1",
        "state": "output-available",
        "input": {"track": 3},
        "output": {"playing": 3},
    }
    sent = {"id": "msg1", "role": "assistant", "parts": [{"type": "step-start"}, result]}
    assert played.body == continuation([user("play track 3"), sent])
    assert played.chunks == [
        {"type": "start", "messageId": "msg1"},
        *closing('Here you go: change_bgm: {"playing": 3}.'),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert chat.messages[1]["parts"] == [
        {"type": "step-start"},
        result,
        {"type": "step-start"},
        {"type": "text", "text": 'Here you go: change_bgm: {"playing": 3}.', "state": "done"},
    ]
    assert await chat.history() == chat.messages


async def test_a_browser_tool_error(chat: ChatClient) -> None:
    await chat.send("play track 3")
    failed = await chat.tool_error("call_1", "no audio device")
    assert failed is not None
    error_part = {
        "type": "tool-change_bgm",
        "toolCallId": "call_1",
        "state": "output-error",
        "input": {"track": 3},
        "errorText": "no audio device",
    }
    assert failed.body["messages"][1]["parts"] == [{"type": "step-start"}, error_part]
    assert failed.chunks == [
        {"type": "start", "messageId": "msg1"},
        *closing('Here you go: change_bgm: {"error": "no audio device"}.'),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert await chat.history() == chat.messages


async def test_a_browser_tool_that_needs_approval_takes_three_requests(chat: ChatClient) -> None:
    asked = await chat.send("where am i")
    assert asked.message is not None
    approval_id = asked.chunks[4]["approvalId"]
    assert asked.message["parts"][1] == {  # the input delta, as the client keeps it
        "type": "tool-get_location",
        "toolCallId": "call_1",
        "state": "approval-requested",
        "input": {},
        "rawInput": "{}",
        "approval": {"id": approval_id},
    }
    approved = await chat.approve("get_location")
    assert approved is not None
    assert approved.chunks == [
        {"type": "start", "messageId": "msg1"},
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "get_location",
            "input": {},
        },
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    assert approved.message is not None
    assert approved.message["parts"][1] == {  # onToolCall would run now, once
        "type": "tool-get_location",
        "toolCallId": "call_1",
        "state": "input-available",
        "input": {},
        "approval": {"id": approval_id, "approved": True},
    }
    located = await chat.tool_result("get_location", {"city": "Paris"})
    assert located is not None
    assert located.text == 'Here you go: get_location: {"city": "Paris"}.'
    assert await chat.history() == chat.messages


async def test_two_approvals_in_one_step_send_once_both_are_answered(chat: ChatClient) -> None:
    await chat.send("pay 5 to alice and pay 7 to bob")
    assert await chat.approve("process_payment") is None  # bob's card still waits
    both = await chat.deny("process_payment")
    assert both is not None
    states = [(p["toolCallId"], p["state"]) for p in both.body["messages"][1]["parts"][1:]]
    assert states == [("call_1", "approval-responded"), ("call_2", "approval-responded")]
    assert [c["type"] for c in both.chunks[:3]] == [
        "start",
        "tool-output-denied",
        "tool-output-available",
    ]
    assert [(p["toolCallId"], p["state"]) for p in chat.messages[1]["parts"][1:3]] == [
        ("call_1", "output-available"),
        ("call_2", "output-denied"),
    ]
    assert await chat.history() == chat.messages


async def test_a_refused_request_keeps_its_message_like_use_chat() -> None:
    async with ChatClient(demo_app(), chat_id="not a chat id", id_factory=counter("u")) as chat:
        refused = await chat.send("hi")
        assert refused == ChatResponse(
            status=400,
            body={"id": "not a chat id", "messages": [user("hi")], "trigger": "submit-message"},
            chunks=[],
            message=None,
            error=f"id: {CHAT_ID_RULE}",
            finish_reason=None,
        )
        assert chat.messages == [user("hi")]


async def test_a_replayed_continuation_is_refused(chat: ChatClient) -> None:
    await chat.send("pay 5 to alice")
    paid = await chat.approve("process_payment")
    assert paid is not None
    replay = await chat.http.post("/chat", json=paid.body)
    approval_id = paid.body["messages"][1]["parts"][1]["approval"]["id"]
    assert (replay.status_code, replay.json()) == (
        409,
        {"error": f"approval {approval_id!r} is not open in this chat"},
    )
    again = await chat.submit()  # the chat as it is now answers nothing
    assert (again.status, again.error, again.message) == (
        409,
        "this request answers no open tool call of the chat",
        None,
    )
    assert again.body == continuation(chat.messages)


async def test_an_answer_to_nothing_waiting_is_a_lookup_error(chat: ChatClient) -> None:
    await chat.send("play track 3")
    with pytest.raises(LookupError, match="no tool call waiting for approval matches 'change_bgm'"):
        await chat.approve("change_bgm")
    with pytest.raises(LookupError, match="no tool call waiting for a result matches 'get_x'"):
        await chat.tool_result("get_x", {})


async def test_regenerate_and_an_edit_send_what_the_stock_client_sends(chat: ChatClient) -> None:
    """``regenerate()`` drops the last answer and posts the rest, naming no message;
    ``regenerate(id)`` of a user message keeps it and names it; ``send(text, message_id=…)``
    edits an earlier user message: the chat up to it, the message replaced, its id named."""
    first = await chat.send("hello")
    again = await chat.regenerate()
    assert again.body == {
        "id": "chat-1",
        "messages": [user("hello")],
        "trigger": "regenerate-message",
    }
    assert again.message is not None and again.message["id"] == "msg2"
    assert first.message is not None and again.text == first.text
    assert chat.messages == [user("hello"), again.message]
    later = await chat.send("hello again")
    asked = user("hello again", "u4")  # (u2, u3: the client's ids of the messages it streamed)
    assert chat.messages == [user("hello"), again.message, asked, later.message]
    redone = await chat.regenerate("u4")
    assert redone.body == {
        "id": "chat-1",
        "messages": [user("hello"), again.message, asked],
        "trigger": "regenerate-message",
        "messageId": "u4",
    }
    assert redone.message is not None and redone.message["id"] == "msg4"
    assert chat.messages == [user("hello"), again.message, asked, redone.message]
    edited = await chat.send("hi", message_id="u1")
    assert edited.body == {
        "id": "chat-1",
        "messages": [user("hi")],
        "trigger": "submit-message",
        "messageId": "u1",
    }
    assert chat.messages == [user("hi"), edited.message]
    assert await chat.history() == chat.messages


async def test_regenerating_or_editing_a_message_the_chat_lacks_is_a_lookup_error(
    chat: ChatClient,
) -> None:
    with pytest.raises(LookupError, match="the chat has no message to regenerate"):
        await chat.regenerate()
    reply = await chat.send("hello")
    assert reply.message is not None
    with pytest.raises(LookupError, match="the chat has no message 'u9'"):
        await chat.regenerate("u9")
    with pytest.raises(LookupError, match="the chat has no message 'u9'"):
        await chat.send("hi", message_id="u9")
    with pytest.raises(LookupError, match="message 'msg1' is not a user message"):
        await chat.send("hi", message_id="msg1")
    assert chat.messages == [user("hello"), reply.message]  # nothing was changed or sent


async def test_without_automatic_sending_submit_sends_the_same_continuation() -> None:
    async with (
        ChatClient(demo_app(), chat_id="chat-1", id_factory=counter("u")) as stock,
        ChatClient(
            demo_app(), chat_id="chat-1", id_factory=counter("u"), send_automatically_when=None
        ) as manual,
    ):
        await stock.send("play track 1")
        await manual.send("play track 1")
        sent = await stock.tool_result("change_bgm", {"playing": 1})
        assert await manual.tool_result("change_bgm", {"playing": 1}) is None
        assert sent is not None
        unsent = manual.submit_body(body={"extra": 1})  # what submit would post, not posted
        assert unsent == {**sent.body, "extra": 1}
        unsent["messages"].clear()  # a copy: the page's messages stay the client's own
        submitted = await manual.submit()
        assert (submitted.body, submitted.chunks) == (sent.body, sent.chunks)


async def test_the_stock_client_sends_again_when_its_helper_holds_after_a_stream() -> None:
    """Every answer ends with the helpers' check; a predicate that always holds makes the
    stock client post the finished chat again at once, which the server refuses."""
    app = demo_app()
    async with ChatClient(
        app, chat_id="chat-1", id_factory=counter("u"), send_automatically_when=lambda m: True
    ) as chat:
        reply = await chat.send("hello")
        assert reply.followup is not None
        assert reply.followup.body == continuation(chat.messages)
        assert (reply.followup.status, reply.followup.error) == (
            409,
            "this request answers no open tool call of the chat",
        )


async def test_one_browser_keeps_its_cookie_another_browser_does_not_see_its_chats() -> None:
    app = demo_app()
    async with ChatClient(app, chat_id="chat-1") as first, ChatClient(app) as other_browser:
        await first.send("hello")
        same_browser = ChatClient(http=first.http, chat_id="chat-1")
        assert await same_browser.history() == first.messages
        other_browser.id = "chat-1"
        with pytest.raises(httpx.HTTPStatusError) as refused:  # not this browser's chat
            await other_browser.history()
        assert refused.value.response.status_code == 404
        assert first.http.cookies["adk_asgi_uid"] != other_browser.http.cookies["adk_asgi_uid"]


async def test_headers_identify_the_user_and_api_follows_the_mount() -> None:
    def identify(connection: HTTPConnection) -> str | None:
        return connection.headers.get("x-user")

    host = Starlette(routes=[Mount("/agent", app=demo_app(identify=identify))])
    async with (
        ChatClient(host, api="/agent/chat", chat_id="c", headers={"x-user": "ann"}) as ann,
        ChatClient(host, api="/agent/chat", chat_id="c") as nobody,
    ):
        assert (await ann.send("hello")).status == 200
        refused = await nobody.send("hello")
        assert (refused.status, refused.error) == (401, "authentication required")
        with pytest.raises(httpx.HTTPStatusError):
            await nobody.history()
        assert len(await ann.history()) == 2


# --- the docs: docs/testing.md's examples run, docs/sse.md's route table is complete --------

DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC = DOCS / "testing.md"


def doc_section_code(title: str) -> list[str]:
    """The ```python blocks of one ``## title`` section of docs/testing.md."""
    text = DOC.read_text()
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", section, re.S)]


async def test_the_testing_your_app_examples_run() -> None:
    """Every ``async def test_…`` of the section's code blocks runs and passes, so the docs
    cannot drift from the API."""
    blocks = doc_section_code("Testing your app")
    namespace: dict[str, Any] = {"__name__": "docs_testing_example"}
    exec(compile("\n".join(blocks), str(DOC), "exec"), namespace)
    tests = sorted(name for name in namespace if name.startswith("test_"))
    assert tests == [
        "test_a_failure_closes_the_connection",
        "test_a_payment_is_approved",
        "test_the_answer_depends_on_the_tool_result",
        "test_the_greeting",
        "test_the_greeting_either_way",
    ]
    for name in tests:
        test = namespace[name]
        marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
        if not marks:
            await test()
            continue
        argument, values = marks[0].args  # (one parameter: the transport)
        assert (argument, values) == ("transport", ["sse", "live"])
        for value in values:
            await test(**{argument: value})


def test_the_route_table_of_sse_md_lists_every_route() -> None:
    text = (DOCS / "sse.md").read_text()
    table = text.split("\n## Routes\n", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `([A-Z]+) (/\S*)` \|", table, re.M)
    served: list[tuple[str, str]] = []
    for route in demo_app().router.routes:
        path = re.sub(r":\w+}", "}", route.path)  # ({name:path} is documented as {name})
        if isinstance(route, WebSocketRoute):
            served.append(("WS", path))
        else:
            assert isinstance(route, Route) and route.methods is not None
            served += [(m, path) for m in sorted(route.methods - {"HEAD"})]
    assert sorted(documented) == sorted(served)
