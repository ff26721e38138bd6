"""``run_live``'s events on one live connection: into responses, and tagged for history
(sans-I/O).

A request stream ends at the model's ``turn_complete`` — or earlier, when the turn pauses
because its tool calls wait for the user (an approval) or the browser (a client tool), so the
client, which only acts on a finished stream, can answer (:meth:`LiveContext.maybe_pause`).
"""

from __future__ import annotations

from typing import Any

from google.adk.events.event import Event

from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.pending import ToolCall
from adk_asgi.live import durable
from adk_asgi.live.context import LiveContext


def says_something(event: Event) -> bool:
    """Whether ``event`` has anything a response shows: content, speech heard or spoken, an
    error, a workflow node's output. Usage, ``turn_complete``, a resumption update and a
    state change alone have nothing."""
    if event.content is not None and event.content.parts:
        return True
    if event.input_transcription is not None or event.output_transcription is not None:
        return True
    return bool(event.error_code or event.error_message) or event.output is not None


def _of_a_response(event: Event) -> bool:
    """Whether ``event``, showing nothing, still tells of the response under way: its usage,
    its sources, the end of its turn."""
    return (
        event.usage_metadata is not None
        or event.grounding_metadata is not None
        or bool(event.turn_complete)
    )


def _model_said(event: Event) -> bool:
    """Whether the model said something in ``event`` (a tool step's results are not its
    words: the model has yet to read them)."""
    parts = event.content.parts or [] if event.content is not None else []
    return says_something(event) and not all(part.function_response for part in parts)


