"""The app's answers to long-running calls that only the server may answer (a back office).

A ``LongRunningFunctionTool`` that waits for something outside the chat — a refund a clerk
approves, a job that finishes — returns nothing, and its call stays open in the session. The
page is shown the call (``providerExecuted``), but it was never handed it: a browser that sent
a result for it would be forging the back office's answer, so a continuation that tries is a
409 (:mod:`adk_asgi.hitl.continuation`, the call is in ``ChatState.server_answered``). Only the
application answers it, with :meth:`AdkApp.answer_call <adk_asgi.AdkApp.answer_call>`, which lands
here.

The answer is acted on exactly once, the way a user's answer is: under the chat's lock (waited
for up to ``busy_timeout``: :class:`~adk_asgi.stores.locks.ChatBusy`, nothing taken), checked
against the stored session, and claimed in :attr:`Services.claims` under the call's id — the key a
browser's answer to a call has — before anything is stored. ADK then gets it as it gets any
late function response, as the new message of a ``run_async``: the response is stored (author
``user``), the invocation resumes and the model answers it. That answer is the paused message
going on (same message id), so history shows the call's output and the follow-up in one
message; with a stream store it is also recorded there as an SSE response, so a page that
follows the chat (``GET .../stream``) sees it as it is written.

Internal: not an import path of the public API; :mod:`adk_asgi` exports its public
names (docs/reference.md#import-paths).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from google.adk.sessions.session import Session
from google.genai import types

from adk_asgi.errors import AdkAsgiError
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.pending import ChatState, ToolCall, visible_events
from adk_asgi.serving.answers import close_left_calls, keep_shown
from adk_asgi.serving.services import Services
from adk_asgi.sse.response import sse_body
from adk_asgi.stores.locks import ChatKey
from adk_asgi.stores.resumable import StreamStore
from adk_asgi.wire.encoding import ChunkEncoder

logger = logging.getLogger("adk_asgi")


class UnknownCall(AdkAsgiError, LookupError):
    """The chat does not exist for this user, or has no call of that id (think 404)."""


class CallNotOpen(AdkAsgiError, ValueError):
    """The call cannot be answered by the server now (think 409): it is not long-running, or
    it is the page's to answer (a browser tool, a question for the user), or it was closed."""


class CallAlreadyAnswered(CallNotOpen):
    """The call has its result already: an earlier answer, on this worker or another, took
    it (think 409). Nothing was stored or run."""


def server_call(state: ChatState, call_id: str) -> ToolCall:
    """The open call ``call_id`` of the chat, if the server may answer it; else raises."""
    call = state.calls.get(call_id)
    if call is None:
        raise UnknownCall(f"this chat has no tool call {call_id!r}")
    if call_id in state.results:
        raise CallAlreadyAnswered(f"tool call {call_id!r} was answered already")
    if call_id not in state.server_answered:
        if call.long_running:
            raise CallNotOpen(f"tool call {call_id!r} ({call.name}) is the page's to answer")
        raise CallNotOpen(f"tool call {call_id!r} ({call.name}) is not a call the server answers")
    return call


def as_response(result: Any) -> dict[str, Any]:
    """A function response ADK accepts: an object as it is, any other value as
    ``{"result": ...}`` (what ADK stores for a tool that returns one)."""
    return result if isinstance(result, dict) else {"result": result}


async def answer_call(
    services: Services, user_id: str, chat_id: str, call_id: str, result: Any
) -> str:
    """Answer the open long-running call ``call_id`` of ``user_id``'s chat ``chat_id`` with
    ``result`` and run the agent on, once; returns the id of the message the outcome went to.

    Raises :class:`UnknownCall`, :class:`CallNotOpen`, :class:`CallAlreadyAnswered`, or
    :class:`~adk_asgi.stores.locks.ChatBusy` when the chat stayed busy for ``busy_timeout`` (a run
    under way, or a live connection holding it): nothing was taken, so it can be tried again.
    """
    response = as_response(result)
    key = services.chat_key(user_id, chat_id)
    async with services.locks.hold(key, services.limits.busy_timeout):
        session = await services.session(user_id, chat_id)
        if session is None:
            raise UnknownCall(f"there is no chat {chat_id!r} for this user")
        state = await close_left_calls(services, session, moved_on=False)
        call = server_call(state, call_id)
        if not await services.claims.claim(key, [call.id]):
            raise CallAlreadyAnswered(f"tool call {call_id!r} was answered by another request")
        going_on = call.message_id is not None and call.message_id == _last_message(session)
        message_id = call.message_id if going_on and call.message_id else services.new_message_id()
        converter = services.converter(message_id, {call.id} if going_on else ())
        lead = converter.cards.tool_result(call.id, response, call.name)
        answer = types.FunctionResponse(id=call.answered_as, name=call.name, response=response)
        abort = asyncio.Event()
        events = services.runner.run_async(
            user_id=user_id,
            session_id=chat_id,
            new_message=types.Content(role="user", parts=[types.Part(function_response=answer)]),
            run_config=services.sse_run_config(converter, None),
            abort_signal=abort,
        )
        encoder = ChunkEncoder(services.ai_sdk_version)
        body = sse_body(events, converter, encoder, lead=lead)
        await _write(services.streams, key, body, abort)
        if converter.failure is not None:
            shown, error_text = converter.failure
            after = await services.session(user_id, chat_id)
            started_at, cards = converter.facts.started_at, converter.cards
            failed = cards.running.failed
            await keep_shown(
                services, after, message_id, shown, error_text, started_at, cards.cut, failed
            )
    return message_id


def _last_message(session: Session) -> str | None:
    """The id of the chat's last message that says anything (the events of a run are tagged
    with it; a live connection also tags what ends a turn with no request open)."""
    for event in reversed(visible_events(session.events)):
        message_id = bookkeeping.read(event).message_id
        if message_id is not None and event.content is not None and event.content.parts:
            return message_id
    return None


async def _write(
    store: StreamStore | None, key: ChatKey, body: AsyncGenerator[bytes, None], abort: asyncio.Event
) -> None:
    """Run ``body`` to its end, recording it in the stream store when there is one (a page
    that follows the chat reads it there; the user's stop, ``DELETE .../stream``, stops it)."""
    async with aclosing(body):
        if store is None:
            async for _ in body:
                pass
            return
        stream_id = await store.begin(key)
        stop = asyncio.create_task(_abort_on_stop(store, key, stream_id, abort))
        try:
            async for piece in body:
                await store.append(key, stream_id, piece)
        finally:
            stop.cancel()
            await asyncio.wait([stop])
            await store.end(key, stream_id)


async def _abort_on_stop(
    store: StreamStore, key: ChatKey, stream_id: str, abort: asyncio.Event
) -> None:
    await store.stopped(key, stream_id)
    abort.set()
