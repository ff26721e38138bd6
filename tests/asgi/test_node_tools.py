"""A workflow used as an agent's tool (ADK's ``NodeTool``) whose workflow asks the user, over
SSE through the ASGI client: the question reaches the page as a root workflow's does (a
``tool-adk_request_input`` part answered with the stock ``addToolOutput``, checked against
its ``response_schema``; a node's ``require_confirmation``, an approval), the answer resumes
the workflow, and the agent's call of the tool then ends with the tool's output. Each test
checks a reload (history) shows what streamed.

The agent is ``receptionist`` of tests/e2e/shapes_app.py: it calls the workflow ``greeter``
(ask the name, then greet it) and says what the tool returned."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.workflow import START, Workflow, node
from google.genai import types
from pydantic import BaseModel

from adk_asgi.hitl.pending import INPUT_MOVED_ON, REJECTED
from adk_asgi.testing import Call, ScriptedLlm, Segment, Text
from tests.asgi.test_workflows import NAME_SCHEMA, chat_on, streamed
from tests.e2e import shapes_app as shapes
from tests.support import normalize_ids

ASKED = {"message": "What is your name?", "payload": None, "response_schema": NAME_SCHEMA}


def input_request(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The question's ``tool-input-available`` chunk (after the tool's own)."""
    return next(
        c
        for c in chunks
        if c["type"] == "tool-input-available" and c["toolName"] == "adk_request_input"
    )


def asked(interrupt_id: str) -> list[dict[str, Any]]:
    """The first answer: the agent calls the tool (announced as the server's), whose workflow
    asks; the tool's part waits, the question is the page's to answer."""
    question = {"interruptId": interrupt_id, **ASKED}
    return [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": "<call1>",
            "toolName": "greeter",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "greeter",
            "input": shapes.VISIT,
            "providerExecuted": True,
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "<call2>", "toolName": "adk_request_input"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call2>",
            "toolName": "adk_request_input",
            "input": question,
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]


