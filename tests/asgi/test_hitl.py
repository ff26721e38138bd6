"""Human in the loop over SSE, through the ASGI client: exact streams for approvals, client
tools and both together, and the server-side checks on every answer."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_asgi import AdkApp, Messages
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.pending import APPROVAL_MOVED_ON, INTERRUPTED
from adk_asgi.testing import Call, ChatClient, ChatResponse, Text, demo_model
from demo_app import change_bgm, get_location, get_weather
from tests.streams import PAY_ALICE, approval_asked, text_step
from tests.support import answer, counter, normalize_ids, scripted_agent

LOCATION = {"latitude": 48.85, "longitude": 2.35}


class Demo:
    """The demo agent with a payment tool that counts its runs, and a page on it."""

    def __init__(
        self, require_confirmation: bool | Callable[..., bool] = True, ai_sdk_version: int = 6
    ) -> None:
        self.payments: Counter[str] = Counter()

        def process_payment(amount: float, recipient: str, currency: str = "USD") -> dict[str, Any]:
            """Send money."""
            self.payments[recipient] += 1
            return {"status": "sent", "amount": amount, "recipient": recipient}

        agent = LlmAgent(
            name="demo_agent",
            model=demo_model(id_factory=counter("call_"), chunk_size=200),
            tools=[
                get_weather,
                FunctionTool(process_payment, require_confirmation=require_confirmation),
                change_bgm,
                get_location,
            ],
        )
        self.app = AdkApp(
            agent,
            identify=lambda c: c.headers.get("x-user", "alice"),
            ai_sdk_version=7 if ai_sdk_version == 7 else 6,
        )
        self.chat = ChatClient(self.app, chat_id="chat-1", id_factory=counter("u"))
        """The page: the stock client on chat-1."""

    async def events(self, user: str = "alice", chat_id: str = "chat-1") -> list[Any]:
        session = await self.app.session_service.get_session(
            app_name=self.app.app_name, user_id=user, session_id=chat_id
        )
        return [] if session is None else session.events


@pytest.fixture
async def demo() -> Any:
    demo = Demo()
    async with demo.chat:
        yield demo


def text(delta: str) -> list[dict[str, Any]]:
    return text_step("<block1>", [delta])


def streamed(reply: ChatResponse | None) -> list[dict[str, Any]]:
    """The chunks of a request the page sent (``None``: the stock client sent none)."""
    assert reply is not None and reply.status == 200, reply
    return reply.chunks


async def post(demo: Demo, body: dict[str, Any], **headers: str) -> httpx.Response:
    """A request of the test's own, from the page's browser (its cookie)."""
    return await demo.chat.http.post("/chat", json=body, headers=headers)


SENT_ALICE = {"status": "sent", "amount": 5, "recipient": "alice"}
CLOSING_ALICE = (
    'Here you go: process_payment: {"amount": 5, "recipient": "alice", "status": "sent"}.'
)


async def test_payment_approved(demo: Demo) -> None:
    first = streamed(await demo.chat.send("pay 5 to alice"))
    assert normalize_ids(first) == approval_asked("process_payment", PAY_ALICE)
    assert first[4]["approvalId"] != first[4]["toolCallId"]
    second = streamed(await demo.chat.approve("process_payment"))
    assert second[0] == {"type": "start", "messageId": demo.chat.messages[-1]["id"]}
    assert normalize_ids(second) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": SENT_ALICE},
        *text(
            'Here you go: process_payment: {"amount": 5, "recipient": "alice", "status": "sent"}.'
        ),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert demo.payments == {"alice": 1}


def above_100(amount: float, **_: Any) -> bool:
    """``require_confirmation`` as a function of the call's arguments."""
    return amount > 100