class ModelEvents:
    __slots__ = ("after_interruption", "context", "turn_called_tools")

    def __init__(self, context: LiveContext) -> None:
        self.context = context
        self.turn_called_tools = False
        self.after_interruption = False
        """An ``interrupted`` came of a turn no response shows: the ``turn_complete`` Gemini
        sends after it ends that turn, not the response open now."""

    def event(self, event: Event) -> None:
        if self.after_interruption:
            if says_something(event):
                self.after_interruption = False  # (a model that sends no ``turn_complete``)
            elif event.turn_complete:
                self.after_interruption = False
                return
        context = self.context
        streams, now = context.streams, context.clock()
        if streams.draining is not None:  # the end of a turn a new message cut short
            self._audio(event)
            if event.interrupted or event.turn_complete:
                streams.draining = None
                self.after_interruption = bool(event.interrupted)
            return
        response = streams.response
        if response is None and not says_something(event):
            # Only a request owns a response: usage, a resumption handle, a turn that
            # completes, a callback's state change open none (nor do they split one).
            self._audio(event)  # (an ``interrupted`` still stops what the browser plays)
            return
        if response is None:  # the model speaks with no request open (voice, buffering)
            response = streams.begin(context.converter(context.new_message_id()))
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
            else:
                # the model was cut short before it said anything of this response: the
                # interruption is of an earlier turn (its answer to the results of calls this
                # message closed, or to the history a new session sends)
                self.after_interruption = True
            return
        response.answered = response.answered or _model_said(event)
        streams.emit(response.converter.feed(event), now)
        calls = event.get_function_calls() if not event.partial else []
        if calls:
            self.turn_called_tools = True
            message_id = response.message_id
            context.calls.new_step(
                [
                    ToolCall(
                        c.id, c.name, dict(c.args or {}), event.invocation_id, message_id, False
                    )
                    for c in calls
                    if c.id and c.name
                ]
            )
            context.maybe_pause()
        if event.actions.transfer_to_agent:
            # The agent that called for the transfer ends its turn without a ``turn_complete``:
            # the response ends when the agent it handed over to completes its own turn.
            self.turn_called_tools = False
        if event.turn_complete:
            # A turn that called tools is followed by the model's answer to their results
            # (ADK sends them back): the response goes on until a turn without calls ends.
            if self.turn_called_tools:
                self.turn_called_tools = False
            elif not context.calls.waits and streams.response is not None:
                streams.end(streams.response.converter.finish(), now)

    def _results_of_another_message(self, event: Event, message_id: str) -> bool:
        results = event.get_function_responses()
        calls = self.context.calls.state.calls
        made_in = {calls[r.id].message_id for r in results if r.id in calls} - {None}
        return bool(made_in) and message_id not in made_in

    def _audio(self, event: Event) -> None:
        """Model speech goes straight out as binary frames (it is not part of the message)."""
        context = self.context
        if not context.audio:
            return
        if event.interrupted:
            context.streams.frame(type="interrupted")  # the client stops playing what is queued
        for part in (event.content.parts or []) if event.content is not None else []:
            blob = part.inline_data
            if blob is not None and blob.data and (blob.mime_type or "").startswith("audio/"):
                context.streams.send(blob.data)

    def tag(self, event: Event) -> Event | None:
        """Tag an event with the ids the client knows and the user's decisions (history); the
        step's merged results lose those stored as they came (:meth:`stored_result`)."""
        stored = self.context.calls.stored_early
        kept = durable.without(event, stored) if stored else event
        for answered in event.get_function_responses():
            stored.pop(answered.id or "", None)
        tagged = self._tagged(kept)
        return kept if tagged is None and kept is not event else tagged

    def stored_result(
        self,
        call_id: str,
        author: str,
        response: dict[str, Any],
        step: list[str],
        *,
        invalid: bool = False,
        kept: bool = False,
    ) -> Event | None:
        """The event that stores ``call_id``'s result now, tagged as ADK's would be, if it
        must be stored ahead of its step's (:meth:`~.calls.LiveCalls.store_early`)."""
        calls = self.context.calls
        call = calls.state.calls.get(call_id)
        if call is None or not calls.store_early(call_id, response, step):
            return None
        return self._result(call, author, response, invalid=invalid, kept=kept)

    def shown_results(self) -> list[Event]:
        """The events that store each result the stream showed on this connection, tagged as
        ADK's would be, for the I/O layer to store those a failed session left unstored."""
        calls = self.context.calls
        events = []
        for call_id, shown in calls.shown_results.items():
            call = calls.state.calls.get(call_id)
            if call is not None:
                result = self._result(
                    call, shown.author, shown.response, invalid=shown.invalid, kept=shown.kept
                )
                events.append(result)
        return events

    def _result(
        self, call: ToolCall, author: str, response: dict[str, Any], *, invalid: bool, kept: bool
    ) -> Event:
        event = durable.result(call, author, response)
        bookkeeping.add_calls(  # (as serving/invalid_calls.py and serving/as_returned.py tag)
            event, invalid_calls=[call.id] if invalid else [], as_returned=[call.id] if kept else []
        )
        return self._tagged(event) or event

    def _tagged(self, event: Event) -> Event | None:
        streams = self.context.streams
        response = streams.draining or streams.response
        if response is None or event.partial:
            return None
        if not (says_something(event) or _of_a_response(event)):
            # A callback's state change (stored before the user's message it runs for, say):
            # no response's, so it names none, or history would file the answer above it.
            return None
        if not says_something(event) and not event.usage_metadata and not response.answered:
            # The end of a turn that called tools, read once they returned (ADK runs them
            # between the calls and the end of their turn): a message that closed those calls
            # may be open now, the model not at it yet.
            return None
        if self._results_of_another_message(event, response.message_id):
            # The calls a new message closed, answered as the model reads it: stored before
            # that message, they are their own message's (history files a result by its call).
            return None
        decisions = self.context.calls.state.live_decisions
        return bookkeeping.tagged(
            event,
            message_id=response.message_id,
            # History's steps are the stream's: a step of this response (each response, a
            # continuation too, opens a step with its first model event).
            live_step=f"{response.key}.{response.converter.live_step}",
            cut=response is streams.draining,  # stored after the message that cut it
            started_at=response.converter.facts.started_at,
            decisions={
                r.id: decisions[r.id]
                for r in event.get_function_responses()
                if r.id in decisions and r.id is not None
            },
        )
