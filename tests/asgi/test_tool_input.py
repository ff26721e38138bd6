"""A tool call's input as the page sees it: streamed arguments over the ASGI app, exact."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from adk_asgi import AdkApp, Messages
from adk_asgi.convert.ui_message import StreamingMessage
from adk_asgi.testing import Call, Fail, ScriptedLlm, Text, read_ui_message
from adk_asgi.testing.asgi_websocket import Socket, websocket
from tests.support import counter, parse_sse, scripted_agent, user_body

pytestmark = pytest.mark.asyncio

MID = "msg1"
T1, T2 = f"{MID}-txt1", f"{MID}-txt2"
BY_SERVER = {"providerExecuted": True}


def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Weather for a city."""
    return {"city": city, "forecast": ["sunny"] * days}


async def chat(app: AdkApp) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One message over SSE: the stream's chunks, and the chat's history after it."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        response = await http.post("/chat", json=user_body("weather in Paris"))
        assert response.status_code == 200, response.text
        history = await http.get("/chat/chat-1/messages")
    chunks = parse_sse(response.content)
    messages: list[dict[str, Any]] = history.json()
    return chunks, messages


def inputs_seen(chunks: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The tool part's state and input after each chunk that changed it, as the page
    renders them (the AI SDK's reducer, partial JSON parsed as it parses it)."""
    message = StreamingMessage.begin(None, "")
    seen: list[tuple[str, Any]] = []
    for chunk in chunks:
        message.apply(chunk)
        if chunk["type"].startswith("tool-input"):
            part = next(p for p in message.parts if p["type"].startswith("tool-"))
            seen.append((part["state"], part.get("input")))
    return seen


async def test_streamed_arguments_show_the_input_growing_then_the_call() -> None:
    turn = [Text("Checking."), Call("get_weather", {"city": "Paris", "days": 2}, stream_args=True)]
    agent = scripted_agent([turn, [Text("Sunny.")]], tools=[get_weather])
    chunks, history = await chat(
        AdkApp(agent, messages=Messages(message_id_factory=counter("msg")))
    )

    def delta(text: str) -> dict[str, Any]:
        return {"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": text}

    assert chunks == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Check"},
        {"type": "text-delta", "id": T1, "delta": "ing."},
        {"type": "text-end", "id": T1},
        {
            "type": "tool-input-start",
            "toolCallId": "call_1",
            "toolName": "get_weather",
            **BY_SERVER,
        },
        delta('{"city":"'),
        delta("Paris"),
        delta('","days":2'),
        delta("}"),
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "get_weather",
            "input": {"city": "Paris", "days": 2},
            **BY_SERVER,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": {"city": "Paris", "forecast": ["sunny", "sunny"]},
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": T2},
        {"type": "text-delta", "id": T2, "delta": "Sunny"},
        {"type": "text-delta", "id": T2, "delta": "."},
        {"type": "text-end", "id": T2},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert inputs_seen(chunks) == [
        ("input-streaming", None),
        ("input-streaming", {"city": ""}),
        ("input-streaming", {"city": "Paris"}),
        ("input-streaming", {"city": "Paris", "days": 2}),
        ("input-streaming", {"city": "Paris", "days": 2}),
        ("input-available", {"city": "Paris", "days": 2}),
    ]
    assert history[-1] == read_ui_message(chunks)  # (a final call has no deltas: the same part)


NO_TOOL = (
    "Invoking `get_wether()` failed as no tool with that name is available. The tools you can"
    " call are: get_weather. You could retry, but it is IMPORTANT that you only call a tool"
    " from that list."
)
NO_CITY = (
    "Invoking `get_weather()` failed as the following mandatory input parameters are not"
    " present:\ncity\nYou could retry calling this tool, but it is IMPORTANT for you to provide"
    " all the mandatory parameters."
)
CLUMSY = [Call("get_wether", {"city": "Paris"}), Call("get_weather", {"town": "Paris"})]
"""A call of a tool that does not exist, and a call without the tool's mandatory argument."""


async def live_answer(socket: Socket, text: str) -> list[dict[str, Any]]:
    """One message sent over a live connection as the stock transport sends it: the chunks
    of its answer."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    frame = {
        "type": "send",
        "requestId": "r1",
        "id": "chat-1",
        "trigger": "submit-message",
        "messageId": None,
        "messages": [message],
        "headers": {},
        "body": {},
        "metadata": None,
    }
    await socket.send_json(frame)
    chunks: list[dict[str, Any]] = []
    while (reply := await socket.receive_json())["type"] != "end":
        if reply["type"] == "chunk":
            chunks.append(reply["chunk"])
    return chunks


def refused_parts(message_id: str) -> dict[str, Any]:
    """The answer the page builds from ``tool-input-error`` (the AI SDK's reducer: the input
    only as ``rawInput``), and history shows."""
    return {
        "id": message_id,
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-get_wether",
                "toolCallId": "call_1",
                "state": "output-error",
                "rawInput": {"city": "Paris"},
                "errorText": NO_TOOL,
                **BY_SERVER,
            },
            {
                "type": "tool-get_weather",
                "toolCallId": "call_2",
                "state": "output-error",
                "rawInput": {"town": "Paris"},
                "errorText": NO_CITY,
                **BY_SERVER,
            },
            {"type": "step-start"},
            {"type": "text", "text": "Sorry.", "state": "done"},
        ],
    }


async def test_calls_adk_refuses_are_tool_input_errors_and_the_model_is_told_adks_words() -> None:
    model_agent = scripted_agent([CLUMSY, [Text("Sorry.")]], tools=[get_weather])
    chunks, history = await chat(
        AdkApp(model_agent, messages=Messages(message_id_factory=counter("msg")))
    )

    def start(call_id: str, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
        ids = {"toolCallId": call_id, "toolName": name}
        return [
            {"type": "tool-input-start", **ids, **BY_SERVER},
            {"type": "tool-input-available", **ids, "input": args, **BY_SERVER},
        ]

    assert chunks[:8] == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *start("call_1", "get_wether", {"city": "Paris"}),
        *start("call_2", "get_weather", {"town": "Paris"}),
        {
            "type": "tool-input-error",
            "toolCallId": "call_1",
            "toolName": "get_wether",
            "input": {"city": "Paris"},
            "errorText": NO_TOOL,
            **BY_SERVER,
        },
        {
            "type": "tool-input-error",
            "toolCallId": "call_2",
            "toolName": "get_weather",
            "input": {"town": "Paris"},
            "errorText": NO_CITY,
            **BY_SERVER,
        },
    ]
    assert chunks[8:11] == [
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
    ]
    assert read_ui_message(chunks) == refused_parts(MID)
    assert history[-1] == refused_parts(MID)
    model = model_agent.model
    assert isinstance(model, ScriptedLlm)
    told = model.requests[-1].contents[-1].parts or []
    assert [p.function_response.response for p in told if p.function_response] == [
        {"error": NO_TOOL},
        {"error": NO_CITY},
    ]


async def test_live_calls_adk_refuses_are_tool_input_errors_in_stream_and_history() -> None:
    """Live, a refused argument list is shown from the tool pipeline, before its event
    (:mod:`adk_asgi.live.tools`); the unknown name from its event (ADK runs no after-tool
    callback for it)."""
    app = AdkApp(
        scripted_agent([CLUMSY, [Text("Sorry.")]], tools=[get_weather]),
        identify=lambda _: "alice",
        messages=Messages(message_id_factory=counter("msg")),
    )
    try:
        async with websocket(app, "/live") as socket:
            chunks = await live_answer(socket, "weather in Paris")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            history = (await http.get("/chat/chat-1/messages")).json()
    finally:
        await app.aclose()
    errors = [c for c in chunks if c["type"] in ("tool-input-error", "tool-output-error")]
    assert errors == [
        {
            "type": "tool-input-error",
            "toolCallId": "call_2",
            "toolName": "get_weather",
            "input": {"town": "Paris"},
            "errorText": NO_CITY,
            **BY_SERVER,
        },
        {
            "type": "tool-input-error",
            "toolCallId": "call_1",
            "toolName": "get_wether",
            "input": {"city": "Paris"},
            "errorText": NO_TOOL,
            **BY_SERVER,
        },
    ]
    assert history[-1] == read_ui_message(chunks) == refused_parts(history[-1]["id"])


async def test_for_ai7_history_shows_a_refused_calls_input_as_its_input() -> None:
    """ai@7's reducer keeps a ``tool-input-error``'s input as the part's ``input`` (ai@6's as
    ``rawInput``): history shows what the configured client built."""
    agent = scripted_agent([CLUMSY, [Text("Sorry.")]], tools=[get_weather])
    app = AdkApp(agent, messages=Messages(message_id_factory=counter("msg")), ai_sdk_version=7)
    _, history = await chat(app)
    v7 = refused_parts(MID)
    for part in v7["parts"][1:3]:
        part["input"] = part.pop("rawInput")
    assert history[-1] == v7


async def test_an_answer_that_fails_while_a_call_streams_shows_the_call_cut_short() -> None:
    """The model fails while it streams a call's arguments: ADK stores nothing of the call,
    yet the page showed it; it ends as an error with the arguments so far, and history (the
    answer's record) shows the same part."""
    turn = [Text("Checking."), Call("get_weather", {"city": "Paris"}, stream_args=True), Fail()]
    agent = scripted_agent([turn], tools=[get_weather])
    chunks, history = await chat(
        AdkApp(agent, messages=Messages(message_id_factory=counter("msg")))
    )
    assert chunks[6:12] == [
        {
            "type": "tool-input-start",
            "toolCallId": "call_1",
            "toolName": "get_weather",
            **BY_SERVER,
        },
        {"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": '{"city":"'},
        {"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": "Paris"},
        {"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": '"'},
        {
            "type": "tool-input-error",
            "toolCallId": "call_1",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
            "errorText": "The answer ended before this call was complete.",
            **BY_SERVER,
        },
        {"type": "data-error", "id": f"{MID}-error", "data": {"errorText": "An error occurred."}},
    ]
    assert history[-1] == read_ui_message(chunks)
    assert history[-1]["parts"][2] == {
        "type": "tool-get_weather",
        "toolCallId": "call_1",
        "state": "output-error",
        "rawInput": {"city": "Paris"},
        "errorText": "The answer ended before this call was complete.",
        **BY_SERVER,
    }
