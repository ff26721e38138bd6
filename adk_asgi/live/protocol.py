"""The live protocol of one WebSocket connection, as a sans-I/O state machine.

Like h11 or wsproto, it does no I/O and owns no asyncio object: the connection (:mod:`.connection`)
feeds it the client's text frames (:meth:`LiveProtocol.receive`), ``run_live``'s events
(:meth:`~LiveProtocol.event`) and the session's fate, and carries out the
:mod:`~.outputs` each returns. It reads the time from the ``clock`` it is given and
tells when it wants :meth:`~LiveProtocol.tick` called (:attr:`~LiveProtocol.deadline`).

Its phase moves only through the table of :mod:`.phases`: an input the phase does not
allow raises :class:`~.phases.LiveProtocolError` before any effect, and the
transport closes with its code and reason. This module dispatches client frames and keeps the
session's lifecycle; the other jobs work on a shared :class:`~.context.LiveContext`: user
turns (:mod:`.turns`), ``run_live`` events and tags (:mod:`.events`), the plugin's
wait API (:mod:`.waits`, this machine's methods), stored replays (:mod:`.replay`). The
lifecycle is not a job of its own: the ``send`` frames queued while the session opens, or
settled while stored calls wait, are the frames' dispatch, and both move the one phase.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from google.adk.events.event import Event

from adk_asgi.convert.options import ConverterOptions
from adk_asgi.errors import ClientError
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.continuation import Continuation
from adk_asgi.hitl.outcomes import EXPIRED as TIMED_OUT
from adk_asgi.hitl.pending import ChatState
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.live.calls import LiveCalls
from adk_asgi.live.coalesce import DeltaCoalescer
from adk_asgi.live.context import LiveContext
from adk_asgi.live.events import ModelEvents
from adk_asgi.live.outputs import SPEECH, Close, KeepFailure, OpenSession, Output, Settle
from adk_asgi.live.phases import LiveProtocolError, Phase, Phases
from adk_asgi.live.replay import REPLAYS, StoreReplays
from adk_asgi.live.streams import Response, Streams
from adk_asgi.live.turns import EARLY_SPEECH, Turns
from adk_asgi.live.waits import ToolMoves
from adk_asgi.serving.checks import (
    FrameRefused,
    check_chat,
    decode_resume_frame,
    decode_send_frame,
    frame_head,
)
from adk_asgi.wire.encoding import SdkVersion
from adk_asgi.wire.messages import ChatRequest

__all__ = [
    "BUSY",
    "EARLY_SPEECH",
    "REPLAYS",
    "TIMED_OUT",
    "LiveProtocol",
    "LiveProtocolError",
    "Phase",
]

NO_LIVE_REGENERATE: Final = (
    "regenerating is not supported in live mode: ADK takes back whole invocations, and a live"
    " connection is one"
)
BUSY: Final = 1013
"""The close code of a connection whose chat is busy elsewhere: "try again later"."""
QUEUED_SENDS: Final = 16
"""``send`` frames that may wait for the session to open; past this they are refused."""
AGENT_ENDED: Final = "the agent ended its live session: send again to start a new one"
"""Why a connection whose ``run_live`` returned takes no more requests (it then closes)."""
SESSION_FAILED: Final = "the live session ended after an error"
"""Why a connection whose ``run_live`` raised takes no more requests (it closes with 1011)."""
CHAT_BUSY: Final = "this chat is busy in another request or connection"
"""Why a connection whose chat another connection or request holds is refused (1013)."""


DEFAULT_OPTIONS: Final = ConverterOptions()
"""A machine's converter options when none are given (its own tests)."""


