"""The session task of one live connection: the chat's lock, its stored state, ``run_live``.

A connection (:mod:`.connection`) spawns it when its protocol machine asks to open the chat
(:class:`~.outputs.OpenSession`). It holds the chat's lock for the session's life,
settles what the stored session leaves waiting for the user before the model runs, starts
``run_live`` and feeds its events to the machine, and tells the machine how the session ended.
It records the chat's answers for the stream store while it holds the chat, so that another
connection (on any worker) can resume them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, Final

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.session import Session
from google.genai import types

from adk_asgi.errors import ClientError, about, log_failure
from adk_asgi.hitl.pending import (
    CONFIRMATION_TOOL,
    PAYLOADS_KEY,
    ChatState,
    chat_state,
    visible_events,
)
from adk_asgi.live.outputs import KeepFailure, Output, Record, Settle, ToModel
from adk_asgi.live.phases import LiveProtocolError
from adk_asgi.live.protocol import LiveProtocol
from adk_asgi.live.queue import LiveQueue
from adk_asgi.live.record import LiveRecorder
from adk_asgi.live.tools import ToolWaits
from adk_asgi.serving.answers import accept_answers, close_left_calls, keep_shown
from adk_asgi.serving.finish_tools import finish_ran_tools
from adk_asgi.serving.pace import RunSignal, paced_by
from adk_asgi.serving.request_state import RESERVED_PREFIX
from adk_asgi.serving.services import Services
from adk_asgi.serving.session_handover import hand_over
from adk_asgi.serving.stale_sessions import changed_elsewhere
from adk_asgi.stores.locks import ChatBusy, ChatKey

TASK_COMPLETED: Final = "task_completed"
"""The tool ADK gives each sub-agent of a live ``SequentialAgent`` to say it is done."""


class LiveSession:
    """The session task of one connection (:meth:`run`), and what the connection hands it:
    the requests to settle against the stored session (:attr:`settles`)."""

    def __init__(
        self,
        services: Services,
        user_id: str,
        protocol: LiveProtocol,
        carry_out: Callable[[list[Output]], None],
        *,
        queue: LiveQueue,
        waits: ToolWaits,
        audio: bool,
    ) -> None:
        self.services = services
        self.user_id = user_id
        self.protocol = protocol
        self.carry_out = carry_out
        self.queue = queue
        self.waits = waits
        self.audio = audio
        self.settles: asyncio.Queue[Settle] = asyncio.Queue()
        self.recorder: LiveRecorder | None = None
        """Records the chat's answers for the stream store while the session holds the chat."""
        self._opened: Session | None = None

    def _request(self) -> str | None:
        """The ``requestId`` of the response under way, if any (what a failure names)."""
        response = self.protocol.streams.response
        return response.request_id if response is not None else None

    async def run(self, chat_id: str) -> None:
        with about(chat_id):  # what the log says of a failure names the chat
            await self._run(chat_id)

    async def _run(self, chat_id: str) -> None:
        services = self.services
        key = services.chat_key(self.user_id, chat_id)
        try:
            async with services.locks.hold(key, services.limits.busy_timeout):
                if services.streams is not None:
                    self.recorder = LiveRecorder(services.streams, key)
                try:
                    await self._session(chat_id, key)
                    self.carry_out(self.protocol.session_ended(None))
                except LiveProtocolError:
                    raise  # the connection closes with its code (live/connection.py)
                except Exception as exc:
                    # run_live raises without an error event (unlike run_async): the client
                    # reads what ``on_error`` says, and what it was shown is kept
                    log_failure("the live session failed", exc, request_id=self._request())
                    outputs = self.protocol.session_ended(changed_elsewhere(exc))
                    # Kept, and its recording ended, before the client hears of it: a page
                    # that reloads at once finds it in history, not a stream still open.
                    for output in outputs:
                        if isinstance(output, KeepFailure):
                            await self._keep_failure(output)
                        elif isinstance(output, Record) and self.recorder is not None:
                            self.recorder.record(output)
                    if self.recorder is not None:
                        await self.recorder.aclose()
                    self.carry_out(outputs)
                finally:
                    if self.recorder is not None:
                        # (while the chat is still this connection's: the next one to hold
                        # it may start a stream of its own at once)
                        await self.recorder.aclose()
        except ChatBusy:
            # The connection stays open until its request is refused with this reason.
            self.carry_out(self.protocol.session_busy())
        except LiveProtocolError:
            raise
        except Exception as exc:  # the chat's lock could not be taken (its backend failed)
            log_failure("the live session could not start", exc, chat_id=chat_id)
            self.carry_out(self.protocol.session_ended(exc))

    async def _session(self, chat_id: str, key: ChatKey) -> None:
        """The chat's live session, from its stored state to the end of ``run_live``."""
        services = self.services
        protocol = self.protocol
        self.waits.claim = functools.partial(_claim_one, services, key)
        session = self._opened = await services.open_session(self.user_id, chat_id)
        # (and the approved calls a stopped server left without a result, which ADK's live
        # flow would run again as ``run_live`` starts: no other request holds the chat)
        stored = await close_left_calls(services, session, moved_on=False, approved_unrun=True)
        # A live SequentialAgent that finished leaves its last ``task_completed`` result at the
        # end of the history, which Gemini would answer as the session opens: the first
        # agent would run again, unasked. The session waits for the user's message instead,
        # and the model gets it with the history, which it answers.
        ended = _ends_with_a_finished_sequence(session.events)
        then, stored = await self._settle_waiting_calls(session, stored, for_a_message=ended)
        history = _ends_with_user_turn(session.events) and not ended
        outputs = protocol.session_started(
            answers_history=history, stored=stored, state=session.state
        )
        self.carry_out(outputs)
        later = [] if then is None else [then]
        while not self.settles.empty():  # sent while the last answers were recorded
            later.append(self.settles.get_nowait())
        for settle in later:
            dispatched = protocol.dispatch(settle.request_id, settle.chat)
            if ended:
                dispatched = await self._stored_with_history(session, dispatched)
                ended = False
            self.carry_out(dispatched)
            outputs += dispatched
        if opening := _opening_state(outputs):  # (the model reads its queue once run_live runs)
            await services.session_service.append_event(session, _state_event(opening))
        hand_over(session)  # not read again (serving/session_handover.py)
        events = services.live_runner.run_live(
            user_id=self.user_id,
            session_id=chat_id,
            live_request_queue=self.queue,
            run_config=services.live_run_config_for(audio=self.audio),
        )

        async def consume() -> None:
            async for event in events:
                self.carry_out(protocol.event(event))

        # A closed socket stops the session only once the tools that ran have their results
        # stored (serving/finish_tools.py); the signal is the session's, as an SSE run's is.
        signal = RunSignal()
        with paced_by(signal):
            await finish_ran_tools(consume(), signal, services.limits.live_detached_timeout)

    async def _keep_failure(self, failure: KeepFailure) -> None:
        """The answer the session failed in is kept as the client saw it, in the session as
        ``run_live`` left it (the one opened before it holds none of its events)."""
        session = self._opened
        try:
            if session is not None:
                session = await self.services.session(self.user_id, session.id) or session
        except Exception as exc:
            log_failure("the failed session could not be read; kept as opened", exc)
        await keep_shown(
            self.services,
            session,
            failure.message_id,
            failure.shown,
            failure.error_text,
            started_at=failure.started_at,
            failed=failure.failed,
            results=failure.results,
        )

    async def _stored_with_history(self, session: Session, outputs: list[Output]) -> list[Output]:
        """``outputs`` without the user's message for the model, stored in the session instead
        (with the state its request writes): ``run_live`` sends it with the history."""
        for output in outputs:
            if isinstance(output, ToModel) and output.request.content is not None:
                request = output.request
                actions = EventActions(state_delta=request.state_delta or {})
                message = Event(
                    invocation_id=Event.new_id(),
                    author="user",
                    content=request.content,
                    actions=actions,
                )
                await self.services.session_service.append_event(session, message)
                return [kept for kept in outputs if kept is not output]
        return outputs

    async def _settle_waiting_calls(
        self, session: Session, state: ChatState, *, for_a_message: bool = False
    ) -> tuple[Settle | None, ChatState]:
        """Before the model runs on a chat whose stored calls wait for the user (a connection
        that is gone left them), the client's requests are settled against the session, as
        over SSE: answers are checked, claimed and recorded — ADK runs the confirmed tools as
        ``run_live`` starts — until no call waits. A new user message closes what waits and
        is returned, for the open session. ``state``: the chat's calls now; returned as they
        stand once settled. ``for_a_message``: wait for a user message even if no call waits."""
        services = self.services
        if not (state.waiting() or for_a_message):
            return None, state
        self.carry_out(self.protocol.session_waiting())
        while True:
            settle = await self.settles.get()
            message = settle.chat.messages[-1]
            if message.role == "user":
                return settle, await close_left_calls(services, session, moved_on=True)
            payloads = settle.chat.extra.get(PAYLOADS_KEY, {})
            try:
                answers, content = await accept_answers(
                    services, self.user_id, session, message, payloads
                )
            except ClientError as exc:  # a Conflict, or a misfit answer (422 over SSE)
                self.carry_out(self.protocol.refused(settle.request_id, str(exc)))
                continue
            if content is not None:
                answer = Event(invocation_id=Event.new_id(), author="user", content=content)
                await services.session_service.append_event(session, answer)
            state = chat_state(session.events, services.tools)
            waiting = bool(state.waiting())
            self.carry_out(self.protocol.answered(settle.request_id, answers, waiting=waiting))
            if not waiting:
                return None, state


