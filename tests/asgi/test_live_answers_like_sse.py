"""The live socket takes the page's answers as SSE takes them: a browser tool's result that
JSON reads as false (``{}``, ``[]``, ``0``, ``""``, ``false``) is a result like any other, and
a denial's reason stays in history; a server tool's result reaches the model as over SSE. Each
chat is played over both transports with :class:`~adk_asgi.testing.ChatClient`; the messages and
history are compared whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import Call, ChatClient, ChatResponse, Text, TransportName
from tests.asgi.test_poisoned_chat import get_forecast
from tests.asgi.test_testing_client import closing, demo_app, user
from tests.asgi.test_testing_client_live import chat_one, echoed, played, played_on
from tests.streams import PAID_ALICE_SAID, PAY_ALICE, SENT_ALICE
from tests.support import counter, scripted_agent

FALSY = [{}, [], 0, "", False]
"""Results the stock client sends as they are (``addToolOutput({output})``, JSON-encoded)."""


def as_stored(output: Any) -> str:
    """How the demo model reads the result back: ADK's function response, an object."""
    return json.dumps(output if isinstance(output, dict) else {"result": output})


def tool_then_text(asked: str, tool_part: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """The chat of one question answered in two steps: the tool's part, then the model's
    closing ``text``."""
    return [
        user(asked),
        {
            "id": "msg1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                tool_part,
                {"type": "step-start"},
                {"type": "text", "text": text, "state": "done"},
            ],
        },
    ]


def bgm_chat(output: Any) -> list[dict[str, Any]]:
    part = {
        "type": "tool-change_bgm",
        "toolCallId": "call_1",
        "state": "output-available",
        "input": {"track": 3},
        "output": output,
    }
    return tool_then_text("play track 3", part, f"Here you go: change_bgm: {as_stored(output)}.")


@pytest.mark.parametrize("output", FALSY, ids=json.dumps)
async def test_a_browser_tools_falsy_result_is_answered_over_both_transports(
    output: Any,
) -> None:
    """Live took ``{}`` for no result (ADK builds no response for a long-running tool whose
    result is false): nothing was sent and the request hung."""
    await answered_like_sse(output)


async def answered_like_sse(output: Any) -> None:
    """``change_bgm`` answered with ``output``: the same answer and messages over SSE and live
    (live echoes the result first), and history the same as the messages."""

    async def play(chat: ChatClient) -> list[ChatResponse | None]:
        return [await chat.send("play track 3"), await chat.tool_result("change_bgm", output)]

    sse_chunks, sse = await played("sse", play)
    live_chunks, live = await played("live", play)
    assert sse_chunks[1] == [
        {"type": "start", "messageId": "msg1"},
        *closing(f"Here you go: change_bgm: {as_stored(output)}."),
        {"type": "finish", "finishReason": "stop"},
    ]
    sse_chunks[1].insert(1, echoed("call_1", output))
    assert live_chunks == sse_chunks
    assert live == sse
    assert sse[1] == bgm_chat(output)  # (played checks history is these messages)


async def test_an_approved_browser_tools_empty_result_is_answered_over_both_transports() -> None:
    """``get_location`` asks for approval, then the browser answers ``{}``."""

    async def play(chat: ChatClient) -> list[ChatResponse | None]:
        asked = await chat.send("where am i")
        return [
            asked,
            await chat.approve("get_location"),
            await chat.tool_result("get_location", {}),
        ]

    sse_chunks, sse = await played("sse", play)
    live_chunks, live = await played("live", play)
    assert sse_chunks[2] == [
        {"type": "start", "messageId": "msg1"},
        *closing("Here you go: get_location: {}."),
        {"type": "finish", "finishReason": "stop"},
    ]
    sse_chunks[2].insert(1, echoed("call_1", {}))
    assert live_chunks == sse_chunks
    assert live == sse
    assert sse[1] == [
        user("where am i"),
        {
            "id": "msg1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {
                    "type": "tool-get_location",
                    "toolCallId": "call_1",
                    "state": "output-available",
                    "input": {},
                    "approval": {"id": "approval-1", "approved": True},
                    "output": {},
                },
                {"type": "step-start"},
                {"type": "text", "text": "Here you go: get_location: {}.", "state": "done"},
            ],
        },
    ]


