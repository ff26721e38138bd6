"""Session truth, continuations and history, alone: events in, decisions out."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.history import rebuild_messages
from adk_asgi.hitl.continuation import Conflict, continuation
from adk_asgi.hitl.pending import REJECTED, approved_marker, chat_state
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.hitl.tools import client_tool
from adk_asgi.wire.messages import Approval, TextPart, ToolPart, UIMessage
from tests.unit.test_convert import wire

TAG = {"adk_asgi": {"messageId": "m1"}}


def call_event(
    *calls: tuple[str, str, dict[str, Any]], long_running: set[str] | None = None
) -> Event:
    return Event(
        invocation_id="inv",
        author="agent",
        custom_metadata=TAG,
        long_running_tool_ids=long_running,
        content=types.Content(
            role="model",
            parts=[
                types.Part(function_call=types.FunctionCall(id=i, name=n, args=a))
                for i, n, a in calls
            ],
        ),
    )


def response_event(call_id: str, name: str, response: dict[str, Any], **fields: Any) -> Event:
    return Event(
        invocation_id="inv",
        author=fields.pop("author", "agent"),
        custom_metadata=TAG,
        content=types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call_id, name=name, response=response
                    )
                )
            ],
        ),
        **fields,
    )


def confirmation(approval_id: str, call_id: str, name: str, args: dict[str, Any]) -> list[Event]:
    request = {
        "originalFunctionCall": {"id": call_id, "name": name, "args": args},
        "toolConfirmation": {"hint": "ok?", "confirmed": False},
    }
    placeholder = response_event(
        call_id,
        name,
        {"error": "This tool call requires confirmation, please approve or reject."},
        actions=EventActions(requested_tool_confirmations={call_id: ToolConfirmation(hint="ok?")}),
    )
    return [
        call_event((approval_id, "adk_request_confirmation", request), long_running={approval_id}),
        placeholder,
    ]


PAY = {"amount": 5}
SESSION = [
    Event(
        invocation_id="inv",
        author="user",
        custom_metadata={"adk_asgi": {"messageId": "m1", "userMessageId": "u1"}},
        content=types.Content(role="user", parts=[types.Part(text="pay and locate")]),
    ),
    call_event(("c1", "pay", PAY), ("c2", "get_location", {}), long_running={"c2"}),
    *confirmation("a1", "c1", "pay", PAY),
]


@client_tool(require_approval=True)
def get_location() -> None:
    """The browser's location, once the user approved."""


POLICY = ToolPolicy([get_location])
"""``get_location`` needs the user's approval before the browser runs it."""


BY_SERVER = {"providerExecuted": True}
"""How a call the server runs with nothing asked of the page is announced (ToolPolicy)."""


def tool(name: str, call_id: str, state: str, **fields: Any) -> ToolPart:
    return ToolPart(type=f"tool-{name}", tool_call_id=call_id, state=state, **fields)  # type: ignore[arg-type]


def assistant(*parts: ToolPart, message_id: str = "m1") -> UIMessage:
    return UIMessage(id=message_id, role="assistant", parts=list(parts))


def test_chat_state_reads_open_calls_and_confirmations() -> None:
    state = chat_state(SESSION)
    assert set(state.calls) == {"c1", "c2"}
    assert state.results == {}  # the confirmation placeholder is not a result
    assert list(state.open_confirmations) == ["a1"]
    assert state.open_confirmations["a1"].call_id == "c1"
    assert state.open_client_call("c2") is not None and state.open_client_call("c1") is None


def test_approving_both_answers_adk_and_releases_the_client_call() -> None:
    message = assistant(
        tool(
            "pay", "c1", "approval-responded", input=PAY, approval=Approval(id="a1", approved=True)
        ),
        tool(
            "get_location",
            "c2",
            "approval-responded",
            approval=Approval(id="approval-c2", approved=True),
        ),
    )
    result = continuation(message, chat_state(SESSION, POLICY))
    assert result.responses == [
        types.Part(
            function_response=types.FunctionResponse(
                id="a1", name="adk_request_confirmation", response={"confirmed": True}
            )
        )
    ]
    assert [c.id for c in result.released] == ["c2"] and result.denied == []
    assert result.known_calls == {"c1", "c2"}


def test_denials_answer_with_adks_rejection_and_a_reason_becomes_the_payload() -> None:
    message = assistant(
        tool(
            "pay",
            "c1",
            "approval-responded",
            approval=Approval(id="a1", approved=False, reason="too much"),
        ),
        tool(
            "get_location",
            "c2",
            "approval-responded",
            approval=Approval(id="approval-c2", approved=False),
        ),
    )
    result = continuation(message, chat_state(SESSION, POLICY))
    responses = [(p.function_response.id, p.function_response.response) for p in result.responses]  # type: ignore[union-attr]
    assert responses == [
        ("a1", {"confirmed": False, "payload": {"reason": "too much"}}),
        ("c2", REJECTED),
    ]
    assert result.denied == ["c1", "c2"]


