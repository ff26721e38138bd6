"""Agents other than one ``LlmAgent``, over SSE through the ASGI client: what streams, and that
a reload (history) shows what streamed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import Call, ChatClient, ScriptedLlm, Text, read_ui_message
from demo_app import build_team
from tests.support import counter, parse_sse, user_body


def joined(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chunks with each text part's deltas joined into one (the split is the model's)."""
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        last = out[-1] if out else {}
        if chunk["type"] == "text-delta" and last.get("type") == "text-delta":
            out[-1] = {**last, "delta": last["delta"] + chunk["delta"]}
        else:
            out.append(chunk)
    return out


def speaker(name: str, text: str) -> LlmAgent:
    """A sub-agent that streams ``text`` slowly enough to interleave with its siblings."""
    model = ScriptedLlm(turns=[[Text(text)]], chunk_size=4, delay=0.002)
    return LlmAgent(name=name, model=model)


async def stream_and_history(root: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    app = AdkApp(root, messages=Messages(message_id_factory=counter("msg")), identify=lambda c: "u")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.post("/chat", json=user_body("go"))
        history = (await client.get("/chat/chat-1/messages")).json()
    return parse_sse(response.content), history


def steps(chunks: list[dict[str, Any]]) -> list[list[str]]:
    """Each step's text parts, as the client builds them."""
    message = read_ui_message(chunks)
    result: list[list[str]] = []
    for part in message["parts"]:
        if part["type"] == "step-start":
            result.append([])
        elif part["type"] == "text":
            result[-1].append(part["text"])
    return result


def authors(chunks: list[dict[str, Any]]) -> list[str]:
    """Who wrote each text part, as its ``text-start`` says."""
    return [c["providerMetadata"]["adk"]["author"] for c in chunks if c["type"] == "text-start"]


@pytest.mark.filterwarnings("ignore:ParallelAgent is deprecated:DeprecationWarning")
async def test_a_parallel_agent_streams_each_answer_whole_as_history_shows_it() -> None:
    root = ParallelAgent(
        name="both",
        sub_agents=[speaker("a", "Alpha speaks here."), speaker("b", "Bravo answers too.")],
    )
    chunks, history = await stream_and_history(root)
    assert sorted(steps(chunks)) == [["Alpha speaks here."], ["Bravo answers too."]]
    assert sorted(authors(chunks)) == ["a", "b"]
    assert history[1] == read_ui_message(chunks)
    texts = [p for p in history[1]["parts"] if p["type"] == "text"]
    assert {p["text"]: p["providerMetadata"] for p in texts} == {
        "Alpha speaks here.": {"adk": {"author": "a"}},
        "Bravo answers too.": {"adk": {"author": "b"}},
    }


async def test_a_single_agent_names_no_speaker() -> None:
    chunks, history = await stream_and_history(speaker("solo", "Just me."))
    assert [c for c in chunks if c["type"] == "text-start"] == [
        {"type": "text-start", "id": "msg1-txt1"}
    ]
    assert "providerMetadata" not in history[1]["parts"][1]


@pytest.mark.filterwarnings("ignore:SequentialAgent is deprecated:DeprecationWarning")
async def test_a_sequential_agent_streams_one_step_per_sub_agent() -> None:
    root = SequentialAgent(
        name="one_then_other",
        sub_agents=[speaker("a", "First, this."), speaker("b", "Then that.")],
    )
    chunks, history = await stream_and_history(root)
    assert steps(chunks) == [["First, this."], ["Then that."]]
    assert authors(chunks) == ["a", "b"]
    assert history[1] == read_ui_message(chunks)


async def test_a_transfer_is_shown_as_a_handover_to_the_agent_that_answers() -> None:
    billing = LlmAgent(
        name="billing",
        description="Pays bills.",
        model=ScriptedLlm(turns=[[Text("Billing here.")]]),
    )
    front = ScriptedLlm(
        turns=[[Text("Passing you on."), Call("transfer_to_agent", {"agent_name": "billing"})]],
        id_factory=counter("call_"),
    )
    root = LlmAgent(name="front", model=front, sub_agents=[billing])
    chunks, history = await stream_and_history(root)
    front_speaks = {"adk": {"author": "front"}}
    assert joined(chunks) == [
        {"type": "start", "messageId": "msg1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "msg1-txt1", "providerMetadata": front_speaks},
        {"type": "text-delta", "id": "msg1-txt1", "delta": "Passing you on."},
        {"type": "text-end", "id": "msg1-txt1"},
        {
            "type": "tool-input-start",
            "toolCallId": "call_1",
            "toolName": "transfer_to_agent",
            "providerExecuted": True,
            "providerMetadata": front_speaks,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "transfer_to_agent",
            "input": {"agent_name": "billing"},
            "providerExecuted": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": {"transferredTo": "billing"},
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        {
            "type": "text-start",
            "id": "msg1-txt2",
            "providerMetadata": {"adk": {"author": "billing"}},
        },
        {"type": "text-delta", "id": "msg1-txt2", "delta": "Billing here."},
        {"type": "text-end", "id": "msg1-txt2"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert history[1] == read_ui_message(chunks)
    assert history[1]["parts"][2]["callProviderMetadata"] == front_speaks


@pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning")
async def test_an_agent_tool_is_a_tool_whose_result_is_the_agents_answer() -> None:
    """(AgentTool runs its agent on a Runner of its own, built the way ADK 2.13 deprecates.)"""
    expert = LlmAgent(
        name="expert",
        description="Knows capitals.",
        model=ScriptedLlm(turns=[[Text("Paris.")]]),
    )
    asker = ScriptedLlm(
        turns=[[Call("expert", {"request": "capital of France?"})], [Text("It is Paris.")]],
        id_factory=counter("call_"),
    )
    root = LlmAgent(name="asker", model=asker, tools=[AgentTool(expert)])
    chunks, history = await stream_and_history(root)
    assert joined(chunks) == [
        {"type": "start", "messageId": "msg1"},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": "call_1",
            "toolName": "expert",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "expert",
            "input": {"request": "capital of France?"},
            "providerExecuted": True,
        },
        {"type": "tool-output-available", "toolCallId": "call_1", "output": "Paris."},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "msg1-txt1"},
        {"type": "text-delta", "id": "msg1-txt1", "delta": "It is Paris."},
        {"type": "text-end", "id": "msg1-txt1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert history[1] == read_ui_message(chunks)


@pytest.mark.filterwarnings("ignore:LoopAgent is deprecated:DeprecationWarning")
async def test_a_loop_agent_streams_a_step_per_round_until_it_escalates() -> None:
    def finish(tool_context: ToolContext) -> dict[str, str]:
        """Stop the loop."""
        tool_context.actions.escalate = True
        return {"status": "done"}

    drafts = ScriptedLlm(
        turns=[
            [Text("Draft one.")],
            [Text("Draft two."), Call("finish", {})],
        ],
        id_factory=counter("call_"),
    )
    writer = LlmAgent(name="writer", model=drafts, tools=[finish])
    root = LoopAgent(name="rounds", sub_agents=[writer], max_iterations=5)
    chunks, history = await stream_and_history(root)
    assert steps(chunks) == [["Draft one."], ["Draft two."]]
    assert [c["output"] for c in chunks if c["type"] == "tool-output-available"] == [
        {"status": "done"}
    ]
    assert history[1] == read_ui_message(chunks)


async def test_the_demo_team_hands_a_trip_over_and_takes_the_user_back() -> None:
    """The demo's multi-agent example (``plan a trip to <city>``), as its page shows it."""
    app = AdkApp(
        build_team(), messages=Messages(message_id_factory=counter("msg")), identify=lambda c: "u"
    )
    said: list[list[tuple[str, str]]] = []
    async with ChatClient(app, chat_id="chat-1") as chat:
        messages = chat.messages
        for text in ["plan a trip to Rome", "weather in Paris"]:
            reply = await chat.send(text)
            assert reply.status == 200, reply.error
            said.append(
                [
                    (
                        (p.get("providerMetadata") or p.get("callProviderMetadata"))["adk"][
                            "author"
                        ],
                        p.get("text") or p["output"],
                    )
                    for p in messages[-1]["parts"]
                    if p["type"] != "step-start"
                ]
            )
        assert await chat.history() == messages
    assert said == [
        [
            ("demo_agent", "Our trip planner can help with that."),
            ("demo_agent", {"transferredTo": "trip_planner"}),
            (
                "trip_planner",
                "Rome in three days: the old town first, the museums next, then a day out of"
                " town. Ask me anything else and I will hand you back.",
            ),
        ],
        [
            ("trip_planner", {"transferredTo": "demo_agent"}),
            ("demo_agent", {"city": "Paris", "forecast": "windy", "temperature_c": 19}),
            (
                "demo_agent",
                'Here you go: get_weather: {"city": "Paris", "forecast": "windy",'
                ' "temperature_c": 19}.',
            ),
        ],
    ]


async def test_an_answer_ending_on_a_server_tools_output_says_the_server_ran_it() -> None:
    """A tool that skips the model's summary (``skip_summarization``) ends the answer on its
    output. Its call is announced as the server's (``providerExecuted``): the stock
    ``lastAssistantMessageIsCompleteWithToolCalls`` looks at the browser's calls only, so it
    does not send the finished answer again (a request answering nothing, in a loop)."""

    def lookup(city: str, tool_context: ToolContext) -> dict[str, str]:
        """Look a city up."""
        tool_context.actions.skip_summarization = True
        return {"city": city, "country": "France"}

    model = ScriptedLlm(turns=[[Call("lookup", {"city": "Lyon"})]], id_factory=counter("call_"))
    chunks, history = await stream_and_history(LlmAgent(name="a", model=model, tools=[lookup]))
    assert chunks == [
        {"type": "start", "messageId": "msg1"},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": "call_1",
            "toolName": "lookup",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "lookup",
            "input": {"city": "Lyon"},
            "providerExecuted": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": {"city": "Lyon", "country": "France"},
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert history[1] == read_ui_message(chunks)
    assert history[1]["parts"][-1]["providerExecuted"] is True
