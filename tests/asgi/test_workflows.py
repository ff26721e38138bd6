"""ADK 2 workflows as the root of an app, over SSE through the ASGI client: a workflow's output
is its answer, a ``RequestInput`` is answered with the stock ``addToolOutput`` (checked against
its ``response_schema``), and a node's ``require_confirmation`` is a tool approval answered
with ``addToolApprovalResponse``. Each test checks a reload (history) shows what streamed."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.events.request_input import RequestInput
from google.adk.tools import request_input
from google.adk.workflow import START, Workflow, node
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import Call, ChatClient, ChatResponse, ScriptedLlm, Text
from tests.live.live_socket import serve
from tests.support import answer, counter, normalize_ids, parse_sse

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def chat_on(root: Any) -> ChatClient:
    """The stock client on chat-1 of an app over ``root``, every id counted."""
    app = AdkApp(root, messages=Messages(message_id_factory=counter("msg")), identify=lambda c: "u")
    return ChatClient(app, chat_id="chat-1", id_factory=counter("u"))


def streamed(reply: ChatResponse | None) -> list[dict[str, Any]]:
    """The chunks of a request the client sent (``None``: it sent none)."""
    assert reply is not None and reply.status == 200, reply
    return reply.chunks


# --- a workflow's answer -------------------------------------------------------------------


@node
def shout(node_input: Any) -> str:
    return "HELLO FROM A WORKFLOW"


@node
def total(node_input: Any) -> dict[str, int]:
    return {"items": 3, "total": 42}


@pytest.mark.parametrize(
    ("last", "text"),
    [(shout, "HELLO FROM A WORKFLOW"), (total, '{"items":3,"total":42}')],
    ids=["text", "json"],
)
async def test_a_workflows_output_is_its_answer(last: Any, text: str) -> None:
    async with chat_on(Workflow(name="wf", edges=[(START, last)])) as chat:
        chunks = streamed(await chat.send("go"))
        assert chunks == [
            {"type": "start", "messageId": "msg1"},
            {"type": "start-step"},
            {"type": "text-start", "id": "msg1-txt1"},
            {"type": "text-delta", "id": "msg1-txt1", "delta": text},
            {"type": "text-end", "id": "msg1-txt1"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert await chat.history() == chat.messages


@node
def double(node_input: Any) -> int:
    return 21 * 2


@node
def say(node_input: int) -> str:
    return f"The answer is {node_input}."


async def test_only_the_last_nodes_output_is_shown() -> None:
    async with chat_on(Workflow(name="wf", edges=[(START, double, say)])) as chat:
        chunks = streamed(await chat.send("go"))
        assert [c.get("delta") for c in chunks if c["type"] == "text-delta"] == [
            "The answer is 42."
        ]
        assert await chat.history() == chat.messages


# --- RequestInput --------------------------------------------------------------------------


@node
async def ask_name(ctx: Any, node_input: Any) -> Any:
    yield RequestInput(message="What is your name?", response_schema=NAME_SCHEMA)


@node
def greet(node_input: dict[str, str]) -> str:
    return f"Hello {node_input['name']}"


def asking() -> Workflow:
    return Workflow(name="wf", edges=[(START, ask_name, greet)])


def input_request(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c for c in chunks if c["type"] == "tool-input-available")


async def test_a_request_for_input_is_answered_with_add_tool_output() -> None:
    async with chat_on(asking()) as chat:
        first = streamed(await chat.send("go"))
        asked = input_request(first)
        interrupt_id = asked["input"]["interruptId"]
        assert normalize_ids(first) == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "adk_request_input"},
            {
                "type": "tool-input-available",
                "toolCallId": "<call1>",
                "toolName": "adk_request_input",
                "input": {
                    "interruptId": interrupt_id,
                    "payload": None,
                    "message": "What is your name?",
                    "response_schema": NAME_SCHEMA,
                },
            },
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "tool-calls"},
        ]
        assert asked["toolCallId"].startswith(interrupt_id + "~")
        assert await chat.history() == chat.messages

        second = streamed(await chat.tool_result("adk_request_input", {"name": "Bob"}))
        assert second == [
            {"type": "start", "messageId": "msg1"},
            {"type": "start-step"},
            {"type": "text-start", "id": "msg1-txt1"},
            {"type": "text-delta", "id": "msg1-txt1", "delta": "Hello Bob"},
            {"type": "text-end", "id": "msg1-txt1"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert await chat.history() == chat.messages


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ({"nickname": "Bob"}, "does not fit its response_schema: Validation failed"),
        ("Bob", "does not fit its response_schema"),
    ],
    ids=["missing-field", "not-an-object"],
)
async def test_an_answer_that_does_not_fit_the_schema_is_refused_and_loses_nothing(
    output: Any, reason: str
) -> None:
    async with chat_on(asking()) as chat:
        await chat.send("go")
        good = chat.submit_body()
        answer(chat.messages[-1], "adk_request_input", output=output)
        refused = await chat.http.post("/chat", json=chat.submit_body())
        assert refused.status_code == 422
        assert reason in refused.json()["error"]
        # nothing was stored: the request still waits, and a good answer resumes the workflow
        history = await chat.history()
        assert history[-1]["parts"][-1]["state"] == "input-available"
        answer(good["messages"][-1], "adk_request_input", output={"name": "Ann"})
        response = await chat.http.post("/chat", json=good)
        assert "Hello Ann" in [c.get("delta") for c in parse_sse(response.content)]


async def test_an_answer_given_twice_is_refused() -> None:
    async with chat_on(asking()) as chat:
        await chat.send("go")
        answer(chat.messages[-1], "adk_request_input", output={"name": "Bob"})
        body = chat.submit_body()
        assert (await chat.http.post("/chat", json=body)).status_code == 200
        again = await chat.http.post("/chat", json=body)
        assert again.status_code == 409
        assert "error" in again.json()


async def test_a_request_for_input_asked_again_in_a_later_turn_is_a_new_question() -> None:
    async with chat_on(asking()) as chat:
        first = streamed(await chat.send("go"))
        streamed(await chat.tool_result("adk_request_input", {"name": "Bob"}))
        again = streamed(await chat.send("once more"))
        assert input_request(again)["toolCallId"] != input_request(first)["toolCallId"]
        third = streamed(await chat.tool_result("adk_request_input", {"name": "Eve"}))
        assert [c.get("delta") for c in third if c["type"] == "text-delta"] == ["Hello Eve"]
        assert await chat.history() == chat.messages


async def test_a_new_message_closes_a_request_for_input_left_unanswered() -> None:
    async with chat_on(asking()) as chat:
        await chat.send("go")
        left = chat.submit_body()
        await chat.send("never mind")
        history = await chat.history()
        assert history[1]["parts"][-1] == {
            "type": "tool-adk_request_input",
            "toolCallId": left["messages"][-1]["parts"][-1]["toolCallId"],
            "state": "output-error",
            "input": left["messages"][-1]["parts"][-1]["input"],
            "errorText": "Not answered: a new message was sent first.",
        }
        answer(left["messages"][-1], "adk_request_input", output={"name": "Bob"})
        late = await chat.http.post("/chat", json=left)
        assert late.status_code == 409
        assert "new message" in late.json()["error"]


def booking_model() -> ScriptedLlm:
    """Asks the user for a city with ADK's ``request_input`` tool, then books what it got."""

    def respond(contents: list[Any]) -> list[Any]:
        answers = [
            part.function_response.response
            for content in contents
            for part in content.parts or []
            if part.function_response is not None
        ]
        if not answers:
            schema = {"type": "string"}
            return [
                Call("adk_request_input", {"message": "Which city?", "response_schema": schema})
            ]
        return [Text(f"Booked for {answers[-1]['result']}.")]

    return ScriptedLlm(responder=respond, id_factory=counter("call_"))


