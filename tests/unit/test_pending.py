"""The calls that must be closed before the model runs again, read from hand-made sessions:
left by a crash, past the wait a live connection recorded, or left when the user moved on."""

from __future__ import annotations

import time
from typing import Any

from google.adk.events.event import Event
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from adk_asgi.hitl.closing import closing_answers
from adk_asgi.hitl.pending import (
    APPROVAL_EXPIRED,
    APPROVAL_MOVED_ON,
    CONFIRMATION_TOOL,
    EXPIRED,
    INTERRUPTED,
    MOVED_ON,
    REJECTED,
    ToolCall,
    chat_state,
)
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.hitl.tools import client_tool
from adk_asgi.live import durable


@client_tool
def get_location() -> dict[str, Any]:
    """Where the browser is."""
    return {}


@client_tool(require_approval=True)
def read_clipboard() -> dict[str, Any]:
    """What the user copied."""
    return {}


POLICY = ToolPolicy([get_location, read_clipboard])
NOW = time.time()


def call_event(name: str, call_id: str, *, long_running: bool = False) -> Event:
    call = types.FunctionCall(id=call_id, name=name, args={})
    return Event(
        invocation_id="inv-1",
        author="agent",
        content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        long_running_tool_ids={call_id} if long_running else None,
    )


def tool_call(name: str, call_id: str) -> ToolCall:
    return ToolCall(call_id, name, {}, "inv-1", "msg-1", False)


def closing(
    events: list[Event], *, now: float = NOW, moved_on: bool = False, approved_unrun: bool = False
) -> Any:
    """What :func:`closing_answers` closes: ``(responses by call id, closed approvals)``."""
    state = chat_state(events, POLICY)
    event = closing_answers(
        state, POLICY, now=now, moved_on=moved_on, approved_unrun=approved_unrun
    )
    if event is None:
        return None
    responses = {r.id: r.response for r in event.get_function_responses()}
    closed = (event.custom_metadata or {}).get("adk_asgi", {}).get("closedApprovals", [])
    return responses, closed


def test_a_call_a_crash_left_without_a_response_is_interrupted() -> None:
    assert closing([call_event("process_payment", "c1")]) == ({"c1": INTERRUPTED}, [])


def test_a_call_with_its_response_is_left_alone() -> None:
    response = types.FunctionResponse(id="c1", name="process_payment", response={"ok": True})
    answered = Event(
        invocation_id="inv-1",
        author="agent",
        content=types.Content(role="user", parts=[types.Part(function_response=response)]),
    )
    assert closing([call_event("process_payment", "c1"), answered]) is None


def live_approval(limit: float) -> list[Event]:
    """A payment a live connection recorded as waiting for ``limit`` seconds."""
    call = tool_call("process_payment", "c1")
    waiting = durable.waiting_for_confirmation(call, "agent", ToolConfirmation(), NOW + limit)
    return [call_event("process_payment", "c1"), *waiting]


def test_a_recorded_approval_waits_until_its_time_is_up() -> None:
    assert closing(live_approval(60)) is None
    assert closing(live_approval(60), now=NOW + 61) == ({}, ["approval-c1"])
    assert closing(live_approval(60), moved_on=True) == ({}, ["approval-c1"])


def test_a_decision_made_on_the_connection_closes_the_recorded_approval() -> None:
    call = tool_call("process_payment", "c1")
    decided = durable.decided(call, True, confirmation=True, closed=None)
    state = chat_state(live_approval(60) + decided, POLICY)
    assert state.open_confirmations == {}
    assert state.decided_confirmations == {"approval-c1": True}
    assert [e.get_function_responses()[0].name for e in decided] == [CONFIRMATION_TOOL]


def decided(approved: bool) -> list[Event]:
    """A recorded approval the user answered (``approved``), its tool's result not stored."""
    call = tool_call("process_payment", "c1")
    return live_approval(60) + durable.decided(call, approved, confirmation=True, closed=None)


def test_an_approved_call_without_its_result_is_closed_only_by_one_who_holds_the_chat() -> None:
    """Approved, and no result: the request that took the approval is running it (it holds
    the chat), or a server stopped while it ran. Only a request that holds the chat and would
    otherwise run it again (a live connection as it opens), or a new message, closes it."""
    assert closing(decided(True)) is None
    assert closing(decided(True), approved_unrun=True) == ({"c1": INTERRUPTED}, [])
    assert closing(decided(True), moved_on=True) == ({"c1": INTERRUPTED}, [])