class LiveProtocol:
    def __init__(
        self,
        *,
        tools: ToolPolicy,
        new_message_id: Callable[[], str],
        clock: Callable[[], float],
        sdk: SdkVersion = 7,
        audio: bool = False,
        client_activity: bool | None = None,
        converting: ConverterOptions = DEFAULT_OPTIONS,
        wall_clock: Callable[[], float] | None = None,
        write_interval: float = 0.0,
        under_load: Callable[[float], float] | None = None,
        stored_streams: bool = False,
        chats_at: str | None = None,
        check_files: Callable[[int, int], None] | None = None,
    ) -> None:
        self.clock = clock
        self.out: list[Output] = []
        deltas = DeltaCoalescer[Response](write_interval, under_load)
        self.streams = Streams(self.out, sdk=sdk, deltas=deltas, record=stored_streams)
        self._context = context = LiveContext(
            out=self.out,
            streams=self.streams,
            tools=tools,
            new_message_id=new_message_id,
            clock=clock,
            audio=audio,
            client_activity=audio if client_activity is None else client_activity,
            converting=converting,
            wall_clock=wall_clock,
            chats_at=chats_at,
            check_files=check_files,
        )
        self.stored_streams = stored_streams
        """A stream store keeps each chat's answer under way (:mod:`adk_asgi.stores.resumable`):
        responses are recorded there, and a ``resume`` this connection has nothing for is read from
        there."""
        self._replays = StoreReplays(self.out, self.streams)
        self._turns = Turns(context)
        self._events = ModelEvents(context)
        self._phases = Phases()
        self.tools = ToolMoves(context, self._phases, self._events)
        """The answers to the tool pipeline (:mod:`.tools`' plugin): calls, waits, results."""
        self.failure: str | None = None
        self.close_code = 1000
        self._queued: list[tuple[str, ChatRequest]] = []
        """``send`` frames that arrived while the session was opening."""
        self._settling = 0
        """:class:`Settle` outputs the connection has not answered, refused or dispatched."""
        self._aborted: set[str] = set()
        """Queued ``send`` requests the client aborted before they were dispatched."""

    @property
    def phase(self) -> Phase:
        return self._phases.phase

    @property
    def calls(self) -> LiveCalls:
        return self._context.calls

    def _take(self) -> list[Output]:
        return self._context.take()

    @property
    def deadline(self) -> float | None:
        """When :meth:`tick` is due (on the ``clock``'s scale), or ``None``."""
        return self.streams.deadline

    def tick(self) -> list[Output]:
        self.streams.tick(self.clock())
        return self._take()

    @property
    def streaming(self) -> bool:
        """A response is under way (the model has more to say for it)."""
        return self.streams.response is not None or self.streams.draining is not None

    # --- client frames -----------------------------------------------------------------------

    def receive(self, text: str, decoded: ChatRequest | ClientError | None = None) -> list[Output]:
        """A text frame from the client. ``decoded``: a ``send`` frame's request, decoded
        (or refused) already, off the event loop
        (:func:`~adk_asgi.serving.checks.decode_send_frame`). Every frame is legal in every phase:
        what it gets depends on the phase."""
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
        elif kind in SPEECH:
            self._turns.speech(kind, session_open=self.phase == "open")
        elif kind == "ping":
            self.streams.frame(type="pong")
        else:
            error = f"unknown frame {kind!r}"
            self.streams.frame(type="error", requestId=request_id, errorText=error)
        return self._take()

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
        """Replay the chat's answer under way: this connection's, or one in the stream store
        (:mod:`.replay`)."""
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
        if self.stored_streams and self.chat_id is not None:
            self._replays.resume(request_id, last_sequence)
        else:
            self.streams.frame(type="no-active", requestId=request_id)

    def replay_started(self, request_id: str) -> list[Output]:
        """The store has an answer under way for the ``Replay`` of ``request_id``."""
        self._replays.started(request_id)
        return self._take()

    def replayed(self, request_id: str, piece: bytes) -> list[Output]:
        """The next stored piece of the answer a ``Replay`` follows."""
        self._replays.replayed(request_id, piece)
        return self._take()

    def replay_ended(self, request_id: str, *, found: bool) -> list[Output]:
        """The stored answer ended (or, ``found`` False, there was none): the request ends."""
        self._replays.ended(request_id, found=found)
        return self._take()

    def _abort(self, request_id: str) -> None:
        """The client stops reading ``request_id``. A ``send`` still waiting for the session
        goes to the model all the same (the stock clients' ``stop`` only stops reading), but
        its response streams to nobody."""
        if any(queued == request_id for queued, _ in self._queued):
            self._aborted.add(request_id)
        self._replays.stop(request_id)
        self.streams.abort(request_id)

    # --- the session's lifecycle -------------------------------------------------------------

    @property
    def chat_id(self) -> str | None:
        """The chat the connection serves, once it is bound."""
        return self._context.chat_id

    def bind(self, chat_id: str) -> list[Output]:
        """The connection serves ``chat_id`` (named in its URL) before any ``send``."""
        self._bind(chat_id)
        return self._take()

    def _bind(self, chat_id: str) -> None:
        self._phases.move("bind")
        self._context.chat_id = chat_id
        self.out.append(OpenSession(chat_id))

    def session_waiting(self) -> list[Output]:
        """The chat's stored calls wait for the user: the sends that came while the session
        was opening, and those to come until :meth:`session_started`, are the connection's to
        settle (:class:`~.outputs.Settle`), one at a time."""
        self._phases.move("session_waiting")
        queued, self._queued = self._queued, []
        self._settling += len(queued)
        self.out.extend(Settle(request_id, chat) for request_id, chat in queued)
        return self._take()

    def answered(self, request_id: str, answers: Continuation, *, waiting: bool) -> list[Output]:
        """The connection recorded ``answers`` (a continuation of the stored message) for
        ``request_id``: its response starts with what they show. ``waiting``: calls still wait
        (a browser tool just released), so the response ends there; else the model runs next
        (:meth:`session_started`) and the response goes on with the tools' results."""
        self._phases.move("answered")
        self._settled()
        self._turns.answered(request_id, answers, waiting=waiting)
        return self._take()

    def refused(self, request_id: str, reason: str) -> list[Output]:
        """A request the connection could not settle (it answers no waiting call)."""
        self._phases.move("refused")
        self._settled()
        self.streams.frame(type="error", requestId=request_id, errorText=reason)
        return self._take()

    def _settled(self) -> None:
        self._settling = max(0, self._settling - 1)

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
        drained, see :meth:`Turns.user_turn`) and it is kept for a ``resume`` if nobody sends.
        ``stored``: the chat's calls as the session has them (none waits by now), so a late
        answer to one of them is refused for what it is (closed), not as a stranger.
        ``state``: the session's (what the bridge keeps there, its title)."""
        self._phases.move("session_started")
        self._turns.titled = bookkeeping.title(state or {}) is not None
        self._turns.file_bytes = bookkeeping.file_bytes(state or {})
        if stored is not None:
            self.calls.state = stored
        if answers_history:
            self._context.unasked_response()
        self._flush_queued()
        return self._take()

    def dispatch(self, request_id: str, chat: ChatRequest) -> list[Output]:
        """Dispatch a request the connection took while ``answering`` (a new user message,
        once the calls it leaves are closed), now that the session is open."""
        self._phases.move("dispatch")
        self._settled()
        self._queued.append((request_id, chat))
        self._flush_queued()
        return self._take()

    def _dispatch(self, request_id: str, chat: ChatRequest) -> None:
        if self.phase == "closed":
            assert self.failure is not None
            self.streams.frame(type="error", requestId=request_id, errorText=self.failure)
            self.out.append(Close(self.close_code, self.failure))
            return
        if self.streams.busy():
            raise ClientError(409, "a response is still streaming on this connection")
        if chat.messages[-1].role == "user":
            self._turns.user_turn(request_id, chat)
        else:
            self._turns.answers(request_id, chat)

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

    def session_busy(self) -> list[Output]:
        """The chat is busy in another request or connection: its ``send`` is refused."""
        self._phases.move("session_busy")
        self._closed(CHAT_BUSY, BUSY)
        return self._take()

    def session_ended(self, error: BaseException | None) -> list[Output]:
        """``run_live`` raised ``error``, or returned (``None``).

        Returning is the agent's own end: a ``SequentialAgent`` whose last sub-agent said
        ``task_completed``, a Live API session that closed. The answer under way ends as it
        is and the socket closes normally (1000); the client's next message opens a new
        connection, and so a new session. An error is reported as ``on_error`` says, what the
        client was shown of the answer cut short is kept, and the socket closes with 1011.
        """
        self._phases.move("session_ended")
        if error is None:
            response = self.streams.response
            if response is not None:
                self.streams.end(response.converter.finish(), self.clock())
            self._closed(AGENT_ENDED, 1000)
            self.out.append(Close(1000, AGENT_ENDED))
            return self._take()
        converter = self._context.unasked_response().converter
        results = tuple(self._events.shown_results())  # (tagged with the response under way)
        failure = converter.fail_with(error)
        self.streams.end(failure + converter.finish(), self.clock())
        if converter.failure is not None:
            shown, text = converter.failure
            started_at, failed = converter.facts.started_at, tuple(converter.cards.running.failed)
            self.out.append(
                KeepFailure(converter.message_id, shown, text, started_at, failed, results)
            )
        self._closed(SESSION_FAILED, 1011)
        self.out.append(Close(1011, SESSION_FAILED))  # the writer sends what is queued, then closes
        return self._take()

    def _closed(self, failure: str, code: int) -> None:
        self.failure, self.close_code = failure, code
        self._flush_queued()

    # --- run_live events (live/events.py); the tool pipeline's methods are live/waits.py's ---

    def event(self, event: Event) -> list[Output]:
        self._phases.move("event")
        self._events.event(event)
        return self._take()

    def tag(self, event: Event) -> Event | None:
        """Tag an event with the ids the client knows and the user's decisions (history)."""
        return self._events.tag(event)
