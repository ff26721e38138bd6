"""Agents other than one ``LlmAgent`` over the live WebSocket: a transfer ends when the agent it
hands over to completes its turn, the ``request_input`` tool waits for the user's answer like a
browser tool, and the shapes ADK cannot run live are refused at the handshake with the reason.
Each test checks a reload (history) shows what streamed."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from google.adk.agents import LlmAgent, ParallelAgent
from google.adk.tools import request_input
from google.genai import types

from adk_asgi import AdkApp
from adk_asgi.hitl.pending import INPUT_MOVED_ON
from adk_asgi.testing import Call, ChatClient, ScriptedLlm, Text, TransportName
from tests.live.live_chunks import squash
from tests.live.live_server import stored_history
from tests.live.live_socket import live_chat
from tests.support import counter, normalize_ids

pytestmark = [pytest.mark.e2e]


def transfer_tree() -> LlmAgent:
    billing = LlmAgent(
        name="billing",
        description="Pays bills.",
        model=ScriptedLlm(turns=[[Text("Billing here.")]]),
    )
    front = ScriptedLlm(
        turns=[[Text("Passing you on."), Call("transfer_to_agent", {"agent_name": "billing"})]],
        id_factory=counter("call_"),
    )
    return LlmAgent(name="front", model=front, sub_agents=[billing])


def text_block(block: str, author: str) -> list[dict[str, Any]]:
    metadata = {"adk": {"author": author}}
    return [
        {"type": "text-start", "id": block, "providerMetadata": metadata},
        {"type": "text-delta", "id": block, "delta": "~"},
        {"type": "text-end", "id": block},
    ]


async def test_a_transfer_ends_when_the_new_agent_completes_its_turn() -> None:
    app = AdkApp(transfer_tree())
    async with live_chat(app) as chat:
        reply = await chat.send("I have a bill")
        folded, text = squash(reply.chunks)
        assert text == "Passing you on.Billing here."
        assert folded == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            *text_block("<block1>", "front"),
            {
                "type": "tool-input-start",
                "toolCallId": "<call1>",
                "toolName": "transfer_to_agent",
                "providerExecuted": True,
                "providerMetadata": {"adk": {"author": "front"}},
            },
            {
                "type": "tool-input-available",
                "toolCallId": "<call1>",
                "toolName": "transfer_to_agent",
                "input": {"agent_name": "billing"},
                "providerExecuted": True,
            },
            {
                "type": "tool-output-available",
                "toolCallId": "<call1>",
                "output": {"transferredTo": "billing"},
            },
            {"type": "finish-step"},
            {"type": "start-step"},
            *text_block("<block2>", "billing"),
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        history = await stored_history(app, chat.id)
        assert history[1] == reply.message


def booking_model() -> ScriptedLlm:
    def respond(contents: list[Any]) -> list[Any]:
        answers = [
            part.function_response.response
            for content in contents
            for part in content.parts or []
            if part.function_response is not None
        ]
        if not answers:
            ask = {"message": "Which city?", "response_schema": {"type": "string"}}
            return [Call("adk_request_input", ask)]
        return [Text(f"Answer: {json.dumps(answers[-1])}.")]

    return ScriptedLlm(responder=respond, id_factory=counter("call_"))


ASKED = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "adk_request_input"},
    {
        "type": "tool-input-available",
        "toolCallId": "<call1>",
        "toolName": "adk_request_input",
        "input": {"message": "Which city?", "response_schema": {"type": "string"}},
    },
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "tool-calls"},
]


async def test_the_request_input_tool_waits_for_the_users_answer() -> None:
    app = AdkApp(LlmAgent(name="booker", model=booking_model(), tools=[request_input]))
    async with live_chat(app) as chat:
        assert normalize_ids((await chat.send("book a trip")).chunks) == ASKED
        refused = await chat.tool_result("adk_request_input", 7)  # not a string
        assert refused is not None and (refused.status, refused.chunks) == (0, [])  # an error frame
        assert refused.error is not None and "does not fit its response_schema" in refused.error
        part = chat.messages[-1]["parts"][-1]
        part.update(state="input-available", output=None)
        del part["output"]
        went_on = await chat.tool_result("adk_request_input", "Paris")
        assert went_on is not None
        folded, text = squash(went_on.chunks)
        assert text == 'Answer: {"result": "Paris"}.'
        assert folded == [
            {"type": "start", "messageId": "<msg1>"},
            # (live mode shows each result as the tool pipeline returns it, the user's too)
            {"type": "tool-output-available", "toolCallId": "<call1>", "output": "Paris"},
            {"type": "start-step"},
            {"type": "text-start", "id": "<block1>"},
            {"type": "text-delta", "id": "<block1>", "delta": "~"},
            {"type": "text-end", "id": "<block1>"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        history = await stored_history(app, chat.id)
        assert history[1] == chat.messages[-1]


async def test_a_new_message_answers_the_models_question_as_unanswered() -> None:
    app = AdkApp(LlmAgent(name="booker", model=booking_model(), tools=[request_input]))
    async with live_chat(app) as chat:
        asked = (await chat.send("book a trip")).message
        assert asked is not None
        _, text = squash((await chat.send("never mind")).chunks)
        assert text == f"Answer: {json.dumps(INPUT_MOVED_ON)}."
        history = await stored_history(app, chat.id)
        assert history[1]["parts"][-1] == {
            **asked["parts"][-1],
            "state": "output-error",
            "errorText": INPUT_MOVED_ON["error"],
        }


async def test_a_parallel_agent_is_refused_live_with_the_reason() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # ADK deprecates ParallelAgent
        root = ParallelAgent(name="both", sub_agents=[transfer_tree()])
    await refused_live(root, "'both' is a tree with the ParallelAgent 'both'")


async def test_a_tree_with_a_task_agent_is_refused_live_with_the_reason() -> None:
    """ADK's ``run_live`` never runs a ``mode="task"`` sub-agent (its workflow dispatches one
    only in ``run_async``): the delegating call stayed open, and the page waited 10 s for words
    that never came. Served over SSE, the same tree runs the task agent."""
    helper = LlmAgent(name="helper", model=ScriptedLlm(turns=[]), mode="task", description="Helps.")
    lead = LlmAgent(name="lead", model=ScriptedLlm(turns=[]), sub_agents=[helper])
    await refused_live(lead, "'lead' is a tree with the task agent 'helper' (mode='task')")


async def refused_live(root: Any, what: str) -> None:
    """The handshake refuses ``root`` with a 400 that says ``what`` it is and where to go."""
    async with live_chat(AdkApp(root)) as chat:
        refused = await chat.send("hi")
    assert (refused.status, refused.chunks, refused.message, refused.error) == (
        400,
        [],
        None,
        f"{what}, which ADK cannot run live: use POST /chat, or give AdkApp a live_agent",
    )


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_single_turn_agents_words_are_a_step_of_their_own(transport: TransportName) -> None:
    """A ``mode="single_turn"`` sub-agent answers its call with a model call of its own. Live
    mode showed its words in the caller's step (the step only changed at a tool's result), so
    the same chat had one step fewer live than over SSE, and in history."""

    def lead(contents: list[types.Content]) -> list[Any]:
        answered = [p for p in contents[-1].parts or [] if p.function_response is not None]
        if answered:
            return [Text(f"The helper said {answered[0].function_response.response}.")]
        return [Call("helper", {"request": "do it"})]

    helper = LlmAgent(
        name="helper",
        model=ScriptedLlm(turns=[[Text("Done.")]], chunk_size=200),
        mode="single_turn",
        description="Helps.",
    )
    root = LlmAgent(
        name="lead", model=ScriptedLlm(responder=lead, chunk_size=200), sub_agents=[helper]
    )
    async with ChatClient(AdkApp(root), transport=transport, chat_id="chat-1") as page:
        answer = await page.send("go")
        assert await page.history() == page.messages
    said = "The helper said {'result': 'Done.'}."
    call = {"toolCallId": "<call1>", "toolName": "helper", "providerExecuted": True}
    assert (answer.error, normalize_ids(answer.chunks)) == (
        None,
        [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            {"type": "tool-input-start", **call, "providerMetadata": {"adk": {"author": "lead"}}},
            {"type": "tool-input-available", **call, "input": {"request": "do it"}},
            {"type": "finish-step"},
            *text_step("<block1>", "helper", "Done."),
            {"type": "tool-output-available", "toolCallId": "<call1>", "output": "Done."},
            {"type": "finish-step"},
            *text_step("<block2>", "lead", said),
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ],
    )


def text_step(block: str, author: str, text: str) -> list[dict[str, Any]]:
    """A step opened by ``author``'s words (its ``finish-step`` is the caller's to add)."""
    return [
        {"type": "start-step"},
        {"type": "text-start", "id": block, "providerMetadata": {"adk": {"author": author}}},
        {"type": "text-delta", "id": block, "delta": text},
        {"type": "text-end", "id": block},
    ]