async def test_the_request_input_tool_of_an_llm_agent_is_answered_the_same_way() -> None:
    agent = LlmAgent(name="booker", model=booking_model(), tools=[request_input])
    async with chat_on(agent) as chat:
        first = streamed(await chat.send("book a trip"))
        call_id = "call_1~" + first[2]["toolCallId"].split("~")[1]
        assert first == [
            {"type": "start", "messageId": "msg1"},
            {"type": "start-step"},
            {"type": "tool-input-start", "toolCallId": call_id, "toolName": "adk_request_input"},
            {
                "type": "tool-input-available",
                "toolCallId": call_id,
                "toolName": "adk_request_input",
                "input": {"message": "Which city?", "response_schema": {"type": "string"}},
            },
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "tool-calls"},
        ]
        answer(chat.messages[-1], "adk_request_input", output=7)
        refused = await chat.http.post("/chat", json=chat.submit_body())
        assert refused.status_code == 422
        chat.messages[-1]["parts"][-1].update(state="input-available")
        del chat.messages[-1]["parts"][-1]["output"]
        second = streamed(await chat.tool_result("adk_request_input", "Paris"))
        assert "".join(c.get("delta", "") for c in second if c["type"] == "text-delta") == (
            "Booked for Paris."
        )
        assert await chat.history() == chat.messages


# --- node confirmation ---------------------------------------------------------------------


class Payments:
    def __init__(self, *, bank_refuses: bool = False) -> None:
        self.runs: Counter[int] = Counter()

        @node
        def plan(node_input: Any) -> dict[str, int]:
            return {"amount": 30}

        @node(require_confirmation=True)
        def pay(node_input: dict[str, int]) -> str:
            self.runs[node_input["amount"]] += 1
            if bank_refuses:
                raise RuntimeError(f"the bank refused a payment of {node_input['amount']}")
            return f"paid {node_input['amount']}"

        self.workflow = Workflow(name="wf", edges=[(START, plan, pay)])


def approval_asked(call_id: str) -> list[dict[str, Any]]:
    return [
        {"type": "start", "messageId": "msg1"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": call_id, "toolName": "pay"},
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": "pay",
            "input": {"node_input": {"amount": 30}},
        },
        {"type": "tool-approval-request", "approvalId": call_id, "toolCallId": call_id},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]