async def test_payment_below_the_confirmation_threshold_runs_without_approval() -> None:
    demo = Demo(require_confirmation=above_100)
    async with demo.chat:
        chunks = streamed(await demo.chat.send("pay 5 to alice"))
        history = (await demo.chat.http.get("/chat/chat-1/messages")).json()
    assert history == demo.chat.messages  # (v6: no approval, in either)
    assert normalize_ids(chunks) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "process_payment"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "process_payment",
            "input": PAY_ALICE,
        },
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": SENT_ALICE},
        {"type": "finish-step"},
        *text(CLOSING_ALICE),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert demo.payments == {"alice": 1}


async def test_a_v7_client_sees_the_payment_approved_automatically() -> None:
    """The policy let the call through: ai@7 shows it as the AI SDK's own server shows a call
    its ``needsApproval`` let through (an approval marked automatic); a reload shows the same.
    (The v6 test above gets the call and its result only.)"""
    demo = Demo(require_confirmation=above_100, ai_sdk_version=7)
    async with demo.chat:
        chunks = streamed(await demo.chat.send("pay 5 to alice"))
        history = (await demo.chat.http.get("/chat/chat-1/messages")).json()
    assert normalize_ids(chunks) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "process_payment"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "process_payment",
            "input": PAY_ALICE,
        },
        {
            "type": "tool-approval-request",
            "approvalId": "<approval1>",
            "toolCallId": "<call1>",
            "isAutomatic": True,
        },
        {"type": "tool-approval-response", "approvalId": "<approval1>", "approved": True},
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": SENT_ALICE},
        {"type": "finish-step"},
        *text(CLOSING_ALICE),
        {"type": "finish", "finishReason": "stop"},
    ]
    call_id = demo.chat.messages[-1]["parts"][1]["toolCallId"]
    assert demo.chat.messages[-1]["parts"][1] == {
        "type": "tool-process_payment",
        "toolCallId": call_id,
        "state": "output-available",
        "input": PAY_ALICE,
        "approval": {"id": f"approval-{call_id}", "isAutomatic": True, "approved": True},
        "output": SENT_ALICE,
    }
    assert history == demo.chat.messages
    assert demo.payments == {"alice": 1}


async def test_payment_above_the_confirmation_threshold_asks_first() -> None:
    demo = Demo(require_confirmation=above_100)
    async with demo.chat:
        first = streamed(await demo.chat.send("pay 500 to bob"))
        assert demo.payments == {}
        second = streamed(await demo.chat.approve("process_payment"))
    bob = {"amount": 500, "recipient": "bob", "currency": "USD"}
    assert normalize_ids(first) == approval_asked("process_payment", bob)
    sent = {"status": "sent", "amount": 500, "recipient": "bob"}
    assert normalize_ids(first + second)[len(first) :] == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": sent},
        *text(
            'Here you go: process_payment: {"amount": 500, "recipient": "bob", "status": "sent"}.'
        ),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert demo.payments == {"bob": 1}


async def test_payment_denied(demo: Demo) -> None:
    await demo.chat.send("pay 5 to alice")
    second = streamed(await demo.chat.deny("process_payment"))
    assert normalize_ids(second) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-denied", "toolCallId": "<call1>"},
        *text("Here you go: process_payment was denied."),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert demo.payments == {}


