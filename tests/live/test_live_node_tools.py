"""A workflow used as an agent's tool (ADK's ``NodeTool``) whose workflow asks the user, over
the live WebSocket. ADK's live flow cannot pause a tool (the tool's ``NodeInterruptedError``
ended the connection); the bridge waits for the page's answer inside the tool pipeline, stores
it as ADK does over SSE, and runs the tool again: the workflow resumes, and the tool's part
ends with its output. The question is answered with the stock ``addToolOutput`` and checked
against its ``response_schema``. Each test checks a reload (history) shows what streamed."""

from __future__ import annotations

from typing import Any

import pytest

from adk_asgi import AdkApp, Limits
from adk_asgi.hitl.pending import EXPIRED, INPUT_MOVED_ON
from adk_asgi.testing import read_ui_message
from tests.e2e import shapes_app as shapes
from tests.live.live_chunks import squash
from tests.live.live_server import answered, stored_history, wait_until_closed
from tests.live.live_socket import (
    cookie_of,
    http_history,
    live_chat,
    open_live,
    send_resume,
    serve,
    text_frames_until_end,
    unframe,
)
from tests.support import normalize_ids

pytestmark = [pytest.mark.e2e]

NAME_SCHEMA = shapes.NAME_SCHEMA


def asked(interrupt_id: str) -> list[dict[str, Any]]:
    """The first answer: the agent calls the tool, whose workflow asks in a step of its own, as
    over SSE (live mode keeps ADK's ids)."""
    question = {
        "interruptId": interrupt_id,
        "payload": None,
        "message": shapes.ASK_NAME,
        "response_schema": NAME_SCHEMA,
    }
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


def interrupt_of(chunks: list[dict[str, Any]]) -> str:
    interrupt_id: str = chunks[7]["input"]["interruptId"]
    return interrupt_id


async def test_the_question_of_a_workflow_tool_is_answered_live_and_the_tool_returns() -> None:
    app = AdkApp(shapes.workflow_tool())
    async with live_chat(app) as chat:
        first = (await chat.send("hi")).chunks
        assert normalize_ids(first) == asked(interrupt_of(first))
        refused = await chat.tool_result("adk_request_input", {"nickname": "Bob"})
        assert refused is not None and (refused.status, refused.chunks) == (0, [])  # an error frame
        assert refused.error is not None and "does not fit its response_schema" in refused.error
        part = chat.messages[-1]["parts"][-1]
        part["state"] = "input-available"
        del part["output"]
        went_on = await chat.tool_result("adk_request_input", {"name": "Bob"})
        assert went_on is not None
        folded, text = squash(went_on.chunks)
        assert text == "The greeter said: Hello Bob."
        assert folded == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "tool-output-available", "toolCallId": "<call1>", "output": {"name": "Bob"}},
            {
                "type": "tool-output-available",
                "toolCallId": "<call2>",
                "output": "Hello Bob",
            },
            {"type": "start-step"},
            {"type": "text-start", "id": "<block1>"},
            {"type": "text-delta", "id": "<block1>", "delta": "~"},
            {"type": "text-end", "id": "<block1>"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert chat.messages[-1]["parts"][1]["state"] == "output-available"
        history = await stored_history(app, chat.id)
        assert history[1] == chat.messages[-1]


async def test_a_new_message_closes_the_question_and_the_tools_call_live() -> None:
    app = AdkApp(shapes.workflow_tool())
    async with live_chat(app) as chat:
        paused = (await chat.send("hi")).message
        assert paused is not None
        left = [dict(part) for part in paused["parts"]]
        await chat.send("never mind")
        history = await stored_history(app, chat.id)
    closed = {"state": "output-error", "errorText": INPUT_MOVED_ON["error"]}
    assert history[1]["parts"] == [left[0], {**left[1], **closed}, left[2], {**left[3], **closed}]
    assert history[3] == chat.messages[-1]


async def test_a_question_nobody_answers_times_out_and_the_turn_goes_on() -> None:
    app = AdkApp(shapes.workflow_tool(), limits=Limits(client_tool_timeout=0.2))
    async with serve(app) as url:
        live, socket = await open_live(url)
        async with socket:
            first = await live.turn("hi")
            # nobody answered: past client_tool_timeout the question is closed, the tool
            # returns that, and the model's answer to it is stored
            await answered(app, live.chat_id)
            await send_resume(socket, live.chat_id, "resume-1")
            replay = unframe(await text_frames_until_end(socket, "resume-1"), "resume-1")
        await wait_until_closed(app)
        history = await http_history(url, cookie_of(socket), live.chat_id)
    expired = EXPIRED["error"]
    folded, text = squash(first + replay)
    assert text == "The greeter said: None."
    assert folded == [
        *asked(interrupt_of(first)),
        *asked(interrupt_of(first))[:-1],
        {"type": "start", "messageId": "<msg1>"},
        {"type": "tool-output-error", "toolCallId": "<call2>", "errorText": expired},
        {"type": "tool-output-error", "toolCallId": "<call1>", "errorText": expired},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-delta", "id": "<block1>", "delta": "~"},
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    resumed = read_ui_message(replay)
    assert history == [live.user, resumed]
    closed = {"state": "output-error", "errorText": expired}
    assert resumed["parts"][1:4] == [
        {**live.assistant["parts"][1], **closed},
        live.assistant["parts"][2],
        {**live.assistant["parts"][3], **closed},
    ]