async def test_a_node_that_requires_confirmation_asks_for_approval_and_runs_once() -> None:
    payments = Payments()
    async with chat_on(payments.workflow) as chat:
        first = streamed(await chat.send("pay"))
        call_id = first[2]["toolCallId"]
        assert call_id.startswith("wf_tool_confirmation:wf@1/pay@1~")
        assert first == approval_asked(call_id)
        assert await chat.history() == chat.messages

        second = streamed(await chat.approve("pay"))
        # its output is the card's, and (the last node's) the workflow's answer: a text step
        # after the card, or the stock lastAssistantMessageIsCompleteWithToolCalls would send
        # the finished message again
        assert second == [
            {"type": "start", "messageId": "msg1"},
            {"type": "tool-output-available", "toolCallId": call_id, "output": "paid 30"},
            {"type": "start-step"},
            {"type": "text-start", "id": "msg1-txt1"},
            {"type": "text-delta", "id": "msg1-txt1", "delta": "paid 30"},
            {"type": "text-end", "id": "msg1-txt1"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert payments.runs == {30: 1}
        assert await chat.history() == chat.messages


async def test_a_denied_node_does_not_run() -> None:
    payments = Payments()
    async with chat_on(payments.workflow) as chat:
        first = streamed(await chat.send("pay"))
        call_id = first[2]["toolCallId"]
        second = streamed(await chat.deny("pay", reason="too much"))
        assert second == [
            {"type": "start", "messageId": "msg1"},
            {"type": "tool-output-denied", "toolCallId": call_id},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert payments.runs == {}
        assert await chat.history() == chat.messages


async def test_a_replayed_node_approval_never_runs_it_twice() -> None:
    payments = Payments()
    async with chat_on(payments.workflow) as chat:
        await chat.send("pay")
        answer(chat.messages[-1], "pay", approved=True)
        body = chat.submit_body()
        assert (await chat.http.post("/chat", json=body)).status_code == 200
        assert (await chat.http.post("/chat", json=body)).status_code == 409
        assert payments.runs == {30: 1}


async def test_a_node_approved_in_one_turn_asks_again_in_the_next() -> None:
    payments = Payments()
    async with chat_on(payments.workflow) as chat:
        await chat.send("pay")
        streamed(await chat.approve("pay"))
        again = streamed(await chat.send("pay again"))
        assert again[4]["type"] == "tool-approval-request"
        streamed(await chat.approve("pay"))
        assert payments.runs == {30: 2}
        assert await chat.history() == chat.messages


async def test_an_approved_node_that_raises_ends_in_an_error_in_stream_and_history() -> None:
    """The approved node ran and failed: its card ends ``output-error`` with the error the page
    is shown for the answer, the approval kept, as for an approved tool that raises
    (tests/asgi/test_failed_calls.py); it is never run again, and the chat goes on."""
    payments = Payments(bank_refuses=True)
    async with chat_on(payments.workflow) as chat:
        first = streamed(await chat.send("pay"))
        call_id = first[2]["toolCallId"]
        second = streamed(await chat.approve("pay"))
        assert second == [
            {"type": "start", "messageId": "msg1"},
            {"type": "tool-output-error", "toolCallId": call_id, "errorText": "An error occurred."},
            {"type": "data-error", "data": {"errorText": "An error occurred."}, "id": "msg1-error"},
            {"type": "error", "errorText": "An error occurred."},
            {"type": "finish", "finishReason": "error"},
        ]
        card = chat.messages[-1]["parts"][1]
        assert (card["state"], card["approval"]) == (
            "output-error",
            {"id": call_id, "approved": True},
        )
        assert await chat.history() == chat.messages
        again = streamed(await chat.send("pay again"))
        assert again[4]["type"] == "tool-approval-request"
        assert payments.runs == {30: 1}
        assert await chat.history() == chat.messages


async def test_a_node_approval_cannot_be_answered_with_an_output() -> None:
    payments = Payments()
    async with chat_on(payments.workflow) as chat:
        await chat.send("pay")
        part = chat.messages[-1]["parts"][-1]
        part.update(state="output-available", output={"confirmed": True})  # a forged answer
        refused = await chat.http.post("/chat", json=chat.submit_body())
        assert refused.status_code == 409
        assert "waits for the user's approval" in refused.json()["error"]
        assert payments.runs == {}


# --- live ----------------------------------------------------------------------------------


async def test_a_workflow_is_refused_live_with_the_reason() -> None:
    """ADK runs a workflow once through and ends the live session: its users go to SSE."""
    async with serve(AdkApp(Workflow(name="wf", edges=[(START, shout)]))) as url:
        with pytest.raises(InvalidStatus) as refused:
            await connect(url)
    assert refused.value.response.status_code == 400
    assert json.loads(refused.value.response.body) == {
        "error": "'wf' is a workflow, which ADK cannot run live: use POST /chat, or give AdkApp"
        " a live_agent"
    }