def test_an_approved_call_with_its_result_or_a_denied_one_is_left_alone() -> None:
    result = types.FunctionResponse(id="c1", name="process_payment", response={"ok": True})
    ran = Event(
        invocation_id="inv-1",
        author="agent",
        content=types.Content(role="user", parts=[types.Part(function_response=result)]),
    )
    assert closing([*decided(True), ran], approved_unrun=True) is None
    assert closing(decided(False), approved_unrun=True, moved_on=True) is None


def browser_wait(name: str, limit: float, *, approved: bool = False) -> list[Event]:
    call = tool_call(name, "b1")
    events = [call_event(name, "b1", long_running=True)]
    if approved:
        events += durable.decided(call, True, confirmation=False, closed=None)
    return events + durable.waiting_for_browser(call, NOW + limit)


def test_a_browser_call_past_its_recorded_wait_expires() -> None:
    assert closing(browser_wait("get_location", 60)) is None
    assert closing(browser_wait("get_location", 60), now=NOW + 61) == ({"b1": EXPIRED}, [])
    moved_on = closing(browser_wait("get_location", 60), moved_on=True)
    assert moved_on == ({"b1": MOVED_ON}, [])


def test_a_browser_call_never_approved_is_denied_not_expired() -> None:
    expired = closing(browser_wait("read_clipboard", 60), now=NOW + 61)
    assert expired == ({"b1": REJECTED}, [])
    approved = closing(browser_wait("read_clipboard", 60, approved=True), now=NOW + 61)
    assert approved == ({"b1": EXPIRED}, [])


def test_a_wait_closed_for_its_end_is_recorded_as_expired_not_as_a_denial() -> None:
    """Closed because its time was up, the call is tagged ``expired``; closed because the user
    moved on, it is not: history can tell a timeout from a decision."""
    events = live_approval(60) + browser_wait("get_location", 60)
    ended = closing_answers(chat_state(events, POLICY), POLICY, now=NOW + 61, moved_on=False)
    left = closing_answers(chat_state(events, POLICY), POLICY, now=NOW, moved_on=True)
    assert ended is not None and left is not None
    assert chat_state([*events, ended], POLICY).expired == {"approval-c1", "b1"}
    assert chat_state([*events, left], POLICY).expired == set()


def test_an_approval_that_timed_out_on_the_connection_is_recorded_as_expired() -> None:
    call = tool_call("process_payment", "c1")
    timed_out = durable.decided(call, False, confirmation=True, closed="expired")
    state = chat_state(live_approval(60) + timed_out, POLICY)
    assert (state.decided_confirmations, state.expired) == ({"approval-c1": False}, {"approval-c1"})
    browser = durable.decided(
        tool_call("read_clipboard", "b1"), False, confirmation=False, closed="expired"
    )
    assert chat_state(browser, POLICY).expired == {"b1"}


def test_an_approval_closed_unanswered_says_why_and_the_users_denial_does_not() -> None:
    call = tool_call("process_payment", "c1")
    by_user = durable.decided(call, False, confirmation=True)
    expired = durable.decided(call, False, confirmation=True, closed="expired")
    left = durable.decided(call, False, confirmation=True, closed="moved-on")
    reasons = [
        chat_state(live_approval(60) + events, POLICY).closed_unanswered("c1")
        for events in (by_user, expired, left)
    ]
    assert reasons == [None, APPROVAL_EXPIRED, APPROVAL_MOVED_ON]
    # each is a denial all the same: the tool never runs, the model reads ADK's rejection
    assert all(
        chat_state(live_approval(60) + events, POLICY).denied("c1")
        for events in (by_user, expired, left)
    )


def test_a_browser_approval_left_by_a_new_message_is_closed_unanswered() -> None:
    events = browser_wait("read_clipboard", 60)
    assert closing(events, moved_on=True) == ({"b1": REJECTED}, ["approval-b1"])
    closed = closing_answers(chat_state(events, POLICY), POLICY, now=NOW, moved_on=True)
    assert closed is not None
    state = chat_state([*events, closed], POLICY)
    assert (state.denied("b1"), state.closed_unanswered("b1")) == (True, APPROVAL_MOVED_ON)
