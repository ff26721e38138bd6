"""One live connection, from the accepted socket to its close: an ``asyncio.TaskGroup``.

What the frames mean is decided by the sans-I/O :class:`~.protocol.LiveProtocol`; this module
only moves bytes and carries out the machine's outputs (:mod:`.outputs`). Its named tasks: the
``reader`` reads the socket and feeds the protocol and the ``LiveRequestQueue`` (microphone
audio through :mod:`.microphone`); ``run_live`` (:mod:`.session`) holds the chat and iterates
the session's events into the protocol; the ``writer`` owns the socket's send side
(:mod:`.outbox`); a ``replay`` answers a ``resume`` from the stream store. An input the
protocol's phase does not allow closes the connection with the error's code and reason
(:mod:`.phases`).
The protocol's deadlines (held deltas, a resume waiting for speech) are a timer handle of the
event loop, not a task: under load a deadline comes every few deltas, and a task's wake-up
costs more than the call. The socket is never read in the task
that iterates ``run_live`` (the prototype's deadlock). Disconnect, an error or the end of the
session cancels the group, closes the queue and cancels every pending wait: a tool waiting for
the user sees the cancellation, and no task outlives the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Coroutine
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from adk_asgi.errors import ClientError, about, log_failure
from adk_asgi.live.extras import Decoded, decode_send, with_request_state
from adk_asgi.live.microphone import Microphone
from adk_asgi.live.outbox import NOT_READING, Outbox, frame_size, too_large
from adk_asgi.live.outputs import (
    Close,
    OpenSession,
    Output,
    Record,
    Replay,
    Resolve,
    Send,
    Settle,
    StopReplay,
    ToModel,
)
from adk_asgi.live.phases import LiveProtocolError
from adk_asgi.live.protocol import LiveProtocol
from adk_asgi.live.queue import LiveQueue
from adk_asgi.live.session import LiveSession
from adk_asgi.live.tools import ToolWaits
from adk_asgi.serving import load
from adk_asgi.serving.app_hooks import hook_failure
from adk_asgi.serving.checks import frame_head
from adk_asgi.serving.services import Services
from adk_asgi.wire.decoding import OFF_LOOP
from adk_asgi.wire.encoding import named_sdk_version
from adk_asgi.wire.messages import ChatRequest

logger = logging.getLogger("adk_asgi")


class Connection:
    """One live connection: its task group, from the accepted socket to its close."""

    def __init__(self, services: Services, websocket: WebSocket, user_id: str) -> None:
        self.services = services
        self.websocket = websocket
        self.user_id = user_id
        params = websocket.query_params
        self.audio = params.get("audio") == "1"
        limits = services.limits
        self.protocol = LiveProtocol(
            tools=services.tools,
            new_message_id=services.new_message_id,
            clock=asyncio.get_running_loop().time,
            sdk=named_sdk_version(params.get("sdk"), services.ai_sdk_version),
            audio=self.audio,
            client_activity=services.client_activity(audio=self.audio),
            converting=services.converting,
            wall_clock=time.time,
            write_interval=services.streaming.live_write_interval,
            under_load=load.under_load,
            stored_streams=services.streams is not None,
            chats_at=websocket.url.path.removesuffix("/live") + "/chat",
            check_files=functools.partial(services.user_load.check_chat_files, user_id),
        )
        self.waits = ToolWaits(
            self.protocol,
            self.carry_out,
            approval_timeout=limits.approval_timeout,
            client_tool_timeout=limits.client_tool_timeout,
        )
        self.queue = LiveQueue(self.waits)
        self.outbox = Outbox()
        self.close_code = 1000
        self.close_reason = ""
        self.microphone = Microphone(self.queue, self.protocol) if self.audio else None
        self._tasks: set[asyncio.Task[None]] = set()
        self._group: asyncio.TaskGroup | None = None
        self._alarm: asyncio.TimerHandle | None = None  # calls the protocol at its deadline
        self._armed: float | None = None  # that deadline
        self._ended = False
        self.session = LiveSession(
            services,
            user_id,
            self.protocol,
            self.carry_out,
            queue=self.queue,
            waits=self.waits,
            audio=self.audio,
        )
        self._replays: dict[str, asyncio.Task[None]] = {}
        self._answered: asyncio.Event | None = None
        """Set once no response is under way, while the client is gone (see :meth:`_reader`)."""
        self._counted = False
        """A response is under way, and counted in the process's streams
        (:mod:`adk_asgi.serving.load`)."""

    async def run(self) -> None:
        chat_id = self.websocket.query_params.get("chatId") or None
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                self._spawn(self._writer(), "writer")
                self._spawn(self._reader(), "reader")
                if chat_id is not None:
                    self.carry_out(self.protocol.bind(chat_id))
        finally:
            self._ended = True
            self._arm(None)
            self._count(False)
            self.queue.close()
            self.waits.cancel_all()
            self.outbox.close()

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        assert self._group is not None
        task = self._group.create_task(self._guarded(work), name=f"adk_asgi live {name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guarded(self, work: Coroutine[Any, Any, None]) -> None:
        """Run one of the connection's tasks. An input its protocol machine's phase does not
        allow (:mod:`.phases`) closes the connection with the error's code and reason,
        once what is queued is sent, rather than failing the task group (a 1006)."""
        try:
            await work
        except LiveProtocolError as exc:
            chat_id = self.protocol.chat_id
            log_failure(f"the live connection closes: {exc.reason}", exc, chat_id=chat_id)
            self._close(exc.code, exc.reason)

    def _request_state_failed(self, exc: Exception) -> ClientError:
        return hook_failure(self.services.converting.on_error, "request_state", exc)

    def _stop(self) -> None:
        """End the connection: every other task of it is cancelled."""
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()

    def carry_out(self, outputs: list[Output]) -> None:
        """Do what the protocol asks, in order."""
        for output in outputs:
            if isinstance(output, Send):
                self.outbox.put(output.data)
            elif isinstance(output, ToModel):
                self.queue.send(output.request, after_results=output.after_results)
            elif isinstance(output, Resolve):
                self.waits.resolve(output.call_id, output.value)
            elif isinstance(output, Settle):
                self.session.settles.put_nowait(output)
            elif isinstance(output, Record):
                if self.session.recorder is not None:
                    self.session.recorder.record(output)
            elif isinstance(output, Replay):
                self._replay(output.request_id)
            elif isinstance(output, StopReplay):
                task = self._replays.pop(output.request_id, None)
                if task is not None:
                    task.cancel()
            elif isinstance(output, OpenSession):
                self._spawn(self.session.run(output.chat_id), "run_live")
            elif isinstance(output, Close) and not self.outbox.closed:
                self.close_code, self.close_reason = output.code, output.reason
                self.outbox.close()  # the writer sends what is queued, then closes the socket
        deadline = self.protocol.deadline
        if deadline != self._armed and not self._ended:
            self._arm(deadline)
        streaming = self.protocol.streaming
        if streaming != self._counted:
            self._count(streaming)
        if self._answered is not None and not streaming:
            self._answered.set()

    def _count(self, streaming: bool) -> None:
        """Count this connection among the process's streams while a response is under way:
        deltas are merged into fewer frames as the streams grow (:mod:`adk_asgi.serving.load`)."""
        if streaming and not self._counted:
            load.stream_began()
        elif self._counted and not streaming:
            load.stream_ended()
        self._counted = streaming

    # --- socket → agent ----------------------------------------------------------------------

    async def _reader(self) -> None:
        limit = self.services.limits.frame_size
        while True:
            await self.outbox.room()  # a client that floods waits for its answers to go out
            try:
                message = await self.websocket.receive()
            except WebSocketDisconnect:
                break
            if message["type"] == "websocket.disconnect":
                break
            data, text = message.get("bytes"), message.get("text")
            if (len(data) if data is not None else frame_size(text or "")) > limit:
                self._close(*too_large(limit))  # the writer closes once what is queued is sent
                return
            if data is not None:
                if self.microphone is not None:
                    await self.microphone.take(data)
                continue
            if text is not None:
                decoded: Decoded = None
                hook = self.services.request_state
                if len(text) > OFF_LOOP:  # decoded in a thread: other clients do not wait
                    decoded = await asyncio.to_thread(decode_send, text)
                elif hook is not None:
                    decoded = decode_send(text)
                if hook is not None and isinstance(decoded, ChatRequest):  # live/extras.py
                    head = frame_head(text)  # (a hook's failure names the chat and request)
                    with about(decoded.id, head[1] if head else None):
                        decoded = await with_request_state(
                            hook, self.user_id, decoded, self._request_state_failed
                        )
                self.carry_out(self.protocol.receive(text, decoded))
        self.outbox.client_gone()
        if self.session.recorder is not None and self.protocol.streaming:
            await self._finish_unread()
        # Calls still waiting stay open in the session (live/durable.py): a new connection, on any
        # worker, or an SSE request answers them.
        self._stop()

    async def _finish_unread(self) -> None:
        """The client went away mid-answer (a reload, a dropped network) and its answers are
        resumable: the model finishes the answer into the stream store, so a new connection
        replays it, and it is stored, so the model never answers that turn again — within
        ``live_detached_timeout``, which a reconnecting client waits for the chat. (A live turn
        cannot be stopped midway — the Live API has no such request — so ``DELETE
        /chat/{id}/stream`` does not end it: it would only leave the turn to be answered
        again.)"""
        self._answered = answered = asyncio.Event()
        try:
            async with asyncio.timeout(self.services.limits.live_detached_timeout):
                await answered.wait()
        except TimeoutError:
            logger.warning("adk_asgi: a live answer nobody reads was cut short")

    def _replay(self, request_id: str) -> None:
        """Answer a ``resume`` from the stream store: the chat's answer under way (written by
        another connection, maybe on another worker) from its start, followed to its end."""
        assert self.protocol.chat_id is not None
        store = self.services.streams
        assert store is not None
        key = self.services.chat_key(self.user_id, self.protocol.chat_id)

        async def replay() -> None:
            try:
                stream_id = await store.active(key)
                if stream_id is None:
                    self.carry_out(self.protocol.replay_ended(request_id, found=False))
                    return
                self.carry_out(self.protocol.replay_started(request_id))
                pieces = store.replay(key, stream_id)
                try:
                    async for piece in pieces:
                        self.carry_out(self.protocol.replayed(request_id, piece))
                finally:
                    await pieces.aclose()
                self.carry_out(self.protocol.replay_ended(request_id, found=True))
            finally:
                self._replays.pop(request_id, None)

        self._replays[request_id] = self._spawn(replay(), "replay")

    # --- agent → socket ----------------------------------------------------------------------

    async def _writer(self) -> None:
        """The only sender on the socket; when the session is over it flushes and closes."""
        while (frame := await self.outbox.get()) is not None:
            try:
                if isinstance(frame, bytes):
                    await self.websocket.send_bytes(frame)
                else:
                    await self.websocket.send_text(frame)
            except (OSError, RuntimeError, WebSocketDisconnect):
                self.outbox.client_gone()  # the reader sees the disconnect and decides
        if self.outbox.overflowed:
            self.close_code, self.close_reason = NOT_READING
        if not self.outbox.gone:
            with contextlib.suppress(OSError, RuntimeError, WebSocketDisconnect):
                await self.websocket.close(code=self.close_code, reason=self.close_reason)
        self._stop()

    def _close(self, code: int, reason: str) -> None:
        """Close the connection with ``code`` and ``reason`` once what is queued is sent."""
        if not self.outbox.closed:
            self.close_code, self.close_reason = code, reason
            self.outbox.close()

    def _arm(self, deadline: float | None) -> None:
        """Call the protocol back at ``deadline`` (its clock is the loop's), or never."""
        if self._alarm is not None:
            self._alarm.cancel()
        self._armed = deadline
        loop = asyncio.get_running_loop()
        self._alarm = None if deadline is None else loop.call_at(deadline, self._ring)

    def _ring(self) -> None:
        self._alarm = self._armed = None
        try:
            self.carry_out(self.protocol.tick())
        except Exception as exc:  # the connection ends with it, as with any of its tasks'
            self._spawn(_raise(exc), "timer")


async def _raise(exc: Exception) -> None:
    raise exc
