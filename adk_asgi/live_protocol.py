"""The live protocol of one WebSocket connection, as a sans-I/O state machine.

Like h11 or wsproto, it does no I/O and owns no asyncio object: the connection (:mod:`.live`)
feeds it the client's text frames (:meth:`LiveProtocol.receive`), ``run_live``'s events
(:meth:`~LiveProtocol.event`) and the session's fate, and carries out the
:mod:`~adk_asgi.live_outputs` each returns — frames to send, requests for the model, answers for
waiting tool calls, the close. It reads the time from the ``clock`` it is given and tells when
it wants :meth:`~LiveProtocol.tick` called (:attr:`~LiveProtocol.deadline`).

The connection goes through explicit phases: ``unbound`` (no chat yet), ``opening`` (the chat's
lock and session are being acquired; ``send`` frames wait), ``answering`` (calls of the stored
session wait for the user, left by a connection that is gone: each ``send`` is settled by the
connection against the session before the model runs, see :meth:`LiveProtocol.answered`),
``open``, ``closed`` (the session ended or never started; a ``send`` gets the reason and the
socket closes).

A request stream ends at the model's ``turn_complete`` — or earlier, when the turn pauses
because its tool calls wait for the user (an approval) or the browser (a client tool), so the
client, which only acts on a finished stream, can answer. The answer arrives as the next
``send``; it is checked by the same continuation checker as over SSE, against the calls this
machine has seen (:attr:`~LiveProtocol.state`), and the rest of the turn streams under it
(docs/architecture.md#live-turn). The waiting itself happens in ADK's tool pipeline
(:mod:`.live_tools`), which asks this machine what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from google.adk.agents.live_request_queue import LiveRequest
from google.adk.events.event import Event
from google.genai import types

from . import bookkeeping
from .checks import (
    FrameRefused,
    check_chat,
    decode_resume_frame,
    decode_send_frame,
    frame_head,
)
from .coalesce import DeltaCoalescer
from .continuation import Conflict, Continuation, continuation
from .convert import EventConverter
from .durable import ClosedHow
from .errors import ClientError
from .failures import AgentError, ErrorHandler, show_errors
from .live_calls import LiveCalls, WaitKind
from .live_outputs import (
    SPEECH,
    Close,
    KeepFailure,
    OpenSession,
    Output,
    Replay,
    Settle,
    StopReplay,
    ToModel,
)
from .live_streams import Response, Streams
from .messages import ChatRequest
from .outcomes import EXPIRED as TIMED_OUT
from .pending import PAYLOADS_KEY, ChatState, ToolCall, client_approval_id
from .policy import ToolPolicy
from .stored_replay import StoredReplay
from .translate import user_content

Phase = Literal["unbound", "opening", "answering", "open", "closed"]
NO_LIVE_REGENERATE: Final = (
    "regenerating is not supported in live mode: ADK takes back whole invocations, and a live"
    " connection is one"
)
BUSY: Final = 1013
"""The close code of a connection whose chat is busy elsewhere: "try again later"."""


EARLY_SPEECH: Final = 16
"""Voice activity frames (``activity-start``…) taken before the session opens, at most: they
wait in the model's queue until it does; past this they are dropped (a flood of them sent
before a session grew the connection by 812 B each)."""
QUEUED_SENDS: Final = 16
"""``send`` frames that may wait for the session to open; past this they are refused."""
REPLAYS: Final = 8
"""``resume`` requests read from the stream store at once (each a task following a stored
answer to its end); past this they are refused."""


AGENT_ENDED: Final = "the agent ended its live session: send again to start a new one"
"""Why a connection whose ``run_live`` returned takes no more requests (it then closes)."""


class LiveProtocol:
    def __init__(
        self,
        *,
        tools: ToolPolicy,
        new_message_id: Callable[[], str],
        clock: Callable[[], float],
        v7: bool = True,
        audio: bool = False,
        send_usage: bool = False,
        write_interval: float = 0.0,
        under_load: Callable[[float], float] | None = None,
        stored_streams: bool = False,
        on_error: ErrorHandler = show_errors,
        speakers: bool = False,
    ) -> None:
        self.tools = tools
        self.on_error = on_error
        self.speakers = speakers
        self.new_message_id = new_message_id
        self.clock = clock
        self.audio = audio
        self.send_usage = send_usage
        self.out: list[Output] = []
        deltas = DeltaCoalescer[Response](write_interval, under_load)
        self.streams = Streams(self.out, v7=v7, deltas=deltas, record=stored_streams)
        self.stored_streams = stored_streams
        """A stream store keeps each chat's answer under way (:mod:`.resumable`): responses are
        recorded there, and a ``resume`` this connection has nothing for is read from there."""
        self.replays: dict[str, StoredReplay] = {}
        """``resume`` requests being answered from the store."""
        self.phase: Phase = "unbound"
        self.chat_id: str | None = None
        self.failure: str | None = None
        self.close_code = 1000
        self._queued: list[tuple[str, ChatRequest]] = []
        self._settling = 0
        """:class:`Settle` outputs the connection has not answered, refused or dispatched."""
        """``send`` frames that arrived while the session was opening."""
        self._aborted: set[str] = set()
        """Queued ``send`` requests the client aborted before they were dispatched."""
        self.calls = LiveCalls(self.out, tools)
        self.titled = False
        """The chat has its title (``GET /chats``), from an earlier message or this one."""
        self.turn_called_tools = False
        self._early_speech = 0
        """Voice activity frames passed on before the session opened (:data:`EARLY_SPEECH`)."""
        self._last_early: str | None = None

    def _take(self) -> list[Output]:
        out = list(self.out)
        self.out.clear()
        return out

    @property
    def deadline(self) -> float | None:
        """When :meth:`tick` is due (on the ``clock``'s scale), or ``None``."""
        return self.streams.deadline

    def tick(self) -> list[Output]:
        self.streams.tick(self.clock())
        return self._take()

    # --- client frames -----------------------------------------------------------------------

    def receive(self, text: str, decoded: ChatRequest | ClientError | None = None) -> list[Output]:
        """A text frame from the client. ``decoded``: a ``send`` frame's request, decoded
        (or refused) already, off the event loop (:func:`~adk_asgi.checks.decode_send_frame`)."""
        try:
            head = frame_head(text)
        except FrameRefused as exc:  # the decoding policy, or the requestId
            self.streams.frame(type="error", requestId=exc.request_id, errorText=exc.reason)
            return self._take()
        if head is None:
            self.streams.frame(type="error", requestId="", errorText="not a JSON frame")
            return self._take()
        kind, request_id = head
        if kind == "send":
            self._on_send(request_id, text, decoded)
        elif kind == "resume":
            self._on_resume(request_id, text)
        elif kind == "abort":
            self._abort(request_id)
        elif kind in ("activity-start", "activity-end", "audio-end"):
            if self.phase != "open" and not self._early(kind):
                return self._take()
            self.out.append(ToModel(SPEECH[kind]()))
            if kind != "activity-start":
                self.streams.speech_ended()
        elif kind == "ping":
            self.streams.frame(type="pong")
        else:
            error = f"unknown frame {kind!r}"
            self.streams.frame(type="error", requestId=request_id, errorText=error)
        return self._take()

    def _early(self, kind: str) -> bool:
        """Whether a voice activity frame that came before the session opened goes to the
        model's queue (which holds it until then): the same frame twice in a row says nothing
        new, and past :data:`EARLY_SPEECH` of them they are dropped, so that what a connection
        keeps before its session stays bounded."""
        if kind == self._last_early or self._early_speech >= EARLY_SPEECH:
            return False
        self._last_early = kind
        self._early_speech += 1
        return True

    def _on_send(
        self, request_id: str, text: str, decoded: ChatRequest | ClientError | None = None
    ) -> None:
        try:
            if isinstance(decoded, ClientError):
                raise decoded
            chat = decoded if decoded is not None else decode_send_frame(text)
            check_chat(chat)
            if chat.trigger == "regenerate-message":
                raise ClientError(422, NO_LIVE_REGENERATE)
            if self.chat_id is None:
                self._bind(chat.id)
            elif chat.id != self.chat_id:
                raise ClientError(409, f"this connection serves chat {self.chat_id!r}")
            if self.phase == "opening":
                if len(self._queued) >= QUEUED_SENDS:
                    raise ClientError(429, "too many requests wait for the session to open")
                self._queued.append((request_id, chat))
            elif self.phase == "answering":
                if self._settling >= QUEUED_SENDS:
                    raise ClientError(429, "too many requests wait for the chat's calls")
                self._settling += 1
                self.out.append(Settle(request_id, chat))
            else:
                self._dispatch(request_id, chat)
        except ClientError as exc:
            self.streams.frame(type="error", requestId=request_id, errorText=exc.reason)

    def _on_resume(self, request_id: str, text: str) -> None:
        """Replay the chat's answer under way. A new connection (a reloaded page) names its
        chat in the frame; what it resumes is then being written by the connection that is
        gone, which goes on until the answer ends (:mod:`.live`), into the stream store."""
        try:
            chat_id, last_sequence = decode_resume_frame(text)
            if chat_id is not None and self.chat_id is None:
                self._bind(chat_id)
            elif chat_id is not None and chat_id != self.chat_id:
                raise ClientError(409, f"this connection serves chat {self.chat_id!r}")
        except ClientError as exc:
            self.streams.frame(type="error", requestId=request_id, errorText=exc.reason)
            return
        if self.streams.resume(request_id, last_sequence, self.clock()):
            return
        if self.stored_streams and self.chat_id is not None and request_id not in self.replays:
            if len(self.replays) >= REPLAYS:
                error = f"more than {REPLAYS} resumes under way on this connection"
                self.streams.frame(type="error", requestId=request_id, errorText=error)
                return
            self.replays[request_id] = StoredReplay(request_id, last_sequence)
            self.out.append(Replay(request_id))
        else:
            self.streams.frame(type="no-active", requestId=request_id)

    def replay_started(self, request_id: str) -> list[Output]:
        """The store has an answer under way for the :class:`Replay` of ``request_id``."""
        replay = self.replays.get(request_id)
        if replay is not None:
            self.streams.send(replay.start())
        return self._take()

    def replayed(self, request_id: str, piece: bytes) -> list[Output]:
        """The next stored piece of the answer a :class:`Replay` follows."""
        replay = self.replays.get(request_id)
        if replay is not None:
            for frame in replay.feed(piece):
                self.streams.send(frame)
        return self._take()

    def replay_ended(self, request_id: str, *, found: bool) -> list[Output]:
        """The stored answer ended (or, ``found`` False, there was none): the request ends."""
        replay = self.replays.pop(request_id, None)
        if replay is not None and found:
            self.streams.send(replay.end())
        elif replay is not None:
            self.streams.frame(type="no-active", requestId=request_id)
        return self._take()

    @property
    def streaming(self) -> bool:
        """A response is under way (the model has more to say for it)."""
        return self.streams.response is not None or self.streams.draining is not None

    def bind(self, chat_id: str) -> list[Output]:
        """The connection serves ``chat_id`` (named in its URL) before any ``send``."""
        self._bind(chat_id)
        return self._take()

    def _bind(self, chat_id: str) -> None:
        self.chat_id = chat_id
        self.phase = "opening"
        self.out.append(OpenSession(chat_id))

    def _dispatch(self, request_id: str, chat: ChatRequest) -> None:
        if self.phase == "closed":
            assert self.failure is not None
            self.streams.frame(type="error", requestId=request_id, errorText=self.failure)
            self.out.append(Close(self.close_code))
            return
        if self.streams.busy():
            raise ClientError(409, "a response is still streaming on this connection")
        last = chat.messages[-1]
        if last.role == "user":
            self._user_turn(request_id, user_content(last), last.id)
        else:
            self._answers(request_id, chat)

    def _abort(self, request_id: str) -> None:
        """The client stops reading ``request_id``. A ``send`` still waiting for the session
        goes to the model all the same (the stock clients' ``stop`` only stops reading), but
        its response streams to nobody."""
        if any(queued == request_id for queued, _ in self._queued):
            self._aborted.add(request_id)
        if self.replays.pop(request_id, None) is not None:
            self.out.append(StopReplay(request_id))
        self.streams.abort(request_id)

    def _flush_queued(self) -> None:
        queued, self._queued = self._queued, []
        for request_id, chat in queued:
            try:
                self._dispatch(request_id, chat)
            except ClientError as exc:
                self.streams.frame(type="error", requestId=request_id, errorText=exc.reason)
            if request_id in self._aborted:
                self._aborted.discard(request_id)
                self.streams.abort(request_id)

    # --- the session's fate ------------------------------------------------------------------

    def session_started(
        self,
        *,
        answers_history: bool,
        stored: ChatState | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> list[Output]:
        """``run_live`` is about to start. ``answers_history``: the stored history ends with the
        user's turn, so the model answers it before any request — that answer gets a response
        of its own now, so a message sent before it starts does not take it for its own (it is
        drained, see :meth:`_user_turn`) and it is kept for a ``resume`` if nobody sends.
        ``stored``: the chat's calls as the session has them (none waits by now), so a late
        answer to one of them is refused for what it is (closed), not as a stranger.
        ``state``: the session's (what the bridge keeps there, its title)."""
        self.phase = "open"
        self.titled = bookkeeping.title(state or {}) is not None
        if stored is not None:
            self.calls.state = stored
        if answers_history:
            self._unasked_response()
        self._flush_queued()
        return self._take()

    def dispatch(self, request_id: str, chat: ChatRequest) -> list[Output]:
        """Dispatch a request the connection took while ``answering`` (a new user message,
        once the calls it leaves are closed), now that the session is open."""
        self._settled()
        self._queued.append((request_id, chat))
        self._flush_queued()
        return self._take()

    def session_waiting(self) -> list[Output]:
        """The chat's stored calls wait for the user: the sends that came while the session
        was opening, and those to come until :meth:`session_started`, are the connection's to
        settle (:class:`~adk_asgi.live_outputs.Settle`), one at a time."""
        self.phase = "answering"
        queued, self._queued = self._queued, []
        self._settling += len(queued)
        self.out.extend(Settle(request_id, chat) for request_id, chat in queued)
        return self._take()

    def answered(self, request_id: str, answers: Continuation, *, waiting: bool) -> list[Output]:
        """The connection recorded ``answers`` (a continuation of the stored message) for
        ``request_id``: its response starts with what they show. ``waiting``: calls still wait
        (a browser tool just released), so the response ends there; else the model runs next
        (:meth:`session_started`) and the response goes on with the tools' results."""
        self._settled()
        message_id = answers.message_id
        converter = self._converter(message_id, known_calls=answers.known_calls)
        self.streams.begin(converter)
        self.streams.open(request_id, answers.lead(converter.cards, self.tools), self.clock())
        if waiting:
            converter.waiting_on_calls()
            self.streams.end(converter.finish(), self.clock())
        return self._take()

    def refused(self, request_id: str, reason: str) -> list[Output]:
        """A request the connection could not settle (it answers no waiting call)."""
        self._settled()
        self.streams.frame(type="error", requestId=request_id, errorText=reason)
        return self._take()

    def _settled(self) -> None:
        self._settling = max(0, self._settling - 1)

    def session_busy(self) -> list[Output]:
        """The chat is busy in another request or connection: its ``send`` is refused."""
        self._closed("this chat is busy in another request or connection", BUSY)
        return self._take()

    def session_ended(self, error: BaseException | None) -> list[Output]:
        """``run_live`` raised ``error``, or returned (``None``).

        Returning is the agent's own end: a ``SequentialAgent`` whose last sub-agent said
        ``task_completed``, a Live API session that closed. The answer under way ends as it
        is and the socket closes normally (1000); the client's next message opens a new
        connection, and so a new session. An error is reported as ``on_error`` says, what the
        client was shown of the answer cut short is kept, and the socket closes with 1011.
        """
        if error is None:
            response = self.streams.response
            if response is not None:
                self.streams.end(response.converter.finish(), self.clock())
            self._closed(AGENT_ENDED, 1000)
            self.out.append(Close(1000))
            return self._take()
        converter = self._unasked_response().converter
        failure = converter.fail(self.on_error(AgentError(exception=error)))
        self.streams.end(failure + converter.finish(), self.clock())
        if converter.failure is not None:
            shown, text = converter.failure
            self.out.append(KeepFailure(converter.message_id, shown, text))
        self._closed("the live session ended after an error", 1011)
        self.out.append(Close(1011))  # the writer sends what is queued, then closes
        return self._take()

    def _closed(self, failure: str, code: int) -> None:
        self.phase, self.failure, self.close_code = "closed", failure, code
        self._flush_queued()

    # --- user turns and answers --------------------------------------------------------------

    def _user_turn(self, request_id: str, content: types.Content, message_id: str) -> None:
        """A new user message: pending waits are abandoned (denied), the model gets the text.

        A response still under way (aborted, or the model speaking unasked) is not this
        message's: the rest of its turn, up to the model's ``interrupted`` or
        ``turn_complete``, is drained into it, so it neither ends nor fills the new response.
        """
        self.calls.move_on()
        self.streams.cut_short()
        # A new message: the answers just given to old calls belong to their own messages.
        self.streams.begin(self._converter(self.new_message_id(), known_calls=set()))
        self.streams.open(request_id, [], self.clock())
        state_delta = bookkeeping.live_user_message(message_id)
        if not self.titled:
            title = bookkeeping.title_delta({}, content)
            state_delta |= title
            self.titled = bool(title)
        self.out.append(ToModel(LiveRequest(content=content, state_delta=state_delta)))

    def _answers(self, request_id: str, chat: ChatRequest) -> None:
        """A continuation: answers to the waits of the paused turn; raises :class:`Conflict`."""
        message = chat.messages[-1]
        try:
            answers = continuation(message, self.calls.state)
        except Conflict:
            # Answers to calls that are closed already (an approval that timed out): the
            # response the server gave that message meanwhile is the truth; send it.
            if not self.streams.claim(request_id, message.id):
                raise
            return
        known = answers.known_calls | set(self.calls.state.calls)
        converter = self._converter(message.id, known_calls=known)
        self.streams.begin(converter)
        lead = answers.lead(converter.cards, self.tools)
        self.calls.answer(answers, chat.extra.get(PAYLOADS_KEY, {}))
        self.streams.open(request_id, lead, self.clock())
        if self.calls.still_paused():  # some calls of the paused step are still unanswered
            converter.waiting_on_calls()
            self.streams.end(converter.finish(), self.clock())

    def _converter(self, message_id: str, known_calls: set[str] | None = None) -> EventConverter:
        return EventConverter(
            message_id=message_id,
            known_calls=set(self.calls.state.calls) if known_calls is None else known_calls,
            send_usage=self.send_usage,
            policy=self.tools,
            live=True,
            on_error=self.on_error,
            speakers=self.speakers,
        )

    def _unasked_response(self, message_id: str | None = None) -> Response:
        """The response under way, or a new one that no request reads yet (a ``resume`` or a
        late answer will), for ``message_id`` (a paused message going on) or a new message."""
        response = self.streams.response
        if response is None:
            response = self.streams.begin(self._converter(message_id or self.new_message_id()))
            self.streams.emit(response.converter.start(), self.clock())
        return response

    # --- run_live events ---------------------------------------------------------------------

    def event(self, event: Event) -> list[Output]:
        streams, now = self.streams, self.clock()
        if streams.draining is not None:  # the end of a turn a new message cut short
            self._audio(event)
            if event.interrupted or event.turn_complete:
                streams.draining = None
            return self._take()
        response = streams.response
        if response is None:  # the model speaks with no request open (voice, buffering)
            response = streams.begin(self._converter(self.new_message_id()))
            streams.voice_answer_due = False
            parked = streams.unpark(answer=False)
            if parked is not None:  # a resume was waiting for this answer
                response.request_id = parked
                streams.frame(type="start", requestId=parked)
            streams.emit(response.converter.start(), now)
        self._audio(event)
        if event.interrupted:
            if response.answered:
                streams.end(response.converter.interrupt(), now)
            # else the model was cut short before it said anything of this response: the
            # interruption is of an earlier answer (to the history a new session sends, say)
            return self._take()
        response.answered = True
        streams.emit(response.converter.feed(event), now)
        calls = event.get_function_calls() if not event.partial else []
        if calls:
            self.turn_called_tools = True
            message_id = response.message_id
            self.calls.new_step(
                [
                    ToolCall(
                        c.id, c.name, dict(c.args or {}), event.invocation_id, message_id, False
                    )
                    for c in calls
                    if c.id and c.name
                ]
            )
            self._maybe_pause()
        if event.actions.transfer_to_agent:
            # The agent that called for the transfer ends its turn without a ``turn_complete``:
            # the response ends when the agent it handed over to completes its own turn.
            self.turn_called_tools = False
        if event.turn_complete:
            # A turn that called tools is followed by the model's answer to their results
            # (ADK sends them back): the response goes on until a turn without calls ends.
            if self.turn_called_tools:
                self.turn_called_tools = False
            elif not self.calls.waits and streams.response is not None:
                streams.end(streams.response.converter.finish(), now)
        return self._take()

    def _audio(self, event: Event) -> None:
        """Model speech goes straight out as binary frames (it is not part of the message)."""
        if not self.audio:
            return
        if event.interrupted:
            self.streams.frame(type="interrupted")  # the client stops playing what is queued
        for part in (event.content.parts or []) if event.content is not None else []:
            blob = part.inline_data
            if blob is not None and blob.data and (blob.mime_type or "").startswith("audio/"):
                self.streams.send(blob.data)

    def tag(self, event: Event) -> Event | None:
        """Tag an event with the ids the client knows and the user's decisions (history)."""
        response = self.streams.draining or self.streams.response
        if response is None or event.partial:
            return None
        decisions = self.calls.state.live_decisions
        return bookkeeping.tagged(
            event,
            message_id=response.message_id,
            # History's steps are the stream's: a step of this response (each response, a
            # continuation too, opens a step with its first model event).
            live_step=f"{response.key}.{response.converter.live_step}",
            cut=response is self.streams.draining,  # stored after the message that cut it
            decisions={
                r.id: decisions[r.id]
                for r in event.get_function_responses()
                if r.id in decisions and r.id is not None
            },
        )

    # --- tool calls waiting for the user (asked by ADK's tool pipeline, live_tools.py) ---------

    def call(self, call_id: str, name: str, args: dict[str, Any], invocation_id: str) -> ToolCall:
        """The call ADK is about to run (it may run before its event reached :meth:`event`)."""
        known = self.calls.state.calls.get(call_id)
        if known is not None:
            return known
        return self.calls.remember(ToolCall(call_id, name, dict(args), invocation_id, None, False))

    def wait(self, call: ToolCall, kind: WaitKind) -> list[Output]:
        """``call`` waits for the user's decision or the browser's result; the answer comes
        as a :class:`~adk_asgi.live_outputs.Resolve` (or :meth:`timed_out` is called)."""
        self.calls.open(call, kind)
        self._maybe_pause()
        return self._take()

    def timed_out(self, call_id: str) -> tuple[Any, list[Output]]:
        """The wait of ``call_id`` ran out: its outcome (denied, or :data:`TIMED_OUT`) and what
        to send. The paused message goes on with no request open: what follows reaches the
        client as that message's continuation (``resume``, or the user's late answer)."""
        wait = self.calls.waits.get(call_id)
        if wait is None or not self.calls.close(wait):
            return None, self._take()
        if wait.kind == "result":
            self._unasked_response(wait.call.message_id)
            return TIMED_OUT, self._take()
        return False, self._take()

    def decided(
        self, call: ToolCall, approved: bool, *, closed: ClosedHow | None = None
    ) -> list[Output]:
        """The decision on a gated call is final: the user's, or a denial because nobody
        answered (``closed``), which the client sees as an error saying so, not as a
        denial."""
        state = self.calls.state
        state.live_decisions[call.id] = approved
        approval_id = client_approval_id(call.id)
        if closed == "expired":
            state.expired.add(approval_id)
        elif closed == "moved-on":
            state.closed_approvals.add(approval_id)
        if not approved:
            message_id = state.calls.get(call.id, call).message_id
            converter = self._unasked_response(message_id).converter
            why = state.closed_unanswered(call.id)
            chunks = (
                converter.cards.deny(call.id)
                if why is None
                else converter.cards.closed_unanswered(call.id, why)
            )
            self.streams.emit(chunks, self.clock())
        return self._take()

    def tool_finished(self, call_id: str | None, result: Any) -> list[Output]:
        """A tool call's result, from the tool pipeline: shown at once, so a server tool's
        output reaches the client before the turn pauses for its sibling calls."""
        if call_id:
            self.calls.finished.add(call_id)
            if result is None:  # a long-running tool left it open for the app to answer
                self.calls.left_to_server(call_id)
            response = self.streams.response
            if response is not None and result is not None:
                call = self.calls.state.calls.get(call_id)
                name = call.name if call is not None else ""
                shown = response.converter.cards.tool_result(call_id, result, name)
                self.streams.emit(shown, self.clock())
            self._maybe_pause()
        return self._take()

    def _maybe_pause(self) -> None:
        """End the request stream once every call of the last step waits or is done."""
        response = self.streams.response
        if response is None:
            return
        chunks = self.calls.pause()
        if chunks is not None:
            response.converter.waiting_on_calls()
            self.streams.end(chunks + response.converter.finish(), self.clock())
