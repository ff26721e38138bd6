"""The state of one live connection: request streams over a continuous ``run_live`` session,
and the human-in-the-loop waits that ADK cannot do in live mode.

The AI SDK asks for a response per request (``send`` → ``start``, ``chunk``…, ``end``) while a
live session never stops. A request stream therefore ends at the model's ``turn_complete`` — or
earlier, when the turn pauses because a tool waits for the user (an approval) or the browser (a
client tool), so the client, which only acts on a finished stream, can answer. The answer
arrives as the next ``send``; its outcome and the rest of the turn stream under that request.

ADK 2.13 cannot confirm a tool in live mode, but it does run plugin tool callbacks there. The
bridge's :class:`LiveToolGate` plugin holds a gated call in ``before_tool_callback`` until the
user decides (or a timeout denies it), then lets ADK run the tool (approved) or answers the model
with ADK's own rejection; a client tool's call waits for the browser's result the same way. The
results go through ADK's normal tool pipeline, so they are persisted like any other.

Every method here is synchronous except the waits, and all of them run on the connection's
event loop, so the order of chunks is the order of calls: no lock is needed.

Text deltas are coalesced into fewer frames (:mod:`.coalesce`); a ``resume`` replays them one by
one, as they were made.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from google.adk.agents.live_request_queue import LiveRequest, LiveRequestQueue
from google.adk.events.event import Event
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from .chunks import Finish, ToolApprovalRequest, UIMessageChunk
from .coalesce import DeltaCoalescer
from .convert import EventConverter, approval_descriptor
from .encoding import ChunkEncoder
from .messages import ChatRequest
from .pending import (
    LIVE_USER_MESSAGE_KEY,
    METADATA_KEY,
    MOVED_ON,
    PAYLOADS_KEY,
    REJECTED,
    ChatState,
    ToolCall,
    client_approval_id,
)
from .tools import ClientTool
from .translate import Conflict, continuation

if TYPE_CHECKING:
    from .app import AdkApp

Frame = str | bytes
TIMED_OUT = {"error": "The browser did not answer in time."}
LEFT = {"error": "The user left before the browser answered."}
VOICE_ANSWER_WAIT = 10.0
"""How long a ``resume`` after the user stopped talking waits for the model's answer to start."""
_FRAME = msgspec.json.Encoder()


@dataclass(slots=True)
class _Wait:
    call: ToolCall
    kind: Literal["approval", "result"]
    future: asyncio.Future[Any]
    asked: bool = False


@dataclass(slots=True)
class _Response:
    """One assistant response: its converter, and its chunks so far (for a resume replay).

    ``earlier`` holds the chunks of the earlier responses of the same message (this one
    continues a paused turn): every AI SDK client rebuilds a resumed message from scratch, so a
    replay must start at the message's beginning, not at this response's.
    """

    converter: EventConverter
    request_id: str | None = None
    chunks: list[UIMessageChunk] = field(default_factory=list)
    sent: int = 0
    earlier: list[UIMessageChunk] = field(default_factory=list)
    key: str = field(default_factory=lambda: secrets.token_hex(4))
    """Tells this response's steps from those of the message's other responses (history)."""
    answered: bool = False
    """The model has said something into it (an ``interrupted`` can only cut that short)."""

    @property
    def message_id(self) -> str:
        return self.converter.message_id