def payment_chat(approved: bool, text: str) -> list[dict[str, Any]]:
    settled: dict[str, Any] = (
        {"state": "output-available", "output": SENT_ALICE}
        if approved
        else {"state": "output-denied"}
    )
    part = {
        "type": "tool-process_payment",
        "toolCallId": "call_1",
        "input": PAY_ALICE,
        **settled,
        "approval": {"id": "approval-1", "approved": approved, "reason": "not today"},
    }
    return tool_then_text("pay 5 to alice", part, text)


@pytest.mark.parametrize(
    ("approved", "text"),
    [(False, "Here you go: process_payment was denied."), (True, PAID_ALICE_SAID)],
    ids=["denied", "approved"],
)
async def test_an_approvals_reason_stays_in_history_over_both_transports(
    approved: bool, text: str
) -> None:
    """Live recorded the decision on a server tool's confirmation without the user's reason
    (SSE stores it as the confirmation's payload): the stream showed it, history did not."""

    async def play(chat: ChatClient) -> list[ChatResponse | None]:
        asked = await chat.send("pay 5 to alice")
        return [asked, await chat.approve("process_payment", approved, reason="not today")]

    sse_chunks, sse = await played("sse", play)
    live_chunks, live = await played("live", play)
    assert live_chunks == sse_chunks
    assert live == sse
    assert sse[1] == payment_chat(approved, text)  # (played checks history is these messages)


def location_chat(approved: bool, text: str) -> list[dict[str, Any]]:
    settled: dict[str, Any] = (
        {"state": "output-available", "input": {}, "output": {"city": "Paris"}}
        if approved
        else {"state": "output-denied", "input": {}, "rawInput": "{}"}
    )
    part = {
        "type": "tool-get_location",
        "toolCallId": "call_1",
        **settled,
        "approval": {"id": "approval-1", "approved": approved, "reason": "not today"},
    }
    return tool_then_text("where am i", part, text)


@pytest.mark.parametrize(
    ("approved", "text"),
    [
        (False, "Here you go: get_location was denied."),
        (True, 'Here you go: get_location: {"city": "Paris"}.'),
    ],
    ids=["denied", "approved"],
)
async def test_a_browser_tools_approval_reason_stays_in_history_over_both_transports(
    approved: bool, text: str
) -> None:
    """A browser tool's decision was stored without the user's reason (ADK records no
    confirmation for it: an approval is the bridge's marker, a denial ADK's rejection): the
    stream showed it, history did not."""

    async def play(chat: ChatClient) -> list[ChatResponse | None]:
        asked = await chat.send("where am i")
        decided = await chat.approve("get_location", approved, reason="not today")
        if not approved:
            return [asked, decided]
        return [asked, decided, await chat.tool_result("get_location", {"city": "Paris"})]

    sse_chunks, sse = await played("sse", play)
    live_chunks, live = await played("live", play)
    if approved:
        sse_chunks[2].insert(1, echoed("call_1", {"city": "Paris"}))
    assert live_chunks == sse_chunks
    assert live == sse
    assert sse[1] == location_chat(approved, text)  # (played checks history is these messages)


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_browser_tools_approval_reason_sent_with_its_result_stays_in_history(
    transport: TransportName,
) -> None:
    """The approval and the browser's result in one request (a client that does not send on
    the approval alone): the reason went with neither ADK's record of the result nor the
    bridge's."""
    chat = ChatClient(demo_app(), transport=transport, send_automatically_when=None, **chat_one())
    async with chat:
        await chat.send("where am i")
        await chat.approve("get_location", reason="not today")
        await chat.tool_result("get_location", {"city": "Paris"})
        await chat.submit()
        history = await chat.history()
    expected = location_chat(True, 'Here you go: get_location: {"city": "Paris"}.')
    expected[1]["parts"][1]["approval"]["id"] = "approval-call_1"
    assert history == expected


async def test_a_browser_tools_null_result_keeps_its_output_in_history_over_both_transports() -> (
    None
):
    """``addToolOutput({output: null})``: history's part lost its ``output`` key (the part's
    struct dropped a ``None`` output as a default), so a reload showed a part with no output."""
    await answered_like_sse(None)


def forecast_app() -> AdkApp:
    """A server tool that returns a pydantic model, and a model that says what it was sent."""
    return reading_back(Call("get_forecast", {"city": "Paris"}), get_forecast)


