"""A tool's progress and a policy's approvals, through the converter and history alone.

Progress: a generator tool's ``Event(message=...)`` (ADK stores it as an event of its own on
the call's branch, role ``user``, authored by the tool) is a preliminary output of its call.
Policy: a call its tool's ``require_confirmation`` function let through shows an automatic
approval (v7), and nothing of it to a v6 client. The events are built as ADK 2.13 emits them
(tests/asgi/test_one_derivation.py runs the same through real runs, both modes).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.history import rebuild_messages
from adk_asgi.convert.progress import (
    MAX_OUTPUT_BYTES,
    PreliminaryOutputError,
    Progress,
    preliminary,
    progress_of,
)
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.encoding import ChunkEncoder, SdkVersion, admit_messages
from tests.unit.test_convert import MID, STOP, call, model_event, response_event, run, text, wire


def tool_message(
    text: str, *, call_id: str = "c1", tool: str = "get_forecast", **fields: Any
) -> Event:
    """A generator tool's progress message, as ADK's ``FunctionNode`` stores it."""
    fields.setdefault("branch", f"{tool}@{call_id}")
    return Event(
        invocation_id="inv",
        author=tool,
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        **fields,
    )


def forecast_events() -> list[Event]:
    return [
        model_event("e1", call("c1", "get_forecast", city="Paris"), finish_reason=STOP),
        tool_message("Fetching the weather in Paris…"),
        tool_message("Almost there…"),
        Event(
            invocation_id="inv", author="get_forecast", branch="get_forecast@c1", output={"t": 20}
        ),
        response_event("e2", ("c1", "get_forecast", {"t": 20})),
    ]


FORECAST_CALL = [
    {
        "type": "tool-input-start",
        "toolCallId": "c1",
        "toolName": "get_forecast",
        "providerExecuted": True,
    },
    {
        "type": "tool-input-available",
        "toolCallId": "c1",
        "toolName": "get_forecast",
        "input": {"city": "Paris"},
        "providerExecuted": True,
    },
]


def test_a_tools_progress_messages_are_preliminary_outputs_of_its_call() -> None:
    assert run(forecast_events(), policy=ToolPolicy()) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *FORECAST_CALL,
        {
            "type": "tool-output-available",
            "toolCallId": "c1",
            "output": "Fetching the weather in Paris…",
            "preliminary": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "c1",
            "output": "Almost there…",
            "preliminary": True,
        },
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"t": 20}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_history_shows_the_result_only() -> None:
    events = [
        Event(
            invocation_id="inv",
            author="user",
            content=types.Content(role="user", parts=[types.Part(text="hi")]),
        ),
        *forecast_events(),
    ]
    messages = msgspec.to_builtins(rebuild_messages(events, ToolPolicy()))
    assert messages[1]["parts"] == [
        {"type": "step-start"},
        {
            "type": "tool-get_forecast",
            "toolCallId": "c1",
            "state": "output-available",
            "input": {"city": "Paris"},
            "output": {"t": 20},
            "providerExecuted": True,
        },
    ]


def test_a_message_after_the_result_or_for_a_call_the_client_lacks_is_not_shown() -> None:
    events = [
        *forecast_events(),
        tool_message("late"),
        tool_message("whose?", call_id="c9"),
    ]
    assert run(events, policy=ToolPolicy())[-3:] == [
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"t": 20}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_what_a_progress_message_is() -> None:
    assert progress_of(tool_message("a", branch="root.sub.get_forecast@c1")) == Progress(
        "c1", "get_forecast", "a"
    )
    assert progress_of(tool_message("a", branch="sub")) is None  # no call's branch
    assert progress_of(tool_message("a", partial=True)) is None
    model_said = tool_message("a")
    assert model_said.content is not None
    model_said.content.role = "model"
    assert progress_of(model_said) is None  # a node tool's model: its own text
    user = tool_message("a")
    user.author = "user"
    assert progress_of(user) is None


def test_a_progress_message_shows_its_text_only() -> None:
    """A file in a tool's message is not shown, as text or file, in the stream or history."""
    pixel = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"png"))
    with_file = tool_message("Half way…")
    only_file = tool_message("")
    assert with_file.content is not None and only_file.content is not None
    with_file.content.parts = [*(with_file.content.parts or []), pixel]
    only_file.content.parts = [pixel]
    events = [*forecast_events()[:1], with_file, only_file, *forecast_events()[3:]]
    assert run(events, policy=ToolPolicy())[4:-2] == [
        {
            "type": "tool-output-available",
            "toolCallId": "c1",
            "output": "Half way…",
            "preliminary": True,
        },
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"t": 20}},
    ]


def yielded(output: Any, *, call_id: str = "c1", tool: str = "get_forecast") -> Event:
    """A generator tool's ``yield preliminary(output)``, as ADK stores it (on the call's
    branch, authored by the tool; tests/e2e/test_example_page_clients.py runs it for real)."""
    return preliminary(output).model_copy(
        update={"invocation_id": "inv", "author": tool, "branch": f"{tool}@{call_id}"}
    )


JSON_VALUES: list[Any] = [{"state": "loading"}, [1, "two"], 3.5, True, None, ""]