async def test_the_question_of_a_workflow_tool_is_answered_and_the_tool_returns() -> None:
    async with chat_on(shapes.workflow_tool()) as chat:
        first = streamed(await chat.send("hi"))
        question = input_request(first)
        interrupt_id = question["input"]["interruptId"]
        assert normalize_ids(first) == asked(interrupt_id)
        assert question["toolCallId"].startswith(interrupt_id + "~")
        assert await chat.history() == chat.messages

        second = streamed(await chat.tool_result("adk_request_input", {"name": "Bob"}))
        # the tool's part ends with its output before the model's next step (a part left
        # waiting there would never end, and history would call it interrupted)
        assert normalize_ids(second) == [
            {"type": "start", "messageId": "<msg1>"},
            {
                "type": "tool-output-available",
                "toolCallId": "<call1>",
                "output": "Hello Bob",
            },
            {"type": "start-step"},
            {"type": "text-start", "id": "<block1>"},
            {"type": "text-delta", "id": "<block1>", "delta": "The gree"},
            {"type": "text-delta", "id": "<block1>", "delta": "ter said"},
            {"type": "text-delta", "id": "<block1>", "delta": ": Hello "},
            {"type": "text-delta", "id": "<block1>", "delta": "Bob."},
            {"type": "text-end", "id": "<block1>"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert chat.messages[-1]["parts"][1] == {
            "type": "tool-greeter",
            "toolCallId": first[2]["toolCallId"],
            "state": "output-available",
            "providerExecuted": True,
            "input": shapes.VISIT,
            "output": "Hello Bob",
        }
        assert await chat.history() == chat.messages


async def test_an_answer_that_does_not_fit_is_refused_and_the_tool_still_waits() -> None:
    async with chat_on(shapes.workflow_tool()) as chat:
        await chat.send("hi")
        waiting = await chat.history()
        refused = await chat.tool_result("adk_request_input", {"nickname": "Bob"})
        assert refused is not None and refused.status == 422
        assert refused.error is not None
        assert "does not fit its response_schema" in refused.error
        assert await chat.history() == waiting  # nothing stored, nothing closed
        chat.messages = waiting  # the page reloads, and answers again
        streamed(await chat.tool_result("adk_request_input", {"name": "Ann"}))
        assert chat.messages[-1]["parts"][-1] == {
            "type": "text",
            "text": "The greeter said: Hello Ann.",
            "state": "done",
        }
        assert await chat.history() == chat.messages


async def test_a_new_message_closes_the_question_and_the_tools_call() -> None:
    """Any answer would resume the old workflow: the question is closed unanswered, and the
    agent's call gets that as its result (the model must read one for every call)."""
    async with chat_on(shapes.workflow_tool()) as chat:
        await chat.send("hi")
        left = [dict(part) for part in chat.messages[-1]["parts"]]
        again = streamed(await chat.send("never mind"))
        assert input_request(again)["input"]["message"] == ASKED["message"]  # asked anew
        history = await chat.history()
        closed = {"state": "output-error", "errorText": INPUT_MOVED_ON["error"]}
        assert history[1]["parts"] == [
            left[0],
            {**left[1], **closed},
            left[2],
            {**left[3], **closed},
        ]
        assert history[2:] == chat.messages[2:]


# --- a node of a workflow tool that requires confirmation ---------------------------------


class Bill(BaseModel):
    amount: int


class Cashier:
    """``cashier`` calls the workflow ``payer`` as a tool, whose node ``pay`` requires the
    user's confirmation; the model says what the tool returned."""

    def __init__(self) -> None:
        self.runs: Counter[int] = Counter()

        @node(require_confirmation=True)
        def pay(node_input: Bill) -> str:
            self.runs[node_input.amount] += 1
            return f"paid {node_input.amount}"

        def respond(contents: list[types.Content]) -> list[Segment]:
            results = [
                part.function_response.response
                for content in shapes.this_turn(contents)
                for part in content.parts or ()
                if part.function_response is not None and part.function_response.name == "payer"
            ]
            return [Text(f"Payer: {results[-1]}.")] if results else [Call("payer", {"amount": 30})]

        payer = Workflow(name="payer", description="Pays.", edges=[(START, pay)], input_schema=Bill)
        self.agent = LlmAgent(name="cashier", model=ScriptedLlm(responder=respond), tools=[payer])


@pytest.mark.parametrize("approved", [True, False], ids=["approved", "denied"])
async def test_a_confirmation_asked_inside_a_workflow_tool_is_an_approval(approved: bool) -> None:
    cashier = Cashier()
    async with chat_on(cashier.agent) as chat:
        first = streamed(await chat.send("pay"))
        approval = next(c for c in first if c["type"] == "tool-approval-request")
        assert approval["toolCallId"].startswith(
            f"wf_tool_confirmation:cashier@1/payer@{first[2]['toolCallId']}/pay@1~"
        )
        assert await chat.history() == chat.messages

        second = streamed(await chat.approve("pay", approved))
        result = {"result": "paid 30"} if approved else REJECTED  # (what the model reads)
        # the node's part, then the tool's, settle before the model's step
        settled: list[dict[str, Any]] = (
            [
                {"type": "tool-output-available", "toolCallId": "<pay>", "output": "paid 30"},
                {"type": "tool-output-available", "toolCallId": "<payer>", "output": "paid 30"},
            ]
            if approved
            else [
                {"type": "tool-output-denied", "toolCallId": "<pay>"},
                {
                    "type": "tool-output-error",
                    "toolCallId": "<payer>",
                    "errorText": REJECTED["error"],
                },
            ]
        )
        named = {approval["toolCallId"]: "<pay>", first[2]["toolCallId"]: "<payer>"}
        assert [
            {**c, "toolCallId": named[c["toolCallId"]]} if "toolCallId" in c else c
            for c in second
            if c["type"] != "text-delta"
        ] == [
            {"type": "start", "messageId": "msg1"},
            *settled,
            {"type": "start-step"},
            {"type": "text-start", "id": "msg1-txt1"},
            {"type": "text-end", "id": "msg1-txt1"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        text = "".join(c["delta"] for c in second if c["type"] == "text-delta")
        assert text == f"Payer: {result}."
        assert cashier.runs == ({30: 1} if approved else {})
        assert await chat.history() == chat.messages