class LiveBridge:
    def __init__(
        self,
        owner: AdkApp,
        queue: LiveRequestQueue,
        send: Callable[[Frame], None],
        *,
        v7: bool,
        audio: bool,
    ) -> None:
        self.owner = owner
        self.queue = queue
        self._sink = send
        self.deltas = DeltaCoalescer[_Response](owner.live_write_interval, self._send_chunk)
        self.encoder = ChunkEncoder(v7=v7)
        self.audio = audio
        self.response: _Response | None = None
        self.calls: dict[str, ToolCall] = {}
        self.waits: dict[str, _Wait] = {}
        self.early_results: dict[str, Any] = {}
        self.decisions: dict[str, bool] = {}
        self.batch: list[str] = []
        self.finished_calls: set[str] = set()
        self.approved_client_calls: set[str] = set()
        self.descriptors: dict[str, Any] = {}
        """Call id → what a tool asked the user (``request_confirmation(hint, payload)``)."""
        self.payloads: dict[str, Any] = {}
        """Call id → the payload the user confirmed it with (``confirmationPayloads``)."""
        self.turn_called_tools = False
        self.unclaimed: list[_Response] = []
        """Responses that ended while no request was open, oldest first, for ``resume``."""
        self.draining: _Response | None = None
        """A response whose turn a new message cut short: the turn's last events are its own."""
        self.last_message: tuple[str, list[UIMessageChunk]] = ("", [])
        """The id and chunks so far of the message the last response belonged to."""
        self.abandoned: set[str] = set()
        self.settled = asyncio.Event()
        self.voice_answer_due = False
        self.parked_resume: tuple[str, asyncio.TimerHandle] | None = None

    # --- frames ------------------------------------------------------------------------------

    def _send(self, frame: Frame) -> None:
        self.deltas.flush()  # a held delta goes first: frames keep their order
        self._sink(frame)

    def frame(self, **fields: Any) -> None:
        self._send(_FRAME.encode(fields).decode())

    def _emit(self, chunks: list[UIMessageChunk]) -> None:
        response = self.response
        if response is None:
            return
        for chunk in chunks:
            admitted = self.encoder.admit(chunk)
            if admitted is None:
                continue
            response.chunks.append(admitted)
            if response.request_id is not None:
                self.deltas.deliver(response, admitted)

    def _send_chunk(self, response: _Response, chunk: UIMessageChunk) -> None:
        frame = {
            "type": "chunk",
            "requestId": response.request_id,
            "sequence": response.sent,
            "chunk": chunk,
        }
        self._sink(_FRAME.encode(frame).decode())
        response.sent += 1

    def _end_response(self, chunks: list[UIMessageChunk]) -> None:
        response = self.response
        if response is None:
            return
        self._emit(chunks)
        if response.request_id is not None:
            self.frame(type="end", requestId=response.request_id)
        else:
            self.unclaimed.append(response)  # nobody read it yet: kept for a ``resume``
        # The message so far, without its ``finish``: a continuation may follow.
        so_far: list[UIMessageChunk] = [c for c in response.chunks if not isinstance(c, Finish)]
        self.last_message = (response.message_id, response.earlier + so_far)
        self.response = None

    def _new_response(self, message_id: str, known_calls: set[str] | None = None) -> _Response:
        converter = EventConverter(
            message_id=message_id,
            known_calls=set(self.calls) if known_calls is None else known_calls,
            send_usage=self.owner.send_usage,
            approval_needed=self.owner.approval_needed,
            live=True,
        )
        last_id, last_chunks = self.last_message
        return _Response(converter, earlier=list(last_chunks) if last_id == message_id else [])

    # --- client frames -----------------------------------------------------------------------

    def busy(self) -> bool:
        return self.response is not None and self.response.request_id is not None

    def send_user_turn(self, request_id: str, content: types.Content, message_id: str) -> None:
        """A new user message: pending waits are abandoned (denied), the model gets the text.

        A response still under way (aborted, or the model speaking unasked) is not this
        message's: the rest of its turn, up to the model's ``interrupted`` or
        ``turn_complete``, is drained into it, so it neither ends nor fills the new response.
        What nobody claimed stays in the session, not the stream.
        """
        for wait in list(self.waits.values()):
            self._resolve(wait, False if wait.kind == "approval" else MOVED_ON)
        if self.response is not None:
            self.draining, self.response = self.response, None
        self.unclaimed.clear()
        self._unpark(answer=True)
        # A new message: the answers just given to old calls belong to their own messages.
        self.response = self._new_response(self.owner.new_message_id(), known_calls=set())
        self._open(request_id, [])
        self.queue.send(
            LiveRequest(content=content, state_delta={LIVE_USER_MESSAGE_KEY: message_id})
        )

    def send_answers(self, request_id: str, chat: ChatRequest) -> None:
        """A continuation: answers to the waits of the paused turn; raises :class:`Conflict`."""
        message = chat.messages[-1]
        try:
            answers = continuation(message, self._state(), self._needs_approval)
        except Conflict:
            # Answers to calls that are closed already (an approval that timed out): the
            # response the server gave that message meanwhile is the truth; send it.
            if not self._claim(request_id, message.id):
                raise
            return
        self.response = self._new_response(message.id, answers.known_calls | set(self.calls))
        lead: list[UIMessageChunk] = []
        payloads: dict[str, Any] = chat.extra.get(PAYLOADS_KEY, {})
        tools = self.owner.client_tools
        in_browser = any(isinstance(tools.get(c.name), ClientTool) for c in answers.released)
        shown = answers.shown_denials(browser_runs=in_browser)
        for call_id in answers.denied:
            denial = self.response.converter.deny(call_id)
            lead += denial if call_id in shown else []
            self._resolve(self.waits[call_id], False)
        for call_id in answers.redenied:
            lead += self.response.converter.deny(call_id)
        for call in answers.released:
            wait = self.waits[call.id]
            if client_approval_id(call.id) in payloads:
                self.payloads[call.id] = payloads[client_approval_id(call.id)]
            if isinstance(self.owner.client_tools.get(call.name), ClientTool):
                lead += self.response.converter.release(call.id, call.name, call.args)
                self.approved_client_calls.add(call.id)
            self._resolve(wait, True)
        for part in answers.responses:
            response = part.function_response
            assert response is not None and response.id is not None
            if response.id in answers.denied:
                continue
            wait = self.waits[response.id]
            if wait.kind == "approval":  # approved with its result in the same request
                self.early_results[response.id] = response.response
                self.approved_client_calls.add(response.id)
                self._resolve(wait, True)
            else:
                self._resolve(wait, response.response)
        self._open(request_id, lead)
        if any(wait.asked for wait in self.waits.values()):
            # Some calls of the paused step are still unanswered: the turn stays paused.
            self.response.converter.waiting_on_calls()
            self._end_response(self.response.converter.finish())

    def _claim(self, request_id: str, message_id: str) -> bool:
        """Stream, as the continuation of ``message_id``, the response the turn went on with
        while no request was open; False if there is none."""
        response = self.response
        if response is None or response.request_id is not None:
            response = next((r for r in self.unclaimed if r.message_id == message_id), None)
        if response is None or response.message_id != message_id:
            return False
        self._attach(request_id, response, response.chunks)
        return True

    def resume(self, request_id: str) -> None:
        """Replay the message in progress, from its first chunk (or the oldest one that was
        answered while no request was open)."""
        response = self.response
        if response is None and self.unclaimed:
            response = self.unclaimed[0]
        if response is None and self.voice_answer_due:
            self._park(request_id)
            return
        if response is None:
            self.frame(type="no-active", requestId=request_id)
            return
        self._attach(request_id, response, response.earlier + response.chunks)

    def _attach(self, request_id: str, response: _Response, replay: list[UIMessageChunk]) -> None:
        """Send ``replay`` under ``request_id``; the response goes on there if under way.

        A request that was reading the response (a ``resume`` sent while a typed answer
        streams) gets what is held and its ``end``: it hands over, it is not left hanging."""
        self.deltas.flush()
        if response.request_id not in (None, request_id):
            self.frame(type="end", requestId=response.request_id)
        response.request_id = request_id
        response.sent = 0
        self.frame(type="start", requestId=request_id)
        for chunk in replay:
            self._send_chunk(response, chunk)
        if response is not self.response:  # it has ended
            self.unclaimed.remove(response)
            self.frame(type="end", requestId=request_id)

    def speech_ended(self) -> None:
        """The user stopped talking (``activity-end``/``audio-end``): the model's answer is due.

        The client asks for it with ``resume`` at once, usually before the model has heard
        anything, so until the answer starts a ``resume`` waits for it instead of finding
        nothing to replay.
        """
        self.voice_answer_due = True

    def _park(self, request_id: str) -> None:
        self._unpark(answer=True)  # a newer resume replaces an older one
        loop = asyncio.get_running_loop()
        timer = loop.call_later(VOICE_ANSWER_WAIT, self._unpark, True)
        self.parked_resume = (request_id, timer)

    def _unpark(self, answer: bool) -> str | None:
        """Release the parked resume; ``answer`` tells its client there is nothing to replay."""
        if self.parked_resume is None:
            return None
        request_id, timer = self.parked_resume
        self.parked_resume = None
        timer.cancel()
        self.voice_answer_due = False
        if answer:
            self.frame(type="no-active", requestId=request_id)
        return request_id

    def abort(self, request_id: str) -> None:
        """The client stopped reading this response; the rest of the turn is dropped."""
        if self.parked_resume is not None and self.parked_resume[0] == request_id:
            self._unpark(answer=False)
        if self.response is not None and self.response.request_id == request_id:
            self.deltas.drop(self.response)
            self.response.request_id = None

    def _open(self, request_id: str, lead: list[UIMessageChunk]) -> None:
        assert self.response is not None
        self.response.request_id = request_id
        self.frame(type="start", requestId=request_id)
        self._emit(self.response.converter.start() + lead)

    # --- run_live events ---------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        if self.draining is not None:  # the end of a turn a new message cut short
            self._audio(event)
            if event.interrupted or event.turn_complete:
                self.draining = None
            return
        if self.response is None:  # the model speaks with no request open (voice, buffering)
            self.response = self._new_response(self.owner.new_message_id())
            self.voice_answer_due = False
            parked = self._unpark(answer=False)
            if parked is not None:  # a resume was waiting for this answer
                self.response.request_id = parked
                self.frame(type="start", requestId=parked)
            self._emit(self.response.converter.start())
        self._audio(event)
        if event.interrupted:
            if self.response.answered:
                self._end_response(self.response.converter.interrupt())
            # else the model was cut short before it said anything of this response: the
            # interruption is of an earlier answer (to the history a new session sends, say)
            return
        self.response.answered = True
        self._emit(self.response.converter.feed(event))
        if self.abandoned and self.abandoned <= {r.id for r in event.get_function_responses()}:
            self.settled.set()
        calls = event.get_function_calls() if not event.partial else []
        if calls:
            self.turn_called_tools = True
            self.batch = []
            for call in calls:
                if call.id and call.name:
                    self.calls[call.id] = ToolCall(
                        id=call.id,
                        name=call.name,
                        args=dict(call.args or {}),
                        invocation_id=event.invocation_id,
                        message_id=self.response.converter.message_id,
                        long_running=False,
                    )
                    self.batch.append(call.id)
            self._maybe_pause()
        if event.turn_complete:
            # A turn that called tools is followed by the model's answer to their results
            # (ADK sends them back): the response goes on until a turn without calls ends.
            if self.turn_called_tools:
                self.turn_called_tools = False
            elif not self.waits:
                self._end_response(self.response.converter.finish())

    def expect_history_reply(self) -> None:
        """The model will answer the session's history before any request (it ends with the
        user's turn). That answer gets a response of its own now, so a message sent before it
        starts does not take it for its own: it is drained into this one (``send_user_turn``)
        and kept for a ``resume`` if nobody sends."""
        self._unasked_response()

    def _unasked_response(self, message_id: str | None = None) -> _Response:
        """The response under way, or a new one that no request reads yet (a ``resume`` or a
        late answer will), for ``message_id`` (a paused message going on) or a new message."""
        if self.response is None:
            self.response = self._new_response(message_id or self.owner.new_message_id())
            self._emit(self.response.converter.start())
        return self.response

    def fail(self, error_text: str) -> None:
        converter = self._unasked_response().converter
        self._end_response(converter.fail(error_text) + converter.finish())

    def _audio(self, event: Event) -> None:
        """Model speech goes straight out as binary frames (it is not part of the message)."""
        if not self.audio:
            return
        if event.interrupted:
            self.frame(type="interrupted")  # the client stops playing what is queued
        for part in (event.content.parts or []) if event.content is not None else []:
            blob = part.inline_data
            if blob is not None and blob.data and (blob.mime_type or "").startswith("audio/"):
                self._send(blob.data)

    def tag(self, event: Event) -> Event | None:
        """Tag an event with the ids the client knows and the user's decisions (history)."""
        response = self.draining or self.response
        if response is None or event.partial:
            return None
        tags: dict[str, Any] = {"messageId": response.message_id}
        # History's steps are the stream's: a step of this response (each response, a
        # continuation too, opens a step with its first model event).
        tags["liveStep"] = f"{response.key}.{response.converter.live_step}"
        if response is self.draining:
            tags["cut"] = True  # stored after the message that cut it short (history.py)
        decided = {
            r.id: self.decisions[r.id]
            for r in event.get_function_responses()
            if r.id in self.decisions
        }
        if decided:
            tags["decisions"] = decided
        metadata = dict(event.custom_metadata or {})
        metadata[METADATA_KEY] = {**(metadata.get(METADATA_KEY) or {}), **tags}
        return event.model_copy(update={"custom_metadata": metadata})

    # --- tool gating (called from ADK's tool pipeline) ---------------------------------------

    async def gate(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if not tool_context.function_call_id:
            return None
        call = self._call_of(tool, args, tool_context)
        if isinstance(tool, ClientTool):
            if tool.needs_approval(args) and not await self._approved(call):
                return REJECTED
            if call.id in self.early_results:
                result: dict[str, Any] = self.early_results.pop(call.id)
                return result
            result = await self._wait(call, "result", self.owner.client_tool_timeout)
            return result
        if await tool.check_require_confirmation(args, tool_context) is True:
            if not await self._approved(call):
                return REJECTED
            tool_context.tool_confirmation = ToolConfirmation(confirmed=True)
        return None

    async def confirm(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any]:
        """A tool asked for confirmation itself (``tool_context.request_confirmation``).

        Over SSE ADK pauses the run and calls the tool again with the user's answer; its live
        flow cannot (it only ever refuses). So the bridge asks the user here, in the tool
        pipeline, and calls the tool again with ``tool_confirmation`` set, as ADK would: the
        tool decides what approval (with the user's payload) and denial mean.
        """
        asked = tool_context.actions.requested_tool_confirmations.pop(
            tool_context.function_call_id or "", None
        )
        call = self._call_of(tool, args, tool_context)
        if asked is not None:
            self.descriptors[call.id] = approval_descriptor(asked.model_dump())
        approved = await self._approved(call)
        payload = self.payloads.pop(call.id, None) if approved else None
        tool_context.tool_confirmation = ToolConfirmation(confirmed=approved, payload=payload)
        tool_context.actions.skip_summarization = False  # the tool's answer to it is the result
        result = await tool.run_async(args=args, tool_context=tool_context)
        return result if isinstance(result, dict) else {"result": result}

    def _call_of(self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> ToolCall:
        call_id = tool_context.function_call_id
        assert call_id is not None
        # ADK may run the tool before this connection has converted the call's event.
        return self.calls.setdefault(
            call_id,
            ToolCall(call_id, tool.name, dict(args), tool_context.invocation_id, None, False),
        )

    def tool_finished(self, call_id: str | None, result: Any) -> None:
        """A tool call's result, from the tool pipeline: shown at once, so a server tool's
        output reaches the client before the turn pauses for its sibling calls."""
        if not call_id:
            return
        self.finished_calls.add(call_id)
        if self.response is not None and result is not None:
            self._emit(self.response.converter.tool_result(call_id, result))
        self._maybe_pause()

    async def _approved(self, call: ToolCall) -> bool:
        decision = await self._wait(call, "approval", self.owner.approval_timeout)
        self.decisions[call.id] = decision is True
        if decision is not True:  # denied, abandoned or timed out: the client sees a denial
            self._emit(self._go_on_with_message_of(call).converter.deny(call.id))
        return decision is True

    async def _wait(self, call: ToolCall, kind: Literal["approval", "result"], limit: float) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        wait = self.waits[call.id] = _Wait(call, kind, future)
        self._maybe_pause()
        try:
            async with asyncio.timeout(limit):
                return await future
        except TimeoutError:
            if kind == "approval":
                return False
            self._go_on_with_message_of(call)
            return TIMED_OUT
        finally:
            if self.waits.get(call.id) is wait:
                del self.waits[call.id]

    def _go_on_with_message_of(self, call: ToolCall) -> _Response:
        """A wait ended with no request open (it timed out): the paused message goes on, so
        what follows reaches the client as that message's continuation (``resume``, or the
        user's late answer)."""
        return self._unasked_response(self.calls.get(call.id, call).message_id)

    def _resolve(self, wait: _Wait, value: Any) -> None:
        if not wait.future.done():
            wait.future.set_result(value)
        if self.waits.get(wait.call.id) is wait:
            del self.waits[wait.call.id]

    def close(self) -> None:
        """The connection is over: nothing waits any more."""
        self.deltas.close()
        for wait in list(self.waits.values()):
            wait.future.cancel()
        self.waits.clear()
        self._unpark(answer=False)

    def abandon_waits(self) -> bool:
        """The user left: answer every waiting call as denied (approvals) or failed (client
        tools), so ADK records a response for each and the chat is consistent when it resumes.
        Returns whether there was anything to answer (``settled`` is set once it is recorded)."""
        self.abandoned = set(self.waits)
        for wait in list(self.waits.values()):
            self._resolve(wait, False if wait.kind == "approval" else LEFT)
        return bool(self.abandoned)

    def _maybe_pause(self) -> None:
        """End the request stream once every call of the last step waits or is done.

        Waiting for the whole step keeps parallel approvals in one response: the stock approvals
        helper only sends when every tool of the step is answered.
        """
        if self.response is None or not self.batch:
            return
        waiting = [self.waits[c] for c in self.batch if c in self.waits]
        if not waiting or not all(c in self.waits or c in self.finished_calls for c in self.batch):
            return
        if all(w.asked for w in waiting):
            return
        chunks: list[UIMessageChunk] = []
        for wait in waiting:
            if wait.asked:
                continue
            wait.asked = True
            tool = self.owner.client_tools.get(wait.call.name)
            if wait.kind == "approval" and tool is None:
                approval_id = client_approval_id(wait.call.id)
                descriptor = self.descriptors.pop(wait.call.id, None)
                chunks.append(
                    ToolApprovalRequest(
                        approval_id=approval_id,
                        tool_call_id=wait.call.id,
                        approval_descriptor=descriptor,
                    )
                )
        self.response.converter.waiting_on_calls()
        self._end_response(chunks + self.response.converter.finish())

    # --- continuation checks -----------------------------------------------------------------

    def _needs_approval(self, call: ToolCall) -> bool:
        wait = self.waits.get(call.id)
        return (
            wait is not None and wait.kind == "approval"
        ) or call.id in self.approved_client_calls

    def _state(self) -> ChatState:
        """The live session's truth in the shape continuations are checked against: a call is
        open while the bridge waits on it."""
        state = ChatState(
            approved_client_calls=set(self.approved_client_calls),
            live_decisions=dict(self.decisions),
        )
        for call in self.calls.values():
            waiting = call.id in self.waits
            state.calls[call.id] = ToolCall(
                call.id, call.name, call.args, call.invocation_id, call.message_id, waiting
            )
            if not waiting:
                state.results[call.id] = None
        return state


def new_request_id() -> str:
    return secrets.token_hex(8)