def test_a_preliminary_output_may_be_any_json_value() -> None:
    """The AI SDK's example tools yield objects (``{state: 'loading'}``), not only text."""
    events = [forecast_events()[0], *(yielded(v) for v in JSON_VALUES), *forecast_events()[3:]]
    assert run(events, policy=ToolPolicy()) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *FORECAST_CALL,
        *(
            {"type": "tool-output-available", "toolCallId": "c1", "output": v, "preliminary": True}
            for v in JSON_VALUES
        ),
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"t": 20}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_a_preliminary_output_is_stored_as_json_and_history_shows_the_result_only() -> None:
    event = yielded(({"state": "loading"},))  # a tuple: the client gets the list JSON makes
    assert bookkeeping.read(event).preliminary == bookkeeping.Preliminary(
        output=[{"state": "loading"}]
    )
    assert event.content is None  # (the model never sees it)
    user = Event(
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="hi")]),
    )
    events = [user, forecast_events()[0], event, *forecast_events()[3:]]
    messages = msgspec.to_builtins(rebuild_messages(events, ToolPolicy()))
    assert messages[1]["parts"][1]["output"] == {"t": 20}
    assert "preliminary" not in messages[1]["parts"][1]


@pytest.mark.parametrize("value", [object(), {"a": object()}, "NUL\x00", "x" * MAX_OUTPUT_BYTES])
def test_a_preliminary_output_that_is_not_json_or_too_big_is_refused(value: Any) -> None:
    with pytest.raises(PreliminaryOutputError):
        preliminary(value)


class Remote(BaseToolset):
    """A toolset: its tools are dynamic (the page cannot know them when it is built)."""

    async def get_tools(self, readonly_context: Any = None) -> list[Any]:
        return []


def test_a_dynamic_tools_preliminary_outputs_say_dynamic_in_an_approval_continuation() -> None:
    """The continuation after the user approved the call: the call was announced by the first
    response, so this one knows it only by its id (``known_calls``) and its branch."""
    events = [
        tool_message("Paying…", call_id="c1", tool="pay_remote"),
        yielded({"state": "loading"}, call_id="c1", tool="pay_remote"),
        response_event("e2", ("c1", "pay_remote", {"paid": 500})),
        model_event("e3", text("Paid."), finish_reason=STOP),
    ]
    policy = ToolPolicy([Remote()])
    assert run(events, policy=policy, known_calls=["c1"]) == [
        {"type": "start", "messageId": MID},
        {
            "type": "tool-output-available",
            "toolCallId": "c1",
            "output": "Paying…",
            "dynamic": True,
            "preliminary": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "c1",
            "output": {"state": "loading"},
            "dynamic": True,
            "preliminary": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "c1",
            "output": {"paid": 500},
            "dynamic": True,
        },
        {"type": "start-step"},
        {"type": "text-start", "id": f"{MID}-txt1"},
        {"type": "text-delta", "id": f"{MID}-txt1", "delta": "Paid."},
        {"type": "text-end", "id": f"{MID}-txt1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


# --- approvals decided by the tool's policy -------------------------------------------------


def pay(amount: int) -> dict[str, Any]:
    """Pay."""
    return {"paid": amount}


POLICY = ToolPolicy([FunctionTool(pay, require_confirmation=lambda amount: amount > 100)])
PAY_5 = [
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "pay"},
    {"type": "tool-input-available", "toolCallId": "c1", "toolName": "pay", "input": {"amount": 5}},
]
AUTOMATIC = [
    {
        "type": "tool-approval-request",
        "approvalId": "approval-c1",
        "toolCallId": "c1",
        "isAutomatic": True,
    },
    {"type": "tool-approval-response", "approvalId": "approval-c1", "approved": True},
]


def let_through() -> list[Event]:
    return [
        model_event("e1", call("c1", "pay", amount=5), finish_reason=STOP),
        response_event("e2", ("c1", "pay", {"paid": 5})),
    ]


def test_a_call_the_policy_let_through_shows_an_automatic_approval_with_its_result() -> None:
    assert run(let_through(), policy=POLICY) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *PAY_5,
        *AUTOMATIC,
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"paid": 5}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