def test_a_denial_next_to_a_released_browser_call_is_shown_with_the_browsers_result() -> None:
    denied = tool("pay", "c1", "approval-responded", approval=Approval(id="a1", approved=False))
    approved = Approval(id="approval-c2", approved=True)
    first = continuation(
        assistant(denied, tool("get_location", "c2", "approval-responded", approval=approved)),
        chat_state(SESSION, POLICY),
    )
    assert (first.denied, [c.id for c in first.released], first.redenied) == (["c1"], ["c2"], [])
    assert first.shown_denials(browser_runs=True) == []  # the browser runs c2: not yet
    assert first.shown_denials(browser_runs=False) == ["c1"]
    # the next request re-sends the denial, still approval-responded, with the browser's result
    decided = [
        *SESSION,
        response_event("a1", "adk_request_confirmation", {"confirmed": False}, author="user"),
        response_event("c1", "pay", {"error": "This tool call is rejected."}),
        approved_marker(chat_state(SESSION).calls["c2"], "agent"),
    ]
    result = tool("get_location", "c2", "output-available", output={"lat": 1}, approval=approved)
    second = continuation(assistant(denied, result), chat_state(decided, POLICY))
    assert (second.denied, second.redenied) == ([], ["c1"])
    assert second.shown_denials(browser_runs=False) == ["c1"]
    assert [p.function_response.id for p in second.responses] == ["c2"]  # type: ignore[union-attr]
    # a re-sent denial alone answers nothing
    with pytest.raises(Conflict, match="answers no open tool call"):
        continuation(assistant(denied), chat_state(decided, POLICY))


def test_an_explicit_payload_goes_to_the_confirmation() -> None:
    message = assistant(
        tool("pay", "c1", "approval-responded", approval=Approval(id="a1", approved=True))
    )
    result = continuation(message, chat_state(SESSION, POLICY), {"a1": {"seat": "14C"}})
    assert result.responses[0].function_response.response == {  # type: ignore[union-attr]
        "confirmed": True,
        "payload": {"seat": "14C"},
    }


def test_client_result_in_the_same_request_as_its_approval() -> None:
    message = assistant(
        tool(
            "get_location",
            "c2",
            "output-available",
            output={"lat": 1},
            approval=Approval(id="approval-c2", approved=True),
        ),
    )
    result = continuation(message, chat_state(SESSION, POLICY))
    assert result.responses[0].function_response == types.FunctionResponse(
        id="c2", name="get_location", response={"lat": 1}
    )


@client_tool
def bgm() -> None:
    """Change the music, in the browser."""


def test_client_error_and_non_object_outputs() -> None:
    """A page's answer that is not an object goes to ADK as ``{"result": answer}``, and so
    does an object of that same shape, so that what is shown of the stored response
    (``result``) is always what the page sent; any other object goes as it is."""
    calls = [("b1", "bgm", {}), ("b2", "bgm", {}), ("b3", "bgm", {}), ("b4", "bgm", {})]
    events = [call_event(*calls, long_running={"b1", "b2", "b3", "b4"})]
    message = assistant(
        tool("bgm", "b1", "output-error", error_text="no audio"),
        tool("bgm", "b2", "output-available", output=[1, 2]),
        tool("bgm", "b3", "output-available", output={"result": 3}),
        tool("bgm", "b4", "output-available", output={"result": 3, "track": 2}),
    )
    result = continuation(message, chat_state(events, ToolPolicy([get_location, bgm])))
    assert [p.function_response.response for p in result.responses] == [  # type: ignore[union-attr]
        {"error": "no audio"},
        {"result": [1, 2]},
        {"result": {"result": 3}},
        {"result": 3, "track": 2},
    ]


@pytest.mark.parametrize(
    ("part", "reason"),
    [
        (
            tool("pay", "c1", "approval-responded", approval=Approval(id="forged", approved=True)),
            "approval 'forged' is not open in this chat",
        ),
        (
            tool("pay", "c9", "approval-responded", approval=Approval(id="a1", approved=True)),
            "tool call 'c9' is not part of this chat",
        ),
        (
            tool(
                "get_location",
                "c2",
                "approval-responded",
                approval=Approval(id="a1", approved=True),
            ),
            "approval 'a1' is not for tool call 'c2'",
        ),
        (
            tool("get_location", "c2", "output-available", output={"lat": 1}),
            "tool call 'c2' needs the user's approval before its result",
        ),
        (
            tool("pay", "c1", "approval-responded", approval=Approval(id="a1")),
            "tool call 'c1' is approval-responded without a decision",
        ),
        (
            tool("pay", "c1", "input-available"),
            "this request answers no open tool call of the chat",
        ),
    ],
)
def test_conflicts(part: ToolPart, reason: str) -> None:
    with pytest.raises(Conflict) as info:
        continuation(assistant(part), chat_state(SESSION, POLICY))
    assert str(info.value) == reason