def reading_back(call: Call, tool: Any) -> AdkApp:
    """An app whose model makes ``call``, then says the response it was sent (as JSON)."""

    def respond(contents: list[types.Content]) -> list[Any]:
        for part in contents[-1].parts or []:
            if part.function_response is not None:
                return [Text(f"I read {json.dumps(part.function_response.response)}.")]
        return [call]

    agent = scripted_agent(responder=respond, tools=[tool], chunk_size=200)
    return AdkApp(agent, messages=Messages(message_id_factory=counter("msg")))


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_server_tools_pydantic_result_reaches_the_model_as_adk_wraps_it(
    transport: TransportName,
) -> None:
    """ADK sends a tool's value that is not an object as ``{"result": value}``, a pydantic
    model included. Live mode made the model's JSON an object first, so the model (and the page)
    got ``{"city": ...}`` there and ``{"result": {"city": ...}}`` over SSE."""
    forecast = {"result": {"city": "Paris", "sky": "clear"}}

    async def play(chat: ChatClient) -> list[ChatResponse | None]:
        return [await chat.send("forecast for Paris")]

    chunks, _ = await played_on(ChatClient(forecast_app(), transport=transport, **chat_one()), play)
    call = {"toolCallId": "call_1", "toolName": "get_forecast"}
    assert chunks == [
        [
            {"type": "start", "messageId": "msg1"},
            {"type": "start-step"},
            {"type": "tool-input-start", **call, "providerExecuted": True},
            {
                "type": "tool-input-available",
                **call,
                "input": {"city": "Paris"},
                "providerExecuted": True,
            },
            {
                "type": "tool-output-available",
                "toolCallId": "call_1",
                "output": forecast,
            },
            {"type": "finish-step"},
            *closing(f"I read {json.dumps(forecast)}."),
            {"type": "finish", "finishReason": "stop"},
        ]
    ]


def asking_payment(returns: Any) -> AdkApp:
    """A long-running payment that asks for its own approval
    (``tool_context.request_confirmation``), then returns ``returns`` once approved."""

    def pay(amount: int, tool_context: ToolContext) -> Any:
        """Pay ``amount``."""
        if tool_context.tool_confirmation is None:
            tool_context.request_confirmation(hint="Pay?")
            return {"status": "asked"}
        return returns

    return reading_back(Call("pay", {"amount": 5}), LongRunningFunctionTool(pay))


@pytest.mark.parametrize("returns", ["paid", None, {}, ""], ids=json.dumps)
async def test_a_tool_approved_after_asking_itself_returns_as_over_sse(returns: Any) -> None:
    """Live mode called the tool again after the user's approval and wrapped what it returned
    first: the page was shown ``{"result": "paid"}`` where SSE shows ``"paid"``, and a
    long-running tool's ``None`` (no answer yet, for the app to give) answered the call."""
    histories = []
    for transport in ("sse", "live"):
        async with ChatClient(asking_payment(returns), transport=transport, **chat_one()) as chat:
            await chat.send("pay 5")
            await chat.approve("pay")
            histories.append(await chat.history())
    sse, live = (
        [{**m, "parts": [no_approval_id(p) for p in m["parts"]]} for m in h] for h in histories
    )
    asked = {
        "type": "tool-pay",
        "toolCallId": "call_1",
        "input": {"amount": 5},
        "approval": {"id": "<approval>", "approved": True, "descriptor": {"hint": "Pay?"}},
        "providerExecuted": True,
    }
    if returns:
        parts = [
            {"type": "step-start"},
            {**asked, "state": "output-available", "output": returns},
            {"type": "step-start"},
            {"type": "text", "text": f"I read {as_stored(returns)}.", "state": "done"},
        ]
    else:  # (left open for the app's answer_call)
        parts = [{"type": "step-start"}, {**asked, "state": "approval-responded"}]
    assert sse == [user("pay 5"), {"id": "msg1", "role": "assistant", "parts": parts}]
    assert live == sse


def no_approval_id(part: dict[str, Any]) -> dict[str, Any]:
    """ADK makes approval ids over SSE (random), the bridge live: the same placeholder."""
    if "approval" not in part:
        return part
    return {**part, "approval": {**part["approval"], "id": "<approval>"}}