def _opening_state(outputs: list[Output]) -> dict[str, Any]:
    """What the app's ``request_state`` hook made of the extras of the message that opens the
    session (:mod:`.extras`): the state its turn writes, but the bridge's own keys."""
    for output in outputs:
        if isinstance(output, ToModel) and output.request.content is not None:
            delta = output.request.state_delta or {}
            return {k: v for k, v in delta.items() if not k.startswith(RESERVED_PREFIX)}
    return {}


def _state_event(state: dict[str, Any]) -> Event:
    """The opening message's state, in the session before ``run_live`` starts: the Live API
    takes the instruction once, as it connects, so ``{mode}`` there reads it (the message's
    ``LiveRequest`` writes it again, with the message, as every turn's)."""
    return Event(
        invocation_id=Event.new_id(), author="user", actions=EventActions(state_delta=state)
    )


async def _claim_one(services: Services, key: ChatKey, answer_id: str) -> bool:
    return await services.claims.claim(key, [answer_id])


def _ends_with_user_turn(events: list[Event]) -> bool:
    """Whether the model answers the history as the session opens: Gemini does when what it
    is sent ends with the user's turn (text, or the answers to calls). ADK leaves its
    confirmation requests and answers out of what the model sees, and so does this; a spoken
    answer is the model's turn though ADK stores only its transcription."""
    for event in reversed(visible_events(events)):
        said = event.output_transcription
        if not event.partial and said is not None and said.finished and said.text:
            return False  # an answer spoken aloud: ADK keeps only its transcription
        if event.partial or event.content is None:
            continue
        if any(not _is_confirmation(part) for part in event.content.parts or []):
            return event.content.role == "user"
    return False


def _ends_with_a_finished_sequence(events: list[Event]) -> bool:
    """Whether the last thing the model would read is the result of a live
    ``SequentialAgent``'s ``task_completed``: the sequence ran to its end."""
    for event in reversed(visible_events(events)):
        if event.partial or event.content is None or not event.content.parts:
            continue
        results = event.get_function_responses()
        return bool(results) and all(result.name == TASK_COMPLETED for result in results)
    return False


def _is_confirmation(part: types.Part) -> bool:
    named = part.function_call or part.function_response
    return named is not None and named.name == CONFIRMATION_TOOL