def test_answered_calls_are_history_and_replays_conflict() -> None:
    answered = [
        *SESSION,
        response_event("a1", "adk_request_confirmation", {"confirmed": True}, author="user"),
        response_event("c1", "pay", {"paid": 5}),
        approved_marker(chat_state(SESSION).calls["c2"], "agent"),
    ]
    state = chat_state(answered, POLICY)
    assert state.results == {"c1": {"paid": 5}} and state.approved_client_calls == {"c2"}
    replay = assistant(
        tool("pay", "c1", "approval-responded", approval=Approval(id="a1", approved=True))
    )
    with pytest.raises(Conflict, match="approval 'a1' is not open in this chat"):
        continuation(replay, state)
    again = assistant(
        tool(
            "get_location",
            "c2",
            "approval-responded",
            approval=Approval(id="approval-c2", approved=True),
        )
    )
    with pytest.raises(Conflict, match="approval 'approval-c2' was already answered"):
        continuation(again, state)
    # the settled payment is history; the location result is what this request answers
    later = assistant(
        tool("pay", "c1", "output-available", output={"paid": 5}),
        tool("get_location", "c2", "output-available", output={"lat": 1}),
    )
    result = continuation(later, state)
    assert [p.function_response.id for p in result.responses] == ["c2"]  # type: ignore[union-attr]


def test_a_call_of_another_message_conflicts() -> None:
    message = assistant(
        tool("pay", "c1", "approval-responded", approval=Approval(id="a1", approved=True)),
        message_id="m2",
    )
    with pytest.raises(Conflict, match="tool call 'c1' does not belong to message 'm2'"):
        continuation(message, chat_state(SESSION, POLICY))


def test_converter_announces_client_approval_without_input_available() -> None:
    converter = EventConverter(message_id="m1", policy=POLICY)
    chunks = converter.start() + converter.feed(SESSION[1]) + converter.finish()
    assert wire(chunks) == [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        # (pay asks through ADK itself, which the policy cannot tell: shown as the server's)
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "pay", **BY_SERVER},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "pay",
            "input": PAY,
            **BY_SERVER,
        },
        {"type": "tool-input-start", "toolCallId": "c2", "toolName": "get_location"},
        {"type": "tool-input-delta", "toolCallId": "c2", "inputTextDelta": "{}"},
        {"type": "tool-approval-request", "approvalId": "approval-c2", "toolCallId": "c2"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]


def test_converter_continuation_denies_releases_and_skips_adks_rejection() -> None:
    converter = EventConverter(message_id="m1", known_calls={"c1", "c2"})
    chunks = (
        converter.start()
        + converter.cards.deny("c1")
        + converter.cards.release("c2", "get_location", {})
    )
    chunks += converter.feed(response_event("c1", "pay", REJECTED))
    chunks += converter.cards.deny("unknown") + converter.finish()
    assert wire(chunks) == [
        {"type": "start", "messageId": "m1"},
        {"type": "tool-output-denied", "toolCallId": "c1"},
        {
            "type": "tool-input-available",
            "toolCallId": "c2",
            "toolName": "get_location",
            "input": {},
        },
        {"type": "finish", "finishReason": "tool-calls"},
    ]


def test_history_shows_true_states() -> None:
    messages = rebuild_messages(SESSION, POLICY)
    assert [m.id for m in messages] == ["u1", "m1"]
    assert messages[0].parts == [TextPart(text="pay and locate")]
    assert [p for p in messages[1].parts if isinstance(p, ToolPart)] == [
        tool(
            "pay",
            "c1",
            "approval-requested",
            input=PAY,
            approval=Approval(id="a1", descriptor={"hint": "ok?"}),  # as the stream asked it
            provider_executed=True,
        ),
        tool(
            "get_location",
            "c2",
            "approval-requested",
            input={},
            raw_input="{}",  # as the client keeps the input the stream sent as text
            approval=Approval(id="approval-c2"),
        ),
    ]
    denied = [
        *SESSION,
        response_event("a1", "adk_request_confirmation", {"confirmed": False}, author="user"),
        response_event("c1", "pay", REJECTED),
        response_event("c2", "get_location", {"lat": 1}, author="user"),
    ]
    parts = [p for p in rebuild_messages(denied, POLICY)[1].parts if isinstance(p, ToolPart)]
    assert parts == [
        tool(
            "pay",
            "c1",
            "output-denied",
            input=PAY,
            approval=Approval(id="a1", approved=False, descriptor={"hint": "ok?"}),
            provider_executed=True,
        ),
        tool(
            "get_location",
            "c2",
            "output-available",
            input={},
            output={"lat": 1},
            approval=Approval(id="approval-c2", approved=True),
        ),
    ]


def test_a_browser_result_for_a_call_the_server_answers_is_a_conflict() -> None:
    """A long-running call of a server tool (a back office's approval) is not the browser's
    to answer: a result for it would be a forged one (docs/hitl.md#tools-the-server-answers)."""
    events = [call_event(("r1", "request_refund", {"order": "A7"}), long_running={"r1"})]
    state = chat_state(events, POLICY)
    assert state.server_answered == {"r1"}
    assert state.waiting() == []
    forged = assistant(tool("request_refund", "r1", "output-available", output={"ok": True}))
    why = r"^tool call 'r1' is answered by the server, not the browser$"
    with pytest.raises(Conflict, match=why):
        continuation(forged, state)