@pytest.mark.parametrize("version", [6, 5])
def test_a_v6_client_is_sent_the_call_and_its_result_only(version: SdkVersion) -> None:
    """(And an ai@5 client: an automatic approval is not the error of an approval it cannot
    give, since nothing waits for it.)"""
    converter = EventConverter(message_id=MID, policy=POLICY)
    chunks = converter.start()
    for event in let_through():
        chunks += converter.feed(event)
    chunks += converter.finish()
    older, v7 = ChunkEncoder(version), ChunkEncoder(7)
    assert [c for c in wire(chunks) if c["type"].startswith("tool-approval")] == AUTOMATIC
    assert [v7.admit(c) for c in chunks] == chunks
    admitted = [a for a in (older.admit(c) for c in chunks) if a is not None]
    assert wire(admitted) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *PAY_5,
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"paid": 5}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_next_to_a_call_the_policy_asked_about_only_the_one_let_through_is_automatic() -> None:
    """One step pays 5 (let through) and 500 (asked); the user approves 500, whose result
    then comes in the continuation, with no automatic approval."""
    events = [
        model_event(
            "e1", call("c1", "pay", amount=5), call("c2", "pay", amount=500), finish_reason=STOP
        ),
        response_event(
            "e2",
            ("c1", "pay", {"paid": 5}),
            ("c2", "pay", {"error": "This tool call requires confirmation, please approve."}),
            actions=EventActions(requested_tool_confirmations={"c2": ToolConfirmation(hint="?")}),
        ),
        Event(
            invocation_id="inv",
            author="agent",
            content=types.Content(
                role="model",
                parts=[
                    call(
                        "req2",
                        "adk_request_confirmation",
                        originalFunctionCall={"id": "c2", "name": "pay", "args": {"amount": 500}},
                        toolConfirmation={"hint": "?", "confirmed": False},
                    )
                ],
            ),
            long_running_tool_ids={"req2"},
        ),
    ]
    assert run(events, policy=POLICY) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *PAY_5,
        {"type": "tool-input-start", "toolCallId": "c2", "toolName": "pay"},
        {
            "type": "tool-input-available",
            "toolCallId": "c2",
            "toolName": "pay",
            "input": {"amount": 500},
        },
        *AUTOMATIC,
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"paid": 5}},
        {
            "type": "tool-approval-request",
            "approvalId": "req2",
            "toolCallId": "c2",
            "approvalDescriptor": {"hint": "?"},
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    approved = [response_event("e3", ("c2", "pay", {"paid": 500}))]
    assert run(approved, policy=POLICY, known_calls={"c1", "c2"}) == [
        {"type": "start", "messageId": MID},
        {"type": "tool-output-available", "toolCallId": "c2", "output": {"paid": 500}},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_live_a_result_shows_an_automatic_approval_unless_the_user_decided() -> None:
    for asked, shown in [(False, AUTOMATIC), (True, [])]:
        converter = EventConverter(message_id=MID, policy=POLICY, live=True)
        converter.start()
        converter.feed(model_event("e1", call("c1", "pay", amount=5)))
        result = converter.cards.tool_result("c1", {"paid": 5}, "pay", asked=asked)
        assert wire(result) == [
            *shown,
            {"type": "tool-output-available", "toolCallId": "c1", "output": {"paid": 5}},
        ]


def test_history_shows_the_automatic_approval_to_v7_only() -> None:
    user = Event(
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="pay 5")]),
    )
    part = {
        "type": "tool-pay",
        "toolCallId": "c1",
        "state": "output-available",
        "input": {"amount": 5},
        "output": {"paid": 5},
    }
    automatic = {"approval": {"id": "approval-c1", "approved": True, "isAutomatic": True}}
    for v7, shown in [(True, {**part, **automatic}), (False, part)]:
        messages = admit_messages(rebuild_messages([user, *let_through()], POLICY), v7=v7)
        assert msgspec.to_builtins(messages)[1]["parts"] == [{"type": "step-start"}, shown]


def test_a_call_answered_with_an_error_shows_no_automatic_approval() -> None:
    """A ``before_tool_callback`` may refuse a call before the function is asked (ADK's
    ``{"error": …}``, as a tool's failure looks): never shown approved, in the stream or in
    history. The other call of the step ran: approved automatically."""
    events = [
        model_event(
            "e1", call("c1", "pay", amount=5), call("c2", "pay", amount=7), finish_reason=STOP
        ),
        response_event("e2", ("c1", "pay", {"paid": 5}), ("c2", "pay", {"error": "Refused."})),
    ]
    assert run(events, policy=POLICY)[-6:] == [
        *AUTOMATIC,
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"paid": 5}},
        {"type": "tool-output-error", "toolCallId": "c2", "errorText": "Refused."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    user = Event(
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="pay")]),
    )
    parts = msgspec.to_builtins(rebuild_messages([user, *events], POLICY))[1]["parts"]
    assert [p.get("approval") for p in parts[1:]] == [
        {"id": "approval-c1", "approved": True, "isAutomatic": True},
        None,
    ]


def test_a_tool_reporting_progress_that_the_policy_let_through() -> None:
    """Its progress, then the approval with the result (the stream and history agree on a
    result: a failure is shown without an approval)."""

    async def pay_slowly(amount: int) -> Any:
        """Pay, reporting progress."""
        yield Event(message="Paying…")
        yield {"paid": amount}

    policy = ToolPolicy(
        [FunctionTool(pay_slowly, require_confirmation=lambda amount: amount > 100)]
    )
    events = [
        model_event("e1", call("c1", "pay_slowly", amount=5), finish_reason=STOP),
        tool_message("Paying…", tool="pay_slowly"),
        response_event("e2", ("c1", "pay_slowly", {"paid": 5})),
    ]
    assert run(events, policy=policy)[2:-2] == [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "pay_slowly"},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "pay_slowly",
            "input": {"amount": 5},
        },
        {
            "type": "tool-output-available",
            "toolCallId": "c1",
            "output": "Paying…",
            "preliminary": True,
        },
        *AUTOMATIC,
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"paid": 5}},
    ]
