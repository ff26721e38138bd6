"""``POST /chat``: one chat request — a new user turn or a continuation — run and streamed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from google.adk.sessions.session import Session
from google.genai import types
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.translate import TranslationError, user_content
from adk_asgi.errors import STORE_FAILED, ClientError, about, log_failure
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.pending import PAYLOADS_KEY
from adk_asgi.serving.again import regenerated, session_for
from adk_asgi.serving.answers import accept_answers, close_left_calls, keep_shown
from adk_asgi.serving.app_hooks import hook_failure
from adk_asgi.serving.checks import decode_and_check
from adk_asgi.serving.finish_tools import CONTINUATION
from adk_asgi.serving.identity import Identity
from adk_asgi.serving.pace import RunSignal, paced_by
from adk_asgi.serving.refusals import json_refusal
from adk_asgi.serving.request_state import state_delta
from adk_asgi.serving.services import Services
from adk_asgi.serving.session_handover import hand_over
from adk_asgi.serving.stale_sessions import retried_when_stale
from adk_asgi.serving.user_bounds import OverBound
from adk_asgi.sse.response import SSEResponse, sse_body
from adk_asgi.stores.locks import ChatBusy, ChatKey, LockUnavailable
from adk_asgi.stores.resumable import StreamStore
from adk_asgi.stores.stops import watch_for_stop
from adk_asgi.wire.chunks import UIMessageChunk
from adk_asgi.wire.decoding import OFF_LOOP
from adk_asgi.wire.encoding import SSE_DONE, ChunkEncoder
from adk_asgi.wire.messages import ChatRequest


class _Plan:
    """What one request will do: the ADK input, the converter, the chunks before the run."""

    def __init__(
        self,
        session: Session,
        new_message: types.Content | None,
        converter: EventConverter,
        lead: list[UIMessageChunk],
        user_message_id: str | None,
        state_delta: dict[str, Any] | None = None,
        user_metadata: Any = None,
    ) -> None:
        self.session = session
        """As read for the checks, with what they wrote: the run starts from it."""
        self.new_message = new_message
        self.converter = converter
        self.lead = lead
        self.user_message_id = user_message_id
        self.state_delta = state_delta
        self.user_metadata = user_metadata

    @property
    def continues(self) -> bool:
        """A continuation: its claimed answers are acted on and recorded, even if the client
        leaves (no user message is run)."""
        return self.user_message_id is None


class ChatEndpoint:
    """Check the request, lock the chat, run the agent, stream the answer.

    An ASGI endpoint rather than a request → response function, so the chat lock covers the
    checks *and* the whole stream: everything that can be refused is refused with a 4xx before
    the first byte of the 200, and no other request of the chat can slip in between the check
    and the run (docs/internals/architecture.md#invariants).
    """

    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        services = self.services
        request = Request(scope, receive)
        headers: dict[str, str] = {}
        try:
            identity = await services.identity_of(request)
            if identity.set_cookie:
                headers["set-cookie"] = identity.set_cookie
            # Counted from here to the end of its stream (serving/user_bounds.py).
            with services.user_load.request(identity.user_id):
                await self._serve(identity, request, headers, send)
        except LockUnavailable:  # the lock lives in the session database: it is unusable
            await json_refusal(ClientError(503, STORE_FAILED), headers)(scope, receive, send)
        except ChatBusy as exc:
            await json_refusal(ClientError(409, str(exc)), headers)(scope, receive, send)
        except _BodyPaused as exc:
            closing = {**headers, "connection": "close"}
            await json_refusal(exc, closing)(scope, receive, send)
        except OverBound as exc:
            # (a client that sends again at once is slowed)
            await services.user_load.pause(identity.user_id)
            await json_refusal(exc, headers)(scope, receive, send)
        except ClientError as exc:
            await json_refusal(exc, headers)(scope, receive, send)

    async def _serve(
        self, identity: Identity, request: Request, headers: dict[str, str], send: Send
    ) -> None:
        services = self.services
        scope, receive = request.scope, request.receive
        _check_json(request)
        limits = services.limits
        body = await _read_body(request, limits.max_body_size, limits.body_timeout)
        urls = services.file_url_rule(identity.user_id, scope)
        if len(body) > OFF_LOOP:  # ~25 ms a MB to decode: other requests do not wait
            chat = await asyncio.to_thread(decode_and_check, body, urls)
        else:
            chat = decode_and_check(body, urls)
        state = await self._request_state(identity, chat)
        key = services.chat_key(identity.user_id, chat.id)
        async with services.locks.hold(key, limits.busy_timeout):
            try:
                plan = await self._plan(identity, chat, state)
            except (ClientError, ChatBusy):
                raise
            except Exception as exc:
                # Nothing was sent yet: a JSON 503 rather than the server's plain 500 page.
                log_failure("the chat could not be prepared", exc, chat_id=chat.id)
                raise ClientError(503, STORE_FAILED) from None
            # The chat's path, as history reads it: its file route serves the images
            # Gemini's code execution drew (convert/code_execution.py).
            plan.converter.files_at = f"{request.url.path}/{chat.id}"
            abort = RunSignal()
            if plan.continues:  # its claimed answers are acted on
                abort.hold(CONTINUATION)  # and recorded, even if the client leaves
            # ADK's agent task starts in this context (serving/pace.py), which names the chat and
            # the answer's message in what the log says of a failure (errors.log_failure).
            with paced_by(abort), about(chat.id, plan.converter.message_id):
                await self._stream(identity, chat, plan, abort, headers, scope, receive, send)

    async def _request_state(self, identity: Identity, chat: ChatRequest) -> dict[str, Any]:
        """What the app's ``request_state`` hook makes of the body's extras (a refusal is a
        4xx): asked before the chat is locked, so a slow hook holds no other request."""
        services = self.services
        hook = services.request_state
        if hook is None:
            return {}
        try:
            return await state_delta(hook, chat.extra, identity.user_id)
        except ClientError:
            raise
        except Exception as exc:  # the app's bug: this request fails (serving/app_hooks.py)
            raise hook_failure(services.converting.on_error, "request_state", exc) from None

    async def _plan(self, identity: Identity, chat: ChatRequest, state: dict[str, Any]) -> _Plan:
        services = self.services
        if not chat.messages:  # a regenerate of a message the session holds (serving/again.py)
            session, stored = await regenerated(services, identity.user_id, chat)
            content, message_id = stored.content, stored.message_id
            return await self._user_plan(session, content, message_id, state, stored.metadata)
        last = chat.messages[-1]
        if last.role == "user":
            try:
                content = user_content(last)
            except TranslationError as exc:
                raise ClientError(400, f"{chat.where(len(chat.messages) - 1)}: {exc}") from None
            session = await session_for(services, identity.user_id, chat)
            held, adding = (
                bookkeeping.file_bytes(session.state),
                bookkeeping.content_file_bytes(content),
            )
            services.user_load.check_chat_files(identity.user_id, held, adding)
            if adding:
                state = state | {bookkeeping.FILE_BYTES_KEY: held + adding}
            return await self._user_plan(session, content, last.id, state, last.metadata)
        plan = await self._continue(identity, chat)
        plan.state_delta = state or None
        return plan

    async def _user_plan(
        self,
        session: Session,
        content: types.Content,
        message_id: str,
        state: dict[str, Any],
        metadata: Any,
    ) -> _Plan:
        """A new user turn: the browser calls the user left open are closed
        ([moving on](docs/internals/architecture.md#moving-on)), the run gets the message."""
        await close_left_calls(self.services, session, moved_on=True)
        converter = self.services.converter(self.services.new_message_id())
        delta = state | bookkeeping.title_delta(session.state, content)
        return _Plan(session, content, converter, [], message_id, delta or None, metadata)

    async def _continue(self, identity: Identity, chat: ChatRequest) -> _Plan:
        """A continuation of the assistant message: answers to its waiting tool calls."""
        services = self.services
        message = chat.messages[-1]
        session = await services.session(identity.user_id, chat.id)
        if session is None:
            raise ClientError(409, "this chat has no open tool call to continue")
        payloads: dict[str, Any] = chat.extra.get(PAYLOADS_KEY, {})
        answers, content = await accept_answers(  # a Conflict is a 409 ClientError
            services, identity.user_id, session, message, payloads
        )
        converter = self.services.converter(message.id, answers.known_calls)
        if answers.waits_on_server:
            converter.waiting_on_server()
        lead = answers.lead(converter.cards, services.tools)
        return _Plan(session, content, converter, lead, None)

    async def _stream(
        self,
        identity: Identity,
        chat: ChatRequest,
        plan: _Plan,
        abort: RunSignal,
        headers: dict[str, str],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        services = self.services
        events = None
        if plan.new_message is not None:
            hand_over(plan.session)  # not read again (serving/session_handover.py)
            run_config = services.sse_run_config(
                plan.converter, plan.user_message_id, plan.user_metadata
            )
            events = retried_when_stale(  # another writer came first (serving/stale_sessions.py)
                lambda: services.runner.run_async(
                    user_id=identity.user_id,
                    session_id=chat.id,
                    new_message=plan.new_message,
                    state_delta=plan.state_delta,
                    run_config=run_config,
                    abort_signal=abort,
                )
            )
        encoder = ChunkEncoder(services.ai_sdk_version)
        body = self._kept(
            sse_body(events, plan.converter, encoder, lead=plan.lead), identity, chat, plan
        )
        interval = services.streaming.sse_write_interval
        keep_alive = services.streaming.sse_keep_alive
        store = services.streams
        if store is None:
            response = SSEResponse(
                body, abort=abort, headers=headers, write_interval=interval, keep_alive=keep_alive
            )
            await response(scope, receive, send)
            return
        # Resumable: the run goes on without its reader, every byte kept for GET .../stream.
        key = services.chat_key(identity.user_id, chat.id)
        stream_id = await store.begin(key)
        stop = asyncio.create_task(_abort_on_stop(store, key, stream_id, abort))
        recorded = _recorded(body, store, key, stream_id)
        response = SSEResponse(
            recorded,
            abort=abort,
            headers=headers,
            write_interval=interval,
            detached=True,
            keep_alive=keep_alive,
        )
        try:
            await response(scope, receive, send)
        finally:
            stop.cancel()
            await asyncio.wait([stop])
            await store.end(key, stream_id)

    async def _kept(
        self,
        body: AsyncGenerator[bytes, None],
        identity: Identity,
        chat: ChatRequest,
        plan: _Plan,
    ) -> AsyncGenerator[bytes, None]:
        """``body``, with what an answer that failed or was stopped had shown recorded just
        before its last piece (``[DONE]``) goes out: a page that reloads as soon as the
        stream ends finds it in history."""
        async with aclosing(body):
            async for piece in body:
                if piece.endswith(SSE_DONE):
                    await self._keep_shown(identity, chat, plan.converter)
                yield piece

    async def _keep_shown(
        self, identity: Identity, chat: ChatRequest, converter: EventConverter
    ) -> None:
        """An answer that failed or was stopped is kept as the client saw it."""
        if converter.failure is not None:
            shown, error_text = converter.failure
        elif converter.stopped or converter.cards.cut:
            shown, error_text = converter.stopped, None
        else:
            return
        try:
            session = await self.services.session(identity.user_id, chat.id)
        except Exception as exc:  # the answer was sent: only its record is lost
            log_failure("a failed answer could not be recorded", exc)
            return
        started_at = converter.facts.started_at
        await keep_shown(
            self.services,
            session,
            converter.message_id,
            shown,
            error_text,
            started_at,
            converter.cards.cut,
            converter.cards.running.failed,
        )


async def _recorded(
    body: AsyncGenerator[bytes, None], store: StreamStore, key: ChatKey, stream_id: str
) -> AsyncGenerator[bytes, None]:
    """``body``, each piece appended to the stream store as it goes out."""
    async with aclosing(body):
        async for piece in body:
            await store.append(key, stream_id, piece)
            yield piece


async def _abort_on_stop(
    store: StreamStore, key: ChatKey, stream_id: str, abort: asyncio.Event
) -> None:
    """The user's stop (``DELETE .../stream``) aborts the run, as a disconnect does when
    streams are not resumable. A store that fails is asked again (:mod:`adk_asgi.stores.stops`)."""
    await watch_for_stop(store, key, stream_id)
    abort.set()


def _check_json(request: Request) -> None:
    """Only a JSON body is a chat request. A page of another origin can send ``text/plain``,
    form or body-less POSTs without asking first (no CORS preflight), with the browser's
    cookie when it is of the same site: a chat turn run for it would be a forged request. The
    stock transports send ``application/json``, which needs the preflight CORS decides on."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise ClientError(415, "content-type: expected application/json")


class _BodyPaused(ClientError):
    """A 408 that closes the connection: what is left of the body would be read as the next
    request (the server would keep the connection open otherwise): sent with
    ``connection: close``."""


async def _read_body(request: Request, limit: int, pause: float) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed ``limit`` bytes,
    and with 408 when it pauses for ``pause`` seconds (a client that stops sending mid-body
    would hold its connection; the server closes it after the 408, the body being unread)."""
    too_large = ClientError(413, f"the request body is larger than {limit} bytes")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    stream = aiter(request.stream())
    while True:
        try:
            async with asyncio.timeout(pause):
                chunk = await anext(stream)
        except StopAsyncIteration:
            return b"".join(chunks)
        except TimeoutError:
            raise _BodyPaused(408, f"the request body paused for over {pause:g} s") from None
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