async def test_client_tool_result_continues_the_run(demo: Demo) -> None:
    first = streamed(await demo.chat.send("play track 3"))
    assert normalize_ids(first) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "change_bgm"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "change_bgm",
            "input": {"track": 3},
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    second = streamed(await demo.chat.tool_result("change_bgm", {"playing": 3}))
    assert normalize_ids(second) == [
        {"type": "start", "messageId": "<msg1>"},
        *text('Here you go: change_bgm: {"playing": 3}.'),
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_client_tool_with_approval_result_in_a_later_request(demo: Demo) -> None:
    first = streamed(await demo.chat.send("where am i"))
    assert normalize_ids(first) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "get_location"},
        {"type": "tool-input-delta", "toolCallId": "<call1>", "inputTextDelta": "{}"},
        {"type": "tool-approval-request", "approvalId": "<approval1>", "toolCallId": "<call1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    second = streamed(await demo.chat.approve("get_location"))
    assert normalize_ids(second) == [
        {"type": "start", "messageId": "<msg1>"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "get_location",
            "input": {},
        },
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    third = streamed(await demo.chat.tool_result("get_location", LOCATION))
    assert normalize_ids(third) == [
        {"type": "start", "messageId": "<msg1>"},
        *text('Here you go: get_location: {"latitude": 48.85, "longitude": 2.35}.'),
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_client_tool_with_approval_result_in_the_same_request(demo: Demo) -> None:
    """A page whose own code sends: approval and result in one request."""
    demo.chat.send_automatically_when = None
    await demo.chat.send("where am i")
    assert await demo.chat.approve("get_location") is None
    assert await demo.chat.tool_result("get_location", LOCATION) is None
    assert normalize_ids(streamed(await demo.chat.submit())) == [
        {"type": "start", "messageId": "<msg1>"},
        *text('Here you go: get_location: {"latitude": 48.85, "longitude": 2.35}.'),
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_client_tool_denied(demo: Demo) -> None:
    await demo.chat.send("where am i")
    second = streamed(await demo.chat.deny("get_location"))
    assert normalize_ids(second) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-denied", "toolCallId": "<call1>"},
        *text("Here you go: get_location was denied."),
        {"type": "finish", "finishReason": "stop"},
    ]


@pytest.mark.parametrize("decisions", [(True, True), (True, False), (False, True), (False, False)])
async def test_two_payments_in_one_step(demo: Demo, decisions: tuple[bool, bool]) -> None:
    first = streamed(await demo.chat.send("pay 5 to alice and pay 7 to bob"))
    assert [c["type"] for c in first].count("tool-approval-request") == 2
    # the stock helper sends once both are answered
    assert await demo.chat.approve("process_payment", decisions[0]) is None
    second = streamed(await demo.chat.approve("process_payment", decisions[1]))
    chunks = normalize_ids(first + second)[len(first) :]
    outcomes = [
        {"type": "tool-output-available", "toolCallId": call, "output": result}
        if ok
        else {"type": "tool-output-denied", "toolCallId": call}
        for call, ok, result in (
            ("<call1>", decisions[0], SENT_ALICE),
            ("<call2>", decisions[1], {"status": "sent", "amount": 7, "recipient": "bob"}),
        )
    ]
    denied = [o for o in outcomes if o["type"] == "tool-output-denied"]
    assert chunks[0] == {"type": "start", "messageId": "<msg1>"}
    # denials are known from the request and come first; ADK's results follow, before any step
    assert chunks[1:3] == denied + [o for o in outcomes if o not in denied]
    assert [c["type"] for c in chunks[3:]] == [
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert demo.payments == {
        name: 1 for name, ok in (("alice", decisions[0]), ("bob", decisions[1])) if ok
    }


async def test_payment_then_payment_with_intermediate_text(demo: Demo) -> None:
    await demo.chat.send("pay 5 to alice then pay 7 to bob")
    second = streamed(await demo.chat.approve("process_payment"))
    assert normalize_ids(second) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": SENT_ALICE},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-delta", "id": "<block1>", "delta": "Done. Next, process_payment."},
        {"type": "text-end", "id": "<block1>"},
        {"type": "tool-input-start", "toolCallId": "<call2>", "toolName": "process_payment"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call2>",
            "toolName": "process_payment",
            "input": {"amount": 7, "recipient": "bob", "currency": "USD"},
        },
        {"type": "tool-approval-request", "approvalId": "<approval1>", "toolCallId": "<call2>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    third = streamed(await demo.chat.approve("process_payment"))
    assert [c["type"] for c in third] == [
        "start",
        "tool-output-available",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert demo.payments == {"alice": 1, "bob": 1}


async def test_server_and_client_tool_in_one_step_wait_for_the_browser(demo: Demo) -> None:
    first = streamed(await demo.chat.send("weather in Paris and play track 2"))
    assert [c["type"] for c in first] == [
        "start",
        "start-step",
        "tool-input-start",
        "tool-input-available",
        "tool-input-start",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "finish",
    ]
    assert first[-1] == {"type": "finish", "finishReason": "tool-calls"}
    second = streamed(await demo.chat.tool_result("change_bgm", {"playing": 2}))
    assert [c["type"] for c in second] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert 'change_bgm: {"playing": 2}' in second[3]["delta"]


async def test_a_browser_result_sent_with_a_payment_approval_reaches_the_model(
    demo: Demo,
) -> None:
    """Pins a fix: the approvals helper sends the payment's approval with change_bgm's result in
    one request. ADK leaves an event that answers a confirmation out of the model's context, so
    the browser's result goes to ADK in an event of its own, before the confirmation's."""
    await demo.chat.send("pay 5 to alice and play track 1")
    # onToolCall's result, at once: the payment still waits, so nothing is sent yet
    assert await demo.chat.tool_result("change_bgm", {"playing": 1}) is None
    second = streamed(await demo.chat.approve("process_payment"))
    assert normalize_ids(second) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": SENT_ALICE},
        *text(
            'Here you go: process_payment: {"amount": 5, "recipient": "alice", "status": "sent"};'
            ' change_bgm: {"playing": 1}.'
        ),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert demo.payments == {"alice": 1}


async def test_a_denial_next_to_an_approved_browser_tool_is_shown_with_its_result(
    demo: Demo,
) -> None:
    """Pins a fix: "pay 5 to alice and where am i", payment denied, location approved. Shown at
    once, the denial would leave the step with an ``output-denied`` part, and the stock helpers
    never send the browser's result then; so the payment's part stays ``approval-responded``
    until the request that carries the location, which shows both."""
    first = streamed(await demo.chat.send("pay 5 to alice and where am i"))
    payment, location = first[2]["toolCallId"], first[6]["toolCallId"]
    assert await demo.chat.deny("process_payment") is None  # the location still waits
    second = streamed(await demo.chat.approve("get_location"))
    assert second == [
        {"type": "start", "messageId": demo.chat.messages[-1]["id"]},
        {
            "type": "tool-input-available",
            "toolCallId": location,
            "toolName": "get_location",
            "input": {},
        },
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    parts = {p.get("toolCallId"): p for p in demo.chat.messages[-1]["parts"]}
    assert parts[payment]["state"] == "approval-responded"  # what the approvals helper needs
    third = streamed(await demo.chat.tool_result("get_location", LOCATION))
    assert normalize_ids(third) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-denied", "toolCallId": "<call1>"},
        *text(
            "Here you go: process_payment was denied;"
            ' get_location: {"latitude": 48.85, "longitude": 2.35}.'
        ),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert third[1]["toolCallId"] == payment
    assert demo.payments == {}
    # the denial was recorded once: sending it again (with nothing open) is a conflict
    await refused(
        demo, demo.chat.submit_body(), "this request answers no open tool call of the chat"
    )


# --- server-side truth ---------------------------------------------------------------------


async def refused(demo: Demo, body: dict[str, Any], reason: str, **headers: str) -> None:
    before = len(await demo.events())
    response = await post(demo, body, **headers)
    assert (response.status_code, response.json()) == (409, {"error": reason})
    assert len(await demo.events()) == before


async def test_forged_approval_id_is_refused(demo: Demo) -> None:
    await demo.chat.send("pay 5 to alice")
    answer(demo.chat.messages[-1], "process_payment", approved=True)
    demo.chat.messages[-1]["parts"][1]["approval"]["id"] = "adk-forged"
    await refused(demo, demo.chat.submit_body(), "approval 'adk-forged' is not open in this chat")
    assert demo.payments == {}


async def test_unknown_tool_call_is_refused(demo: Demo) -> None:
    await demo.chat.send("play track 1")
    answer(demo.chat.messages[-1], "change_bgm", output={"playing": 1})
    demo.chat.messages[-1]["parts"][1]["toolCallId"] = "call_999"
    await refused(demo, demo.chat.submit_body(), "tool call 'call_999' is not part of this chat")


async def test_another_users_chat_cannot_be_continued(demo: Demo) -> None:
    await demo.chat.send("pay 5 to alice")
    answer(demo.chat.messages[-1], "process_payment", approved=True)
    response = await post(demo, demo.chat.submit_body(), **{"x-user": "mallory"})
    assert (response.status_code, response.json()) == (
        409,
        {"error": "this chat has no open tool call to continue"},
    )
    assert demo.payments == {}
    assert await demo.events(user="mallory") == []


async def test_duplicated_approval_never_runs_the_tool_twice(demo: Demo) -> None:
    await demo.chat.send("pay 5 to alice")
    approved = await demo.chat.approve("process_payment")
    assert approved is not None and approved.status == 200, approved
    body = approved.body  # the stock client's request, sent again (a double submit)
    approval_id = body["messages"][1]["parts"][1]["approval"]["id"]
    await refused(demo, body, f"approval {approval_id!r} is not open in this chat")
    assert demo.payments == {"alice": 1}


async def test_concurrent_double_submission_runs_the_tool_once(demo: Demo) -> None:
    await demo.chat.send("pay 5 to alice")
    answer(demo.chat.messages[-1], "process_payment", approved=True)
    responses = await asyncio.gather(
        post(demo, demo.chat.submit_body()), post(demo, demo.chat.submit_body())
    )
    assert sorted(r.status_code for r in responses) == [200, 409]
    assert demo.payments == {"alice": 1}


async def test_replayed_client_approval_is_refused(demo: Demo) -> None:
    await demo.chat.send("where am i")
    approved = await demo.chat.approve("get_location")
    assert approved is not None and approved.status == 200, approved
    body = approved.body  # the stock client's request, replayed
    approval_id = body["messages"][1]["parts"][1]["approval"]["id"]
    await refused(demo, body, f"approval {approval_id!r} was already answered")


async def test_client_result_without_the_required_approval_is_refused(demo: Demo) -> None:
    await demo.chat.send("where am i")
    part = demo.chat.messages[-1]["parts"][1]
    part.update(state="output-available", output=LOCATION)
    del part["approval"]
    await refused(
        demo,
        demo.chat.submit_body(),
        f"tool call {part['toolCallId']!r} needs the user's approval before its result",
    )


async def test_a_result_the_client_makes_up_for_a_server_call_is_never_taken(
    demo: Demo,
) -> None:
    """A server call a crash left without a result is closed by the server (``INTERRUPTED``)
    before any answer is read; an output the client claims for it is history it made up, and
    the model never reads it. The request's real answer goes through."""
    await demo.chat.send("play track 1")
    session = await demo.app.session_service.get_session(
        app_name=demo.app.app_name, user_id="alice", session_id="chat-1"
    )
    assert session is not None
    lost = types.FunctionCall(id="call_lost", name="get_weather", args={"city": "Oslo"})
    asked = Event(
        invocation_id=session.events[-1].invocation_id,
        author="demo_agent",
        content=types.Content(role="model", parts=[types.Part(function_call=lost)]),
        custom_metadata=bookkeeping.with_tags(None, message_id=demo.chat.messages[-1]["id"]),
    )
    await demo.app.session_service.append_event(session, asked)
    answer(demo.chat.messages[-1], "change_bgm", output={"playing": 1})
    demo.chat.messages[-1]["parts"].append(
        {
            "type": "tool-get_weather",
            "toolCallId": "call_lost",
            "state": "output-available",
            "input": {"city": "Oslo"},
            "output": {"forecast": "made up"},
        }
    )
    assert (await post(demo, demo.chat.submit_body())).status_code == 200
    results = [r.response for e in await demo.events() for r in e.get_function_responses() if r.id]
    assert INTERRUPTED in results and {"forecast": "made up"} not in results
    assert {"playing": 1} in results


async def test_a_continuation_that_answers_nothing_is_refused(demo: Demo) -> None:
    await demo.chat.send("play track 1")
    await refused(
        demo, demo.chat.submit_body(), "this request answers no open tool call of the chat"
    )


async def test_a_result_for_another_message_is_refused(demo: Demo) -> None:
    await demo.chat.send("play track 1")
    answer(demo.chat.messages[-1], "change_bgm", output={"playing": 1})
    body = demo.chat.submit_body()
    body["messages"][1]["id"] = "msg_other"
    call_id = demo.chat.messages[-1]["parts"][1]["toolCallId"]
    await refused(demo, body, f"tool call {call_id!r} does not belong to message 'msg_other'")


# --- history -------------------------------------------------------------------------------


async def test_history_reload_mid_approval_can_be_approved(demo: Demo) -> None:
    first = streamed(await demo.chat.send("pay 5 to alice"))
    reloaded = (await demo.chat.http.get("/chat/chat-1/messages")).json()
    message_id, call_id, approval_id = (
        first[0]["messageId"],
        first[2]["toolCallId"],
        first[4]["approvalId"],
    )
    assert reloaded == [
        demo.chat.messages[0],
        {
            "id": message_id,
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {
                    "type": "tool-process_payment",
                    "toolCallId": call_id,
                    "state": "approval-requested",
                    "input": PAY_ALICE,
                    "approval": {"id": approval_id},
                },
            ],
        },
    ]
    demo.chat.messages = reloaded  # a reloaded page
    second = streamed(await demo.chat.approve("process_payment"))
    assert second[1]["type"] == "tool-output-available"
    after = (await demo.chat.http.get("/chat/chat-1/messages")).json()
    assert after[1]["parts"][1] == {
        "type": "tool-process_payment",
        "toolCallId": call_id,
        "state": "output-available",
        "input": PAY_ALICE,
        "output": SENT_ALICE,
        "approval": {"id": approval_id, "approved": True},
    }
    assert after[1]["parts"][2:] == [
        {"type": "step-start"},
        {"type": "text", "text": CLOSING_ALICE, "state": "done"},
    ]


async def test_history_of_an_unknown_chat_is_a_404_and_of_a_new_one_empty(demo: Demo) -> None:
    response = await demo.chat.http.get("/chat/nothing-here/messages")
    assert (response.status_code, response.json()) == (404, {"error": "this chat does not exist"})
    await demo.app.session_service.create_session(  # a chat with no messages yet
        app_name=demo.app.app_name, user_id="alice", session_id="empty"
    )
    response = await demo.chat.http.get("/chat/empty/messages")
    assert (response.status_code, response.json()) == (200, [])


async def test_a_tool_can_ask_for_confirmation_with_a_payload() -> None:
    def book_flight(destination: str, tool_context: ToolContext) -> dict[str, Any]:
        """Book a flight; the user picks the seat."""
        confirmation = tool_context.tool_confirmation
        if confirmation is None:
            tool_context.request_confirmation(
                hint="Pick a seat", payload={"seat": None, "options": ["1A", "14C"]}
            )
            tool_context.actions.skip_summarization = True
            return {"status": "waiting for a seat"}
        if not confirmation.confirmed:
            return {"status": "cancelled"}
        return {
            "status": "booked",
            "destination": destination,
            "seat": confirmation.payload["seat"],
        }

    agent = scripted_agent(
        [[Call("book_flight", {"destination": "Oslo"})], [Text("Booked.")]], tools=[book_flight]
    )
    app = AdkApp(
        agent, identify=lambda c: "u", messages=Messages(message_id_factory=counter("msg"))
    )
    async with ChatClient(app, chat_id="f") as chat:
        first = streamed(await chat.send("fly"))
        request = next(x for x in first if x["type"] == "tool-approval-request")
        assert request == {
            "type": "tool-approval-request",
            "approvalId": request["approvalId"],
            "toolCallId": "call_1",
            "approvalDescriptor": {
                "hint": "Pick a seat",
                "payload": {"seat": None, "options": ["1A", "14C"]},
            },
        }
        payloads = {"confirmationPayloads": {request["approvalId"]: {"seat": "14C"}}}
        approved = await chat.approve("book_flight", body=payloads)
        assert approved is not None and approved.body["messageId"] == "msg1"
        second = streamed(approved)
    assert second[:2] == [
        {"type": "start", "messageId": "msg1"},
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": {"status": "booked", "destination": "Oslo", "seat": "14C"},
        },
    ]


async def test_a_new_message_closes_the_calls_left_open(demo: Demo) -> None:
    payment = streamed(await demo.chat.send("pay 5 to alice"))
    assert payment[-3]["type"] == "tool-approval-request"
    # tabs of the same browser that still show the old cards
    payment_tab = ChatClient(http=demo.chat.http, chat_id="chat-1", messages=demo.chat.messages)
    bgm = streamed(await demo.chat.send("play track 3"))
    bgm_tab = ChatClient(http=demo.chat.http, chat_id="chat-1", messages=demo.chat.messages)
    location = streamed(await demo.chat.send("where am i"))
    bgm_call, location_call = bgm[3]["toolCallId"], location[3]["toolCallId"]
    await demo.chat.send("hello")
    model: Any = demo.app.runner.agent.model  # type: ignore[union-attr]
    seen = model.requests[-1].contents
    responses = [p.function_response for c in seen for p in c.parts if p.function_response]
    assert [(r.id, r.response) for r in responses][1:] == [  # [0]: ADK's payment placeholder
        (bgm_call, {"error": "The user moved on before the browser answered."}),
        (location_call, {"error": "This tool call is rejected."}),
    ]
    history = (await demo.chat.http.get("/chat/chat-1/messages")).json()
    tools = [p for m in history for p in m["parts"] if p["type"].startswith("tool-")]
    # closed, not denied: the user never answered the approvals (the model reads a rejection)
    assert [(t["type"], t["state"], t.get("errorText")) for t in tools] == [
        ("tool-process_payment", "output-error", APPROVAL_MOVED_ON),
        ("tool-change_bgm", "output-error", "The user moved on before the browser answered."),
        ("tool-get_location", "output-error", APPROVAL_MOVED_ON),
    ]
    # The old cards can no longer be answered, and the refusal says why: the payment never runs.
    approval_id = payment[-3]["approvalId"]
    stale = await payment_tab.approve("process_payment")
    assert stale is not None
    assert (stale.status, stale.error) == (
        409,
        f"approval {approval_id!r} was closed unanswered ({APPROVAL_MOVED_ON})",
    )
    stale = await bgm_tab.tool_result("change_bgm", {"playing": 3})
    assert stale is not None and stale.status == 409, stale
    assert demo.payments == {}


@pytest.mark.parametrize("approved", [True, False])
async def test_history_keeps_the_reason_given_with_an_approval(approved: bool) -> None:
    demo = Demo()
    async with demo.chat:
        await demo.chat.send("pay 5 to alice")
        card = next(
            p for p in demo.chat.messages[-1]["parts"] if p["type"] == "tool-process_payment"
        )
        approval_id = card["approval"]["id"]
        streamed(await demo.chat.approve("process_payment", approved, reason="as agreed"))
        history = await demo.chat.history()
    [stored] = [p for p in history[1]["parts"] if p["type"] == "tool-process_payment"]
    assert stored["approval"] == {"id": approval_id, "approved": approved, "reason": "as agreed"}
