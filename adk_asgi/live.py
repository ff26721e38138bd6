"""The live transport: ``WS /live`` runs ``Runner.run_live`` for one chat per connection.

It speaks the AI SDK v7 ``WebSocketChatTransport`` protocol (client ``send``/``resume``/``abort``,
server ``start``/``chunk``/``end``/``error``/``no-active``), so a v7 frontend uses the stock
transport; ``transport.js`` speaks the same frames for v6. Our extension, for clients that ask
for it (``?audio=1``): binary frames of PCM16 mono audio (16 kHz up, 24 kHz down) and the text
frames ``activity-start``, ``activity-end``, ``audio-end`` (up) and ``interrupted`` (down).

One anyio task group per connection: the upstream task reads the socket and feeds the
``LiveRequestQueue`` and the bridge; the downstream task iterates ``run_live`` and turns events
into frames; a writer task owns the socket's send side. The socket is never read in the task
that iterates ``run_live`` (the prototype's "deadlock"). Disconnect, an error or the end of the
session cancels the group, closes the queue and cancels every pending wait: a tool waiting for
the user sees the cancellation, and no task outlives the connection.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from anyio.abc import TaskGroup
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.live_request_queue import LiveRequest, LiveRequestQueue
from google.adk.events.event import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from starlette.websockets import WebSocket, WebSocketDisconnect

from .errors import ClientError
from .live_bridge import Frame, LiveBridge
from .locks import ChatBusy
from .messages import CHAT_ID, CHAT_ID_RULE, ChatRequest, RequestError, decode_chat_request
from .translate import Conflict, TranslationError, user_content

if TYPE_CHECKING:
    from .app import AdkApp

logger = logging.getLogger("adk_asgi")

AUDIO_IN_MIME = "audio/pcm;rate=16000"
MAX_AUDIO_BACKLOG = 10 * 32_000
"""Bytes of microphone audio (10 s of PCM16 at 16 kHz) the model may fall behind by before the
connection stops reading the socket, so TCP slows the client down instead of memory growing."""
BUSY = 1013
"""The close code of a connection whose chat is busy elsewhere: "try again later"."""
_FRAME = msgspec.json.Decoder(dict[str, msgspec.Raw])
_STR = msgspec.json.Decoder(str)
_OUTBOX_SIZE = 1024
ABANDON_GRACE = 2.0
"""Seconds a closing connection gives ADK to record the answers to calls the user left."""


class LiveToolGate(BasePlugin):
    """Plugin that lends ADK's tool pipeline to the live bridge of the running connection.

    Registered on every ``AdkApp``; outside a live connection of this app it does nothing.
    """

    def __init__(self, owner: AdkApp) -> None:
        super().__init__(name="adk_asgi_live_tool_gate")
        self.owner = owner

    def _bridge(self, context: InvocationContext) -> LiveBridge | None:
        queue = context.live_request_queue
        return None if queue is None else self.owner.live_bridges.get(id(queue))

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        bridge = self._bridge(tool_context.get_invocation_context())
        return None if bridge is None else await bridge.gate(tool, tool_args, tool_context)

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        bridge = self._bridge(tool_context.get_invocation_context())
        if bridge is None:
            return None
        call_id = tool_context.function_call_id
        replaced: dict[str, Any] | None = None
        asked = tool_context.actions.requested_tool_confirmations
        if call_id and call_id in asked and tool_context.tool_confirmation is None:
            replaced = result = await bridge.confirm(tool, tool_args, tool_context)
        bridge.tool_finished(call_id, result)
        return replaced

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        bridge = self._bridge(invocation_context)
        return None if bridge is None else bridge.tag(event)


class _LiveQueue(LiveRequestQueue):
    """A ``LiveRequestQueue`` that counts the microphone audio the model has not taken yet.

    ``send_realtime`` never blocks (ADK's queue is unbounded), so a client that streams audio
    faster than the model takes it would grow the server's memory without limit; the upstream
    task waits on :meth:`room` instead.
    """

    def __init__(self) -> None:
        super().__init__()
        self.audio_backlog = 0
        self._taken = asyncio.Event()

    def send_realtime(self, blob: types.Blob) -> None:
        self.audio_backlog += len(blob.data or b"")
        super().send_realtime(blob)

    async def get(self) -> LiveRequest:
        request = await super().get()
        if request.blob is not None:
            self.audio_backlog -= len(request.blob.data or b"")
            self._taken.set()
        return request

    async def room(self, limit: int) -> None:
        """Return once no more than ``limit`` bytes of audio wait for the model."""
        while self.audio_backlog > limit:
            self._taken.clear()
            await self._taken.wait()


class LiveEndpoint:
    """The ASGI endpoint of ``WS /live``."""

    def __init__(self, owner: AdkApp) -> None:
        self.owner = owner

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        websocket = WebSocket(scope, receive, send)
        try:
            identity = await self.owner.identity_of(websocket)
            chat_id = websocket.query_params.get("chatId")
            if chat_id is not None and not CHAT_ID.match(chat_id):
                raise ClientError(400, f"chatId: {CHAT_ID_RULE}")
        except ClientError as exc:
            await websocket.close(code=1008, reason=exc.reason)
            return
        # Browsers cannot set headers on a WebSocket, so a token may travel as a subprotocol;
        # the handshake fails unless the server echoes one of the offered protocols.
        offered = websocket.scope.get("subprotocols") or []
        # A browser whose first request is this handshake gets its identity cookie here, or
        # its next HTTP request (history after a reload) would be a stranger's.
        cookie = [(b"set-cookie", identity.set_cookie.encode())] if identity.set_cookie else []
        await websocket.accept(subprotocol=offered[0] if offered else None, headers=cookie)
        connection = _Connection(self.owner, websocket, identity.user_id)
        await connection.run()


class _Connection:
    def __init__(self, owner: AdkApp, websocket: WebSocket, user_id: str) -> None:
        self.owner = owner
        self.websocket = websocket
        self.user_id = user_id
        params = websocket.query_params
        self.audio = params.get("audio") == "1"
        self.v7 = params.get("sdk", "7") != "6"
        self.chat_id: str | None = params.get("chatId") or None
        self.queue = _LiveQueue()
        self.inbox, self.outbox = anyio.create_memory_object_stream[Frame](_OUTBOX_SIZE)
        self.bridge = LiveBridge(owner, self.queue, self._put, v7=self.v7, audio=self.audio)
        self.group: TaskGroup | None = None
        self.started = anyio.Event()
        self.failure: str | None = None
        self.close_code = 1000
        self.dropped_audio = False

    def _put(self, frame: Frame) -> None:
        try:
            self.inbox.send_nowait(frame)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session is over; nothing more goes out
        except anyio.WouldBlock:
            logger.warning("adk_asgi: a live client is not reading; closing its connection")
            self.inbox.close()

    async def run(self) -> None:
        self.owner.live_bridges[id(self.queue)] = self.bridge
        try:
            async with anyio.create_task_group() as group:
                self.group = group
                group.start_soon(self._writer)
                if self.chat_id is not None:
                    group.start_soon(self._downstream, self.chat_id)
                await self._upstream()
                if self.bridge.abandon_waits():
                    with anyio.move_on_after(ABANDON_GRACE):
                        await self.bridge.settled.wait()
                group.cancel_scope.cancel()
        finally:
            self.queue.close()
            self.bridge.close()
            self.inbox.close()
            self.outbox.close()
            self.owner.live_bridges.pop(id(self.queue), None)

    # --- socket → agent ----------------------------------------------------------------------

    async def _upstream(self) -> None:
        while True:
            try:
                message = await self.websocket.receive()
            except WebSocketDisconnect:
                return
            if message["type"] == "websocket.disconnect":
                return
            if message.get("bytes") is not None:
                if self.audio:
                    await self._on_audio(message["bytes"])
                continue
            text = message.get("text")
            if text is not None:
                await self._on_text(text)

    async def _on_audio(self, pcm: bytes) -> None:
        queue = self.queue
        if queue.audio_backlog > MAX_AUDIO_BACKLOG:
            if not self.started.is_set() or self.failure is not None:
                # No session takes audio yet (its first ``send`` may be behind this frame, so
                # waiting could never end): what is past the limit is dropped.
                if not self.dropped_audio:
                    logger.warning("adk_asgi: microphone audio dropped: no live session yet")
                self.dropped_audio = True
                return
            await queue.room(MAX_AUDIO_BACKLOG // 2)
        queue.send_realtime(types.Blob(mime_type=AUDIO_IN_MIME, data=pcm))

    async def _on_text(self, text: str) -> None:
        try:
            frame = _FRAME.decode(text)
            kind = _STR.decode(frame["type"]) if "type" in frame else ""
            request_id = _STR.decode(frame["requestId"]) if "requestId" in frame else ""
        except (msgspec.DecodeError, KeyError):
            self.bridge.frame(type="error", requestId="", errorText="not a JSON frame")
            return
        if kind == "send":
            await self._on_send(request_id, text)
        elif kind == "resume":
            self.bridge.resume(request_id)
        elif kind == "abort":
            self.bridge.abort(request_id)
        elif kind == "activity-start":
            self.queue.send_activity_start()
        elif kind == "activity-end":
            self.queue.send_activity_end()
            self.bridge.speech_ended()
        elif kind == "audio-end":
            self.queue.send_audio_stream_end()
            self.bridge.speech_ended()
        elif kind == "ping":
            self.bridge.frame(type="pong")
        else:
            self.bridge.frame(
                type="error", requestId=request_id, errorText=f"unknown frame {kind!r}"
            )

    async def _on_send(self, request_id: str, text: str) -> None:
        try:
            chat = _decode_send(text)
            self.owner.check(chat)
            if self.chat_id is None:
                self.chat_id = chat.id
                assert self.group is not None
                self.group.start_soon(self._downstream, chat.id)
            elif chat.id != self.chat_id:
                raise ClientError(409, f"this connection serves chat {self.chat_id!r}")
            await self.started.wait()
            if self.failure is not None:
                self.bridge.frame(type="error", requestId=request_id, errorText=self.failure)
                self.inbox.close()  # the writer sends that, then closes the socket
                return
            if self.bridge.busy():
                raise ClientError(409, "a response is still streaming on this connection")
            last = chat.messages[-1]
            if last.role == "user":
                self.bridge.send_user_turn(request_id, user_content(last), last.id)
            else:
                self.bridge.send_answers(request_id, chat)
        except (ClientError, RequestError, TranslationError, Conflict) as exc:
            reason = exc.reason if isinstance(exc, ClientError) else str(exc)
            self.bridge.frame(type="error", requestId=request_id, errorText=reason)

    # --- agent → socket ----------------------------------------------------------------------

    async def _downstream(self, chat_id: str) -> None:
        owner = self.owner
        try:
            async with owner.locks.hold((self.user_id, chat_id), owner.busy_timeout):
                session = await owner.session_service.get_session(
                    app_name=owner.app_name, user_id=self.user_id, session_id=chat_id
                )
                if session is not None and _ends_with_user_turn(session.events):
                    self.bridge.expect_history_reply()
                self.started.set()
                events = owner.live_runner.run_live(
                    user_id=self.user_id,
                    session_id=chat_id,
                    live_request_queue=self.queue,
                    run_config=owner.live_run_config(audio=self.audio),
                )
                async for event in events:
                    self.bridge.on_event(event)
            self.failure = "the live session ended"
            self.close_code = 1011
            self.bridge.fail(self.failure)
        except ChatBusy:
            # The connection stays open until its request is refused with this reason.
            self.failure = "this chat is busy in another request or connection"
            self.close_code = BUSY
        except Exception as exc:
            # run_live raises without an error event (unlike run_async): report it the way
            # ADK's error events read over SSE, "<ExceptionClass>: <message>".
            logger.exception("adk_asgi: the live session failed")
            self.bridge.fail(f"{type(exc).__name__}: {exc}")
            self.failure = "the live session ended after an error"
            self.close_code = 1011
        finally:
            self.started.set()
            if self.failure is not None and self.close_code != BUSY:
                self.inbox.close()  # the writer flushes what is queued, then closes the socket

    async def _writer(self) -> None:
        """The only sender on the socket; when the session is over it flushes and closes."""
        async with self.outbox:
            async for frame in self.outbox:
                if isinstance(frame, bytes):
                    await self.websocket.send_bytes(frame)
                else:
                    await self.websocket.send_text(frame)
        await self.websocket.close(code=self.close_code)
        assert self.group is not None
        self.group.cancel_scope.cancel()


def _ends_with_user_turn(events: list[Event]) -> bool:
    """Whether the model answers the history as the session opens: Gemini does when it ends
    with the user's turn (text, or the answers a closing connection gave to waiting calls)."""
    for event in reversed(events):
        if event.content is not None and event.content.parts and not event.partial:
            return event.content.role == "user"
    return False


def _decode_send(text: str) -> ChatRequest:
    """A ``send`` frame carries the same fields as the SSE body (``body`` holds the extras)."""
    try:
        chat = decode_chat_request(text.encode())
    except RequestError as exc:
        raise ClientError(400, str(exc)) from None
    body = chat.extra.get("body")
    if isinstance(body, dict):
        chat.extra = {**chat.extra, **body}
    return chat
