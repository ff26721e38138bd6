"""A server tool that raises: its call ran and failed — in the stream, in history, for the model.

ADK stores no result for a call whose tool raised (no ``on_tool_error_callback`` answered it)
and ends the run with the exception. The call's part ends in ``output-error`` with the error
the client is shown for the answer (``on_error``'s text), an approval on it kept; the same
error is stored as the call's result, so a reload shows the same message, the model reads on
the next turn that the call failed, and an approved call is never run again
(:mod:`adk_asgi.convert.failures`). Over SSE and over the live WebSocket, for a call the server
runs unasked and for one the user approved first.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

import pytest
from google.adk.agents import BaseAgent
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import Call, Text
from tests.asgi.test_one_derivation import (
    USER_METADATA,
    answer_all,
    as_json,
    client,
    get_outlook,
    history_of,
    streamed,
)
from tests.support import counter, scripted_agent

pytestmark = pytest.mark.asyncio

Mode = Literal["sse", "live"]
OUTLOOK = {"city": "Paris", "days": 1}
MASKED = {"errorText": "An error occurred."}


class Refunds:
    """An agent whose refund tool raises: it refunds "refund 5", and says sorry to anything
    else. Records each run of the tool and what the model read each time."""

    def __init__(self, *, asks: bool, with_outlook: bool = False) -> None:
        self.asks = asks
        self.with_outlook = with_outlook
        self.runs: list[int] = []
        self.read: list[list[types.Content]] = []

    def refund(self, amount: int) -> dict[str, Any]:
        """Refund an amount: the bank refuses it."""
        self.runs.append(amount)
        raise RuntimeError(f"the bank refused a refund of {amount}")

    def agent(self) -> BaseAgent:
        def respond(contents: list[types.Content]) -> list[Any]:
            self.read.append(copy.deepcopy(contents))
            if any(p.function_response for p in contents[-1].parts or []):
                return [Text("The refund failed.")]
            said = next(p.text for c in reversed(contents) for p in c.parts or [] if p.text)
            if said != "refund 5":
                return [Text("Sorry.")]
            outlook = [Call("get_outlook", OUTLOOK)] if self.with_outlook else []
            return [*outlook, Call("refund", {"amount": 5})]

        tool = FunctionTool(self.refund, require_confirmation=self.asks)
        return scripted_agent(responder=respond, tools=[get_outlook, tool], chunk_size=3)


def tool_part(call_id: str = "call_1", **fields: Any) -> dict[str, Any]:
    return {"type": "tool-refund", "toolCallId": call_id, "input": {"amount": 5}, **fields}


def failed_answer(message_id: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": message_id,
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            *parts,
            {"type": "data-error", "id": f"{message_id}-error", "data": MASKED},
        ],
    }


def results_of(contents: list[types.Content], call_id: str) -> list[Any]:
    return [
        p.function_response.response
        for c in contents
        for p in c.parts or []
        if p.function_response is not None and p.function_response.id == call_id
    ]


async def play_out(mode: Mode, refunds: Refunds) -> tuple[list[dict[str, Any]], AdkApp]:
    """ "refund 5" (approved, when the tool asks), then "thanks": the chat as the client
    built it before "thanks" (history shows the same, then and after "thanks"), and the app."""
    app = AdkApp(
        refunds.agent(),
        identify=lambda _: "alice",
        messages=Messages(message_id_factory=counter("msg")),
    )
    async with client(app, mode) as chat:  # (live: the socket closes after the failure, 1011,
        # and "thanks" goes over a new connection, as the stock transport reconnects)
        streamed(await chat.send("refund 5", metadata=USER_METADATA))
        await answer_all(chat, {"refund": [True]})
        before = copy.deepcopy(chat.messages)
        assert await history_of(app) == as_json(before)
        streamed(await chat.send("thanks", metadata=USER_METADATA))
        after = await history_of(app)
        # (Live, the new connection's model answers the stored history first, as Gemini Live
        # does when it ends with the user's turn, here the failed call's result: an answer
        # of its own, which the page reads only by a ``resume``.)
        assert after[:2] == as_json(before)
        if mode == "sse":
            assert after == as_json(chat.messages)
    return before, app


def user(message_id: str, text: str) -> dict[str, Any]:
    parts = [{"type": "text", "text": text}]
    return {"id": message_id, "role": "user", "parts": parts, "metadata": USER_METADATA}


@pytest.mark.parametrize("mode", ["sse", "live"])
async def test_a_server_tool_that_raises_ends_its_call_failed(mode: Mode) -> None:
    """The call ran and failed: ``output-error`` with the error the client is shown, not a
    call still running (``input-available``) that no result will ever end."""
    refunds = Refunds(asks=False)
    before, app = await play_out(mode, refunds)
    try:
        failed = tool_part(state="output-error", providerExecuted=True, **MASKED)
        assert before == [user("u1", "refund 5"), failed_answer("msg1", failed)]
        assert refunds.runs == [5]
        assert results_of(refunds.read[1], "call_1") == [{"error": "An error occurred."}]
    finally:
        await app.aclose()


@pytest.mark.parametrize("mode", ["sse", "live"])
async def test_a_tool_that_raises_next_to_one_that_returns(mode: Mode) -> None:
    """One call of the step returns, the other raises: the one shows its result, the other
    ends failed — in history too, and the model reads both on the next turn."""
    refunds = Refunds(asks=False, with_outlook=True)
    before, app = await play_out(mode, refunds)
    try:
        forecast = {"city": "Paris", "forecast": ["sunny"]}
        returned = {
            "type": "tool-get_outlook",
            "toolCallId": "call_1",
            "state": "output-available",
            "input": OUTLOOK,
            "output": forecast,
            "providerExecuted": True,
        }
        failed = tool_part("call_2", state="output-error", providerExecuted=True, **MASKED)
        assert before == [user("u1", "refund 5"), failed_answer("msg1", returned, failed)]
        assert refunds.runs == [5]
        assert results_of(refunds.read[1], "call_1") == [forecast]
        assert results_of(refunds.read[1], "call_2") == [{"error": "An error occurred."}]
    finally:
        await app.aclose()


@pytest.mark.parametrize("mode", ["sse", "live"])
async def test_an_approved_call_whose_tool_raises_ends_failed_and_never_runs_again(
    mode: Mode,
) -> None:
    """The user approved the call, then its tool raised: the part ends in ``output-error``,
    its approval kept (``approved: true``), as the AI SDK client keeps it — not left
    ``approval-responded`` by the stream and ``input-available`` by history. The next message
    runs the model, which reads the failure, and not the call again."""
    refunds = Refunds(asks=True)
    before, app = await play_out(mode, refunds)
    try:
        answer = before[1]
        approval = {"id": answer["parts"][1]["approval"]["id"], "approved": True}
        failed = tool_part(state="output-error", approval=approval, **MASKED)
        assert before == [user("u1", "refund 5"), failed_answer(answer["id"], failed)]
        assert refunds.runs == [5]
        assert results_of(refunds.read[1], "call_1") == [{"error": "An error occurred."}]
    finally:
        await app.aclose()


async def test_an_approval_sent_to_a_new_live_connection_whose_tool_raises() -> None:
    """The page left while the call waited for approval; the approval opens a new connection,
    whose ``run_live`` runs the confirmed tool as it starts (ADK's confirmation, stored by the
    first connection): it raises, and the part ends failed there too, in the stream and in
    history."""
    refunds = Refunds(asks=True)
    app = AdkApp(
        refunds.agent(),
        identify=lambda _: "alice",
        messages=Messages(message_id_factory=counter("msg")),
    )
    chat = client(app, "live")
    try:
        streamed(await chat.send("refund 5", metadata=USER_METADATA))
        waiting = chat.messages[1]["parts"][1]
        assert waiting["state"] == "approval-requested"
        await chat.disconnect()  # the page left
        await answer_all(chat, {"refund": [True]})
        approval = {"id": waiting["approval"]["id"], "approved": True}
        failed = tool_part(state="output-error", approval=approval, **MASKED)
        assert chat.messages == [user("u1", "refund 5"), failed_answer("msg1", failed)]
        assert await history_of(app) == as_json(chat.messages)
        assert refunds.runs == [5]
    finally:
        await chat.aclose()
        await app.aclose()
