"""What a live connection records in the session about a call that waits, so the wait outlives it.

ADK's live flow records no confirmation: a call held in the tool pipeline for the user lives in
the connection's memory only, and would die with a dropped socket or a restarted worker. So the
moment a live call starts waiting it is recorded the way ADK records a paused call over SSE:

- a server tool waiting for approval: ADK's placeholder response with the requested
  confirmation, then the ``adk_request_confirmation`` call (its id is the approval id the live
  client was given), so ADK itself runs the tool when the answer comes from any worker, in
  either mode;
- a browser tool: ADK already stored its long-running call; only the end of its wait is added;
- the result of a call next to one that waits: stored as it comes (:func:`result`), not when
  ADK stores the step's results together, after the wait (:func:`without` takes it out of those).

Each record carries when the wait ends; the decision made on the connection is recorded too.
A connection that is gone leaves the call open in the session, answerable until then, and
closed after (:func:`~adk_asgi.hitl.closing.closing_answers`). Sans-I/O: it builds events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.pending import (
    CONFIRMATION_TOOL,
    NEEDS_CONFIRMATION,
    ToolCall,
    client_approval_id,
    decision_reasons,
)

ClosedHow = Literal["expired", "moved-on"]
"""How a wait closed without the user's answer."""

_NONE: Final = object()


def _tags(call: ToolCall, **tags: object) -> dict[str, object]:
    return bookkeeping.with_tags(None, message_id=call.message_id, **tags)


def waiting_for_confirmation(
    call: ToolCall, author: str, asked: ToolConfirmation, expires: float
) -> list[Event]:
    """``call`` waits for the user's decision until ``expires`` (Unix time)."""
    placeholder = types.FunctionResponse(
        id=call.id, name=call.name, response=dict(NEEDS_CONFIRMATION)
    )
    original = types.FunctionCall(id=call.id, name=call.name, args=call.args)
    request = types.FunctionCall(
        id=client_approval_id(call.id),
        name=CONFIRMATION_TOOL,
        args={
            "originalFunctionCall": original.model_dump(exclude_none=True, by_alias=True),
            "toolConfirmation": asked.model_dump(by_alias=True, exclude_none=True),
        },
    )
    return [
        Event(
            invocation_id="",
            author=author,
            content=types.Content(role="user", parts=[types.Part(function_response=placeholder)]),
            actions=EventActions(requested_tool_confirmations={call.id: asked}),
            custom_metadata=_tags(call),
        ),
        Event(
            invocation_id="",
            author=author,
            content=types.Content(role="model", parts=[types.Part(function_call=request)]),
            long_running_tool_ids={request.id or ""},
            custom_metadata=_tags(call, expires={call.id: expires}),
        ),
    ]


def result(call: ToolCall, author: str, response: dict[str, Any]) -> Event:
    """``call``'s result, stored as ADK stores a tool's (a function response event of the
    agent), ahead of the step's other calls (:meth:`~.calls.LiveCalls.store_early`)."""
    answer = types.FunctionResponse(id=call.id, name=call.name, response=response)
    return Event(
        invocation_id=call.invocation_id,
        author=author,
        content=types.Content(role="user", parts=[types.Part(function_response=answer)]),
    )


def without(event: Event, stored: Mapping[str, Any]) -> Event:
    """``event`` (ADK's merged results of a step) without the results stored already
    (call id → result): the model gets them all (ADK sends the event as it made it), the
    session keeps each once.

    A result the agent's own ``after_tool_callback`` changed after it was stored stays, as
    the model got it; so does an event left with no result (the step's last call returned
    none: a long-running tool left to the app): it is what makes the model's answer a new
    step. A result stored twice is harmless: ADK, and history, take a call's last response."""

    def is_stored(part: types.Part) -> bool:
        answer = part.function_response
        return answer is not None and stored.get(answer.id or "", _NONE) == answer.response

    content = event.content
    parts = content.parts or [] if content is not None else []
    kept = [p for p in parts if not is_stored(p)]
    if content is None or len(kept) == len(parts) or not any(p.function_response for p in kept):
        return event
    return event.model_copy(update={"content": content.model_copy(update={"parts": kept})})


def waiting_for_browser(call: ToolCall, expires: float) -> list[Event]:
    """``call`` (a browser tool) waits for the user's approval or the browser's result until
    ``expires`` (Unix time)."""
    tags = _tags(call, expires={call.id: expires})
    return [Event(invocation_id="", author="user", custom_metadata=tags)]


def decided(
    call: ToolCall,
    approved: bool,
    *,
    confirmation: bool,
    closed: ClosedHow | None = None,
    payload: Any | None = None,
    reason: str | None = None,
) -> list[Event]:
    """The decision on ``call`` made on the connection — the user's, or a denial because
    nobody answered (``closed``: the wait ran out, or the user sent a new message; tagged so):
    the answer to its recorded confirmation (with the user's ``payload``, as over SSE: a
    reason is kept so), or a browser tool's approval (its denial is the rejection ADK
    records), with the user's ``reason`` in the bridge's tags, as over SSE
    (:func:`~adk_asgi.hitl.pending.approved_marker`, ``reason_marker``)."""
    tags = None
    if closed == "expired":
        tags = _tags(call, expired=[client_approval_id(call.id) if confirmation else call.id])
    elif closed == "moved-on":
        tags = _tags(call, closed_approvals=[client_approval_id(call.id)])
    if confirmation:
        response: dict[str, Any] = {"confirmed": approved}
        if payload is not None:
            response["payload"] = payload
        answer = types.FunctionResponse(
            id=client_approval_id(call.id), name=CONFIRMATION_TOOL, response=response
        )
        content = types.Content(role="user", parts=[types.Part(function_response=answer)])
        return [Event(invocation_id="", author="user", content=content, custom_metadata=tags)]
    reasons = decision_reasons(call, reason)
    if approved:
        marker = _tags(call, approved_call=call.id, reasons=reasons)
        return [Event(invocation_id="", author="user", custom_metadata=marker)]
    if reasons:
        tags = bookkeeping.with_tags(tags, message_id=call.message_id, reasons=reasons)
    return [Event(invocation_id="", author="user", custom_metadata=tags)] if tags else []
