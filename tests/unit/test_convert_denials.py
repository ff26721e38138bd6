"""A call the server's policy denied without asking the user (``adk_asgi.deny``), through the
converter, the wire gate and history alone: an ai@7 client is shown an automatic denial with its
reason (``output-denied``), an ai@6 (and ai@5) client the call's error with the reason, as it
was before (tests/e2e/test_example_page_clients.py drives the real clients)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from google.adk.events.event import Event
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from adk_asgi import client_tool, deny
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.history import rebuild_messages
from adk_asgi.hitl.denials import denial
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import ToolApprovalRequest, ToolOutputDenied, UIMessageChunk
from adk_asgi.wire.encoding import DENIED_AUTOMATICALLY, ChunkEncoder, SdkVersion, admit_messages
from tests.unit.test_convert import MID, STOP, call, model_event, response_event, text, wire

REASON = "Only admins can send payments"


def pay(amount: int) -> dict[str, Any]:
    """Pay."""
    return {"paid": amount}


@client_tool
def locate() -> dict[str, Any]:
    """Where the browser is."""
    return {}


POLICY = ToolPolicy([FunctionTool(pay), locate])


def denied_events(answer: dict[str, Any]) -> list[Event]:
    return [
        model_event("e1", call("c1", "pay", amount=5), finish_reason=STOP),
        response_event("e2", ("c1", "pay", answer)),
        model_event("e3", text("I cannot pay."), finish_reason=STOP),
    ]


def chunks_of(events: list[Event]) -> list[UIMessageChunk]:
    converter = EventConverter(message_id=MID, policy=POLICY)
    chunks = converter.start()
    for event in events:
        chunks += converter.feed(event)
    return chunks + converter.finish()


CALL = [
    {"type": "start", "messageId": MID},
    {"type": "start-step"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "pay", "providerExecuted": True},
    {
        "type": "tool-input-available",
        "toolCallId": "c1",
        "toolName": "pay",
        "input": {"amount": 5},
        "providerExecuted": True,
    },
]
ANSWER = [
    {"type": "finish-step"},
    {"type": "start-step"},
    {"type": "text-start", "id": f"{MID}-txt1"},
    {"type": "text-delta", "id": f"{MID}-txt1", "delta": "I cannot pay."},
    {"type": "text-end", "id": f"{MID}-txt1"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


def test_a_call_the_policy_denied_shows_an_automatic_denial_with_its_reason() -> None:
    """As the AI SDK's server sends a call its ``toolApproval`` denied: the request marked
    automatic, the denial with its reason, then ``tool-output-denied``."""
    assert wire(chunks_of(denied_events(deny(REASON)))) == [
        *CALL,
        {
            "type": "tool-approval-request",
            "approvalId": "approval-c1",
            "toolCallId": "c1",
            "isAutomatic": True,
        },
        {
            "type": "tool-approval-response",
            "approvalId": "approval-c1",
            "approved": False,
            "reason": REASON,
        },
        {"type": "tool-output-denied", "toolCallId": "c1"},
        *ANSWER,
    ]


@pytest.mark.parametrize(
    ("version", "reason", "error_text"),
    [(6, REASON, REASON), (5, REASON, REASON), (6, None, DENIED_AUTOMATICALLY)],
)
def test_an_older_client_is_sent_the_denial_as_the_calls_error(
    version: SdkVersion, reason: str | None, error_text: str
) -> None:
    """ai@6 has no approval the user did not give (no ``isAutomatic``, no
    ``tool-approval-response``): the call's error, with the reason, as before."""
    encoder = ChunkEncoder(version)
    admitted = [a for a in (encoder.admit(c) for c in chunks_of(denied_events(deny(reason)))) if a]
    assert wire(admitted) == [
        *CALL,
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": error_text},
        *ANSWER,
    ]


def test_the_gate_turns_only_an_automatic_denial_into_an_error() -> None:
    """A denial the user gave stays ``output-denied`` for ai@6, whose schema has it."""
    asked = [
        ToolApprovalRequest(approval_id="a1", tool_call_id="c1"),
        ToolOutputDenied(tool_call_id="c1"),
    ]
    encoder = ChunkEncoder(6)
    assert [encoder.admit(c) for c in asked] == asked


def history(events: list[Event], *, v7: bool) -> list[dict[str, Any]]:
    user = Event(
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="pay 5")]),
    )
    messages = rebuild_messages([user, *events], POLICY, v7=v7)
    return msgspec.to_builtins(admit_messages(messages, v7=v7))[1]["parts"]  # type: ignore[no-any-return]


PART = {"type": "tool-pay", "toolCallId": "c1", "input": {"amount": 5}, "providerExecuted": True}
SAID = {"type": "text", "text": "I cannot pay.", "state": "done"}


def test_history_shows_the_denial_as_each_client_was_shown_it() -> None:
    approval = {"id": "approval-c1", "approved": False, "reason": REASON, "isAutomatic": True}
    denied = PART | {"state": "output-denied", "approval": approval}
    assert history(denied_events(deny(REASON)), v7=True) == [
        {"type": "step-start"},
        denied,
        {"type": "step-start"},
        SAID,
    ]
    failed = PART | {"state": "output-error", "errorText": REASON}
    assert history(denied_events(deny(REASON)), v7=False) == [
        {"type": "step-start"},
        failed,
        {"type": "step-start"},
        SAID,
    ]


def test_a_browsers_answer_in_the_same_words_is_its_own_output() -> None:
    """What the page sent for its own tool is never the server's denial."""
    events = [
        model_event("e1", call("c1", "locate"), finish_reason=STOP),
        response_event("e2", ("c1", "locate", deny(REASON))),
    ]
    shown = wire(chunks_of(events))
    assert [c for c in shown if c["type"].startswith("tool-o")] == [
        {"type": "tool-output-available", "toolCallId": "c1", "output": deny(REASON)}
    ]


def test_deny_is_the_ai_sdks_words_for_a_denied_execution() -> None:
    assert deny(REASON) == {"type": "execution-denied", "reason": REASON}
    assert deny() == {"type": "execution-denied"}
    assert (denial(deny(REASON)), denial(deny())) == ((REASON,), (None,))
    for other in ({"type": "execution-denied", "reason": 1}, {"type": "x"}, "no", None):
        assert denial(other) is None
    assert denial({"type": "execution-denied", "reason": "r", "more": 1}) is None
    with pytest.raises(TypeError):
        deny(1)  # type: ignore[arg-type]
