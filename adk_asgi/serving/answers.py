"""The user's answers to a chat's waiting calls, checked, claimed and recorded — for both modes.

A continuation answers calls that wait in the stored session (a paused SSE response, or a live
connection that is gone): the answers are checked against the session, claimed once
(:mod:`adk_asgi.stores.claims`), and what the bridge records itself is stored before the run that
acts on them. What goes to ADK as the user's function responses is returned: SSE hands it to
``run_async`` as the new message; live mode stores it before ``run_live`` starts, whose
preparation runs the confirmed tools as ADK does over SSE.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from adk_asgi.convert.failures import FailedCall, failed_calls_answer, shown_answer
from adk_asgi.errors import log_failure
from adk_asgi.hitl.bookkeeping import CutCall
from adk_asgi.hitl.closing import closing_answers, split_confirmation_answers
from adk_asgi.hitl.continuation import Conflict, Continuation, continuation
from adk_asgi.hitl.pending import (
    ChatState,
    approved_marker,
    chat_state,
    client_approval_id,
    reason_marker,
)
from adk_asgi.serving.services import Services
from adk_asgi.wire.messages import UIMessage


async def close_left_calls(
    services: Services, session: Session, *, moved_on: bool, approved_unrun: bool = False
) -> ChatState:
    """Close what must not stay open before the model runs (see
    :func:`~adk_asgi.hitl.closing.closing_answers`): calls left by a crash or past their wait and,
    when the user ``moved_on`` to a new message, every call still waiting. Returns the chat's
    calls as they stand after it."""
    if not session.events:  # a new chat: nothing to close
        return ChatState()
    state = chat_state(session.events, services.tools)
    closing = closing_answers(
        state, services.tools, now=time.time(), moved_on=moved_on, approved_unrun=approved_unrun
    )
    if closing is None:
        return state
    await services.session_service.append_event(session, closing)
    return chat_state(session.events, services.tools)


async def accept_answers(
    services: Services,
    user_id: str,
    session: Session,
    message: UIMessage,
    payloads: dict[str, Any],
) -> tuple[Continuation, types.Content | None]:
    """Check ``message``'s answers against ``session`` (:class:`Conflict` if they do not match
    its waiting calls or were taken already), record the bridge's part, and return them with
    the user's function responses for ADK (``None`` when only browser calls were released)."""
    state = await close_left_calls(services, session, moved_on=False)
    answers = continuation(message, state, payloads)
    key = services.chat_key(user_id, session.id)
    if not await services.claims.claim(key, answers.answer_ids()):
        raise Conflict("this answer was already taken by another request")
    sessions = services.session_service
    for call in answers.released:
        reason = answers.reasons.get(client_approval_id(call.id))
        await sessions.append_event(session, approved_marker(call, services.author, reason))
    for call_id in answers.answered:  # a browser tool denied, or approved with its result:
        reason = answers.reasons.get(client_approval_id(call_id))  # ADK's record has no reason
        if reason is not None:
            marker = reason_marker(state.calls[call_id], services.author, reason)
            await sessions.append_event(session, marker)
    stored_first, responses = split_confirmation_answers(state, answers.responses)
    if stored_first is not None:
        await sessions.append_event(session, stored_first)
    return answers, types.Content(role="user", parts=responses) if responses else None


async def keep_shown(
    services: Services,
    session: Session | None,
    message_id: str,
    shown: list[types.Part],
    error_text: str | None = None,
    started_at: float | None = None,
    cut_calls: Sequence[CutCall] = (),
    failed: Sequence[FailedCall] = (),
    results: Sequence[Event] = (),
) -> None:
    """Keep an answer cut short (it failed: ``error_text``; or was stopped) as the client saw
    it: ADK stores no partial text (:func:`~adk_asgi.convert.failures.shown_answer`), nor any
    result of the calls a run that raised was running (``failed``: their responses are the
    error shown, :func:`~adk_asgi.convert.failures.failed_calls_answer`). ``results``: the
    events of results the client was shown (live mode shows a result before ADK stores it),
    stored if the session has not got them. ``session``: read after the run. The answer was
    sent already, so a store that fails loses only its record, which is logged."""
    event = shown_answer(services.author, message_id, shown, error_text, started_at, cut_calls)
    try:
        if session is not None:
            await _keep_results(services, session, results)
            if failed and error_text is not None:
                answers = failed_calls_answer(session.events, failed, error_text, message_id)
                for answer in answers:
                    await services.session_service.append_event(session, answer)
            await services.session_service.append_event(session, event)
    except Exception as exc:
        chat_id = session.id if session is not None else None
        log_failure("a failed answer could not be recorded", exc, chat_id=chat_id)


async def _keep_results(services: Services, session: Session, results: Sequence[Event]) -> None:
    """Store each of ``results`` that the session does not hold (none over SSE: it shows only
    what ADK stored)."""
    if not results:
        return
    answered = {r.id for e in session.events for r in e.get_function_responses()}
    for result in results:
        if not any(r.id in answered for r in result.get_function_responses()):
            result.author = result.author or services.author
            await services.session_service.append_event(session, result)
