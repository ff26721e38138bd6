"""The requests of one live connection that start or go on with a turn (sans-I/O).

A ``send`` is a new user message, or a continuation: answers to the calls a paused turn waits
on (an approval, a browser tool's result). A continuation is checked by the same checker as over
SSE, against the calls the machine has seen (:class:`~.calls.LiveCalls`), and the
rest of the turn streams under it (docs/internals/architecture.md#live-turn).
"""

from __future__ import annotations

from typing import Final

from google.adk.agents.live_request_queue import LiveRequest

from adk_asgi.convert.translate import user_content
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.continuation import Conflict, Continuation, continuation
from adk_asgi.hitl.pending import PAYLOADS_KEY
from adk_asgi.live.context import LiveContext
from adk_asgi.live.outputs import SPEECH, ToModel
from adk_asgi.wire.messages import ChatRequest

EARLY_SPEECH: Final = 16
"""Voice activity frames (``activity-start``…) taken before the session opens, at most: they
wait in the model's queue until it does; past this they are dropped (a flood of them sent
before a session grew the connection by 812 B each)."""


class Turns:
    __slots__ = ("_early_speech", "_last_early", "context", "file_bytes", "titled")

    def __init__(self, context: LiveContext) -> None:
        self.context = context
        self.titled = False
        """The chat has its title (``GET /chats``), from an earlier message or this one."""
        self.file_bytes = 0
        """The bytes of files the chat's user messages brought (``UserBounds.chat_files``)."""
        self._early_speech = 0
        """Voice activity frames passed on before the session opened (:data:`EARLY_SPEECH`)."""
        self._last_early: str | None = None

    def speech(self, kind: str, *, session_open: bool) -> None:
        """A voice activity frame: the user's spoken turn starts or ends, for the model.

        One that comes before the session opens waits in the model's queue (which holds it
        until then), unless it is the same frame twice in a row (it says nothing new) or past
        :data:`EARLY_SPEECH` of them, so that what a connection keeps before its session stays
        bounded."""
        if kind != "audio-end" and not self.context.client_activity:
            # Gemini closes the session on an activity signal its voice detection did not
            # leave to the client (the setup of a text connection, or the app's own choice).
            error = f"{kind}: the model detects speech on this connection; send audio-end"
            self.context.streams.frame(type="error", requestId="", errorText=error)
            return
        if not session_open:
            if kind == self._last_early or self._early_speech >= EARLY_SPEECH:
                return
            self._last_early = kind
            self._early_speech += 1
        self.context.out.append(ToModel(SPEECH[kind]()))
        if kind != "activity-start":
            self.context.streams.speech_ended()

    def user_turn(self, request_id: str, chat: ChatRequest) -> None:
        """A new user message (the request's last): pending waits are abandoned (denied), the
        model gets the text. What the app's ``request_state`` hook made of the request's
        extras (``chat.state``, :mod:`.extras`) is written with it, before the model gets it.

        A response still under way (aborted, or the model speaking unasked) is not this
        message's: the rest of its turn, up to the model's ``interrupted`` or
        ``turn_complete``, is drained into it, so it neither ends nor fills the new response.
        """
        last = chat.messages[-1]
        content = user_content(last)
        context = self.context
        adding = bookkeeping.content_file_bytes(content)
        if context.check_files is not None:
            context.check_files(self.file_bytes, adding)  # a refusal changes nothing
        closed = context.calls.move_on()  # (the model reads the results they get first)
        context.streams.cut_short()
        # A new message: the answers just given to old calls belong to their own messages.
        context.streams.begin(context.converter(context.new_message_id(), known_calls=set()))
        context.streams.open(request_id, [], context.clock())
        state_delta = {
            **(chat.state or {}),
            **bookkeeping.live_user_message(last.id, last.metadata),
        }
        if adding:
            self.file_bytes += adding
            state_delta[bookkeeping.FILE_BYTES_KEY] = self.file_bytes
        if not self.titled:
            title = bookkeeping.title_delta({}, content)
            state_delta |= title
            self.titled = bool(title)
        request = LiveRequest(content=content, state_delta=state_delta)
        context.out.append(ToModel(request, after_results=closed))

    def answers(self, request_id: str, chat: ChatRequest) -> None:
        """A continuation: answers to the waits of the paused turn; raises :class:`Conflict`."""
        context = self.context
        calls, streams = context.calls, context.streams
        message = chat.messages[-1]
        try:
            answers = continuation(message, calls.state)
        except Conflict:
            # Answers to calls that are closed already (an approval that timed out): the
            # response the server gave that message meanwhile is the truth; send it.
            if not streams.claim(request_id, message.id):
                raise
            return
        known = answers.known_calls | set(calls.state.calls)
        converter = context.converter(message.id, known_calls=known)
        streams.begin(converter)
        lead = answers.lead(converter.cards, context.tools)
        calls.answer(answers, chat.extra.get(PAYLOADS_KEY, {}))
        streams.open(request_id, lead, context.clock())
        if calls.still_paused():  # some calls of the paused step are still unanswered
            converter.waiting_on_calls()
            streams.end(converter.finish(), context.clock())

    def answered(self, request_id: str, answers: Continuation, *, waiting: bool) -> None:
        """The connection recorded ``answers`` (a continuation of the stored message) for
        ``request_id``: its response starts with what they show. ``waiting``: calls still wait
        (a browser tool just released), so the response ends there; else the model runs next
        and the response goes on with the tools' results."""
        context = self.context
        converter = context.converter(answers.message_id, known_calls=answers.known_calls)
        context.streams.begin(converter)
        lead = answers.lead(converter.cards, context.tools)
        context.streams.open(request_id, lead, context.clock())
        if waiting:
            converter.waiting_on_calls()
            context.streams.end(converter.finish(), context.clock())
