"""What the bridge writes into a chat's session to close tool calls, and how it stores the
user's answers to them.

Before the model runs again, calls that must not stay open are answered by the bridge itself
(:func:`closing_answers`): a call the user left behind, a wait that ran out, a call a stopped
server left without its result. The bridge's answer is the truth the model and the history
read afterwards, and a closed call is never run again. Sans-I/O: it builds events.
"""

from __future__ import annotations

from typing import Any

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.hitl import bookkeeping, interrupts, node_tools
from adk_asgi.hitl.interrupts import REQUEST_CREDENTIAL, REQUEST_INPUT
from adk_asgi.hitl.pending import (
    CONFIRMATION_TOOL,
    EXPIRED,
    INPUT_MOVED_ON,
    INTERRUPTED,
    MOVED_ON,
    REJECTED,
    ChatState,
    ToolCall,
    client_approval_id,
)
from adk_asgi.hitl.policy import ToolPolicy


def closing_answers(
    state: ChatState,
    policy: ToolPolicy,
    *,
    now: float,
    moved_on: bool,
    approved_unrun: bool = False,
) -> Event | None:
    """What closes the calls that must not stay open before the model runs again, or ``None``.

    - ``moved_on`` (a new user message): every call left waiting. A browser call left without
      a response would stay in the model's history forever (ADK keeps long-running calls, and
      Gemini refuses a call turn not followed by its responses), so a browser call waiting for
      approval is denied and one waiting for the browser gets :data:`MOVED_ON`. An open ADK
      confirmation needs no answer for the model (ADK gave it a placeholder response) but is
      closed as denied, so an old card can never run its tool later.
    - Calls whose recorded wait ended at ``now`` (a live connection left them): the same,
      with :data:`EXPIRED` for the browser's.
    - Calls a crashed server left with no response at all get :data:`INTERRUPTED`: the model
      must not take them for unanswered and issue them again.
    - When the user ``moved_on``, or with ``approved_unrun``: calls approved with no result
      (:meth:`ChatState.approved_unrun`) get :data:`INTERRUPTED` too. The caller holds the
      chat, so no other request runs them: a server stopped while they ran, and they are
      never run again. A live connection closes them as it opens: ADK's live flow would run
      every confirmed call it finds without a result as ``run_live`` starts (its confirmation
      request processor), though another request took the approval.

    Other long-running tools (a ticket a human closes days later) are the app's business.
    """
    parts: list[types.Part] = []
    closed: list[str] = []
    expired: list[str] = []
    invocation_id = ""
    approvals = {c.call_id: a for a, c in state.open_confirmations.items()}
    for call in state.waiting():
        ended = state.expires.get(call.id, float("inf")) <= now
        if not (moved_on or ended):
            continue
        invocation_id = invocation_id or call.invocation_id
        answered = approvals.get(call.id, call.id)
        if call.id in approvals:
            closed.append(answered)
        elif policy.is_client_tool(call.name):
            unapproved = call.id in state.gated and call.id not in state.approved_client_calls
            result = REJECTED if unapproved else MOVED_ON if moved_on else EXPIRED
            parts.append(_response(call, result))
            if unapproved and moved_on:
                closed.append(client_approval_id(call.id))
        elif moved_on and call.name == REQUEST_INPUT:
            if interrupts.asks_for_a_workflow(call.args):
                closed.append(call.id)  # any answer would resume the workflow: none is sent
            else:  # the model's question: it must read an answer before the new message
                parts.append(_response(call, INPUT_MOVED_ON))
        elif moved_on and call.name == REQUEST_CREDENTIAL:
            closed.append(call.id)  # an answer would run the old turn again: none is sent
        else:
            continue
        if not moved_on:
            expired.append(answered)
    held = node_tools.suspended(state.calls.values(), state.waiting(), state.responded)
    parts += [_response(call, INPUT_MOVED_ON) for call in held] if moved_on else []  # (above)
    left = state.dangling() + (state.approved_unrun() if moved_on or approved_unrun else [])
    for call in left:
        invocation_id = invocation_id or call.invocation_id
        parts.append(_response(call, INTERRUPTED))
    if not parts and not closed:
        return None
    return _answers_event(invocation_id, parts, closed, expired)


def _response(call: ToolCall, result: dict[str, Any]) -> types.Part:
    response = types.FunctionResponse(id=call.answered_as, name=call.name, response=dict(result))
    return types.Part(function_response=response)


def split_confirmation_answers(
    state: ChatState, responses: list[types.Part]
) -> tuple[Event | None, list[types.Part]]:
    """The function responses of a continuation as ADK must get them: ADK leaves an event that
    answers a confirmation out of the model's context with all it holds, so when answers to
    other calls (the browser's) come with confirmations, they are stored first as an event of
    their own, and only the confirmations go to the run."""
    confirmations = [p for p in responses if _answers_confirmation(p)]
    others = [p for p in responses if not _answers_confirmation(p)]
    if not confirmations or not others:
        return None, responses
    first = others[0].function_response
    assert first is not None and first.id is not None
    call = next(c for c in state.calls.values() if c.answered_as == first.id)
    return _answers_event(call.invocation_id, others, []), confirmations


def _answers_confirmation(part: types.Part) -> bool:
    response = part.function_response
    return response is not None and response.name in (CONFIRMATION_TOOL, REQUEST_CREDENTIAL)


def _answers_event(
    invocation_id: str,
    parts: list[types.Part],
    closed: list[str],
    expired: list[str] | None = None,
) -> Event:
    """The user's answers, stored by the bridge itself (not through a run)."""
    tags: dict[str, Any] = {"closed_approvals": closed} if closed else {}
    if expired:
        tags["expired"] = expired
    return Event(
        invocation_id=invocation_id,
        author="user",
        content=types.Content(role="user", parts=parts) if parts else None,
        custom_metadata=bookkeeping.with_tags(None, **tags) if tags else None,
    )
