"""A workflow used as an agent's tool (ADK's ``NodeTool``) whose workflow asks the user, over
SSE through the ASGI client: the question reaches the page as a root workflow's does (a
``tool-adk_request_input`` part answered with the stock ``addToolOutput``, checked against
its ``response_schema``), the answer resumes the workflow, and the agent's call of the tool
then ends with the tool's output. Each test checks a reload (history) shows what streamed.

The agent is ``receptionist`` of tests/e2e/shapes_app.py: it calls the workflow ``greeter``
(ask the name, then greet it) and says what the tool returned."""

from __future__ import annotations

from typing import Any

from adk_asgi.hitl.pending import INPUT_MOVED_ON
from tests.asgi.test_workflows import NAME_SCHEMA, Chat
from tests.e2e import shapes_app as shapes
from tests.support import answer, normalize_ids

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
    async with Chat(shapes.workflow_tool()) as chat:
        first = await chat.send("hi")
        question = input_request(first)
        interrupt_id = question["input"]["interruptId"]
        assert normalize_ids(first) == asked(interrupt_id)
        assert question["toolCallId"].startswith(interrupt_id + "~")
        assert await chat.history() == chat.messages

        second = await chat.resume(tool="adk_request_input", output={"name": "Bob"})
        # the tool's part ends with its output before the model's next step (a part left
        # waiting there would never end, and history would call it interrupted)
        assert normalize_ids(second) == [
            {"type": "start", "messageId": "<msg1>"},
            {
                "type": "tool-output-available",
                "toolCallId": "<call1>",
                "output": {"result": "Hello Bob"},
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
            "output": {"result": "Hello Bob"},
        }
        assert await chat.history() == chat.messages


async def test_an_answer_that_does_not_fit_is_refused_and_the_tool_still_waits() -> None:
    async with Chat(shapes.workflow_tool()) as chat:
        await chat.send("hi")
        waiting = await chat.history()
        good = chat.body()
        answer(chat.messages[-1], "adk_request_input", output={"nickname": "Bob"})
        refused = await chat.client.post("/chat", json=chat.body())
        assert refused.status_code == 422
        assert "does not fit its response_schema" in refused.json()["error"]
        assert await chat.history() == waiting  # nothing stored, nothing closed
        answer(good["messages"][-1], "adk_request_input", output={"name": "Ann"})
        chat.messages = good["messages"]
        await chat._post(good)
        assert chat.messages[-1]["parts"][-1] == {
            "type": "text",
            "text": "The greeter said: Hello Ann.",
            "state": "done",
        }
        assert await chat.history() == chat.messages


async def test_a_new_message_closes_the_question_and_the_tools_call() -> None:
    """Any answer would resume the old workflow: the question is closed unanswered, and the
    agent's call gets that as its result (the model must read one for every call)."""
    async with Chat(shapes.workflow_tool()) as chat:
        await chat.send("hi")
        left = [dict(part) for part in chat.messages[-1]["parts"]]
        again = await chat.send("never mind")
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
