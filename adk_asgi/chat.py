"""``POST /chat``: one chat request — a new user turn or a continuation — run and streamed."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from google.genai import types
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from .chunks import UIMessageChunk
from .convert import EventConverter
from .encoding import ChunkEncoder
from .errors import ClientError
from .identity import Identity
from .locks import ChatBusy
from .messages import ChatRequest
from .pending import (
    approved_marker,
    chat_state,
    moved_on_answers,
    split_confirmation_answers,
)
from .sse import SSEResponse, sse_body
from .translate import Conflict, TranslationError, continuation, user_content

if TYPE_CHECKING:
    from .app import AdkApp


class _Plan:
    """What one request will do: the ADK input, the converter, the chunks before the run."""

    def __init__(
        self,
        new_message: types.Content | None,
        converter: EventConverter,
        lead: list[UIMessageChunk],
        user_message_id: str | None,
    ) -> None:
        self.new_message = new_message
        self.converter = converter
        self.lead = lead
        self.user_message_id = user_message_id


class ChatEndpoint:
    """Check the request, lock the chat, run the agent, stream the answer.

    An ASGI endpoint rather than a request → response function, so the chat lock covers the
    checks *and* the whole stream: everything that can be refused is refused with a 4xx before
    the first byte of the 200 (DESIGN.md §7.6), and no other request of the chat can slip in
    between the check and the run.
    """

    def __init__(self, owner: AdkApp) -> None:
        self.owner = owner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        owner = self.owner
        request = Request(scope, receive)
        headers: dict[str, str] = {}
        try:
            identity = await owner.identity_of(request)
            if identity.set_cookie:
                headers["set-cookie"] = identity.set_cookie
            chat = owner.decode(await owner.read_body(request))
            async with owner.locks.hold((identity.user_id, chat.id), owner.busy_timeout):
                plan = await self._plan(identity, chat)
                await self._stream(identity, chat, plan, headers, scope, receive, send)
        except ChatBusy as exc:
            await ClientError(409, str(exc)).response(headers)(scope, receive, send)
        except ClientError as exc:
            await exc.response(headers)(scope, receive, send)

    async def _plan(self, identity: Identity, chat: ChatRequest) -> _Plan:
        last = chat.messages[-1]
        if last.role == "user":
            try:
                content = user_content(last)
            except TranslationError as exc:
                raise ClientError(400, f"messages[{len(chat.messages) - 1}]: {exc}") from None
            await self._answer_open_calls(identity, chat.id)
            converter = self._converter(self.owner.new_message_id())
            return _Plan(content, converter, [], last.id)
        return await self._continue(identity, chat)

    async def _answer_open_calls(self, identity: Identity, chat_id: str) -> None:
        """The user moved on: close the browser tool calls they left open (see
        :func:`moved_on_answers`) before the new message, as live mode does."""
        owner = self.owner
        session = await owner.session_service.get_session(
            app_name=owner.app_name, user_id=identity.user_id, session_id=chat_id
        )
        if session is None:
            return
        state = chat_state(session.events)
        answers = moved_on_answers(state, owner.client_tools.keys(), owner.needs_approval)
        if answers is not None:
            await owner.session_service.append_event(session, answers)

    async def _continue(self, identity: Identity, chat: ChatRequest) -> _Plan:
        """A continuation of the assistant message: answers to its open tool calls."""
        owner = self.owner
        message = chat.messages[-1]
        session = await owner.session_service.get_session(
            app_name=owner.app_name, user_id=identity.user_id, session_id=chat.id
        )
        if session is None:
            raise ClientError(409, "this chat has no open tool call to continue")
        payloads: dict[str, Any] = chat.extra.get("confirmationPayloads", {})
        state = chat_state(session.events)
        try:
            answers = continuation(message, state, owner.needs_approval, payloads)
        except Conflict as exc:
            raise ClientError(409, str(exc)) from None
        for call in answers.released:
            await owner.session_service.append_event(session, approved_marker(call, owner.author))
        stored_first, responses = split_confirmation_answers(state, answers.responses)
        if stored_first is not None:
            await owner.session_service.append_event(session, stored_first)
        converter = self._converter(message.id, answers.known_calls)
        lead: list[UIMessageChunk] = []
        shown = answers.shown_denials(browser_runs=bool(answers.released))
        for call_id in answers.denied + answers.redenied:
            denial = converter.deny(call_id)  # (also settles the call: ADK's rejection is skipped)
            lead += denial if call_id in shown else []
        for call in answers.released:
            lead += converter.release(call.id, call.name, call.args)
        content = types.Content(role="user", parts=responses) if responses else None
        return _Plan(content, converter, lead, None)

    def _converter(self, message_id: str, known_calls: set[str] | None = None) -> EventConverter:
        return EventConverter(
            message_id=message_id,
            known_calls=known_calls or (),
            send_usage=self.owner.send_usage,
            approval_needed=self.owner.approval_needed,
            may_ask=self.owner.may_ask,
        )

    async def _stream(
        self,
        identity: Identity,
        chat: ChatRequest,
        plan: _Plan,
        headers: dict[str, str],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        owner = self.owner
        abort = asyncio.Event()
        events = None
        if plan.new_message is not None:
            events = owner.runner.run_async(
                user_id=identity.user_id,
                session_id=chat.id,
                new_message=plan.new_message,
                run_config=owner.run_config_for(plan.converter.message_id, plan.user_message_id),
                abort_signal=abort,
            )
        encoder = ChunkEncoder(v7=owner.ai_sdk_version == 7)
        body = sse_body(events, plan.converter, encoder, lead=plan.lead)
        response = SSEResponse(
            body, abort=abort, headers=headers, write_interval=owner.sse_write_interval
        )
        await response(scope, receive, send)
