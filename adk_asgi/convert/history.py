"""A chat's history as its streams showed it (sans-I/O): each stored response replayed through
a new :class:`~.events.EventConverter`, its chunks through the client's own reducer
(:mod:`.ui_message`); between two responses of a message, the user's answers replayed as the
stock client made them (:mod:`.tool_answers`) and the lead chunks the continuation's response
sent (:meth:`~adk_asgi.hitl.continuation.Continuation.lead`). How a part looks is decided once,
by the code that streams it (docs/internals/architecture.md#one-derivation)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec
from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.client_messages import ClientMessages, Message
from adk_asgi.convert.data_parts import in_sent_order
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.metadata import MessageMetadata
from adk_asgi.convert.options import ConverterOptions
from adk_asgi.convert.replayed_calls import ReplayedCalls
from adk_asgi.convert.safe_history import readable_event
from adk_asgi.convert.tool_answers import add_tool_output, respond_to_approval
from adk_asgi.convert.tool_looks import cut_call_chunk, result_chunk
from adk_asgi.convert.ui_message import StreamingMessage
from adk_asgi.convert.user_parts import user_parts
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.continuation import Continuation
from adk_asgi.hitl.interrupts import ASKING_THE_USER
from adk_asgi.hitl.pending import (
    CONFIRMATION_TOOL,
    EXPIRED,
    INPUT_MOVED_ON,
    INTERRUPTED,
    MOVED_ON,
    REJECTED,
    ChatState,
    ToolCall,
    chat_state,
    client_approval_id,
    visible_events,
)
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import StartStep, ToolOutputError, UIMessageChunk
from adk_asgi.wire.messages import FilePart, UIMessage, ui_messages


class _Response:
    """One response of a message being rebuilt: its converter and the client's state.
    ``quiet``: what the bridge showed of the message outside any response (no start, no
    finish)."""

    def __init__(
        self, converter: EventConverter, message: StreamingMessage, *, quiet: bool = False
    ) -> None:
        self.converter = converter
        self.message = message
        self.quiet = quiet
        self.calls: set[str] = set()
        """The calls made in it (ADK's ids)."""


_OUTCOMES: Final = [MOVED_ON, EXPIRED, INTERRUPTED, INPUT_MOVED_ON]
"""What the bridge answers a call nobody answered (:mod:`adk_asgi.hitl.outcomes`); and
``REJECTED``, for a browser call whose approval it closed."""


class _Replay:
    def __init__(
        self,
        events: list[Event],
        policy: ToolPolicy,
        options: ConverterOptions,
        files: Mapping[str, FilePart],
        v7: bool,
        files_at: str | None = None,
    ) -> None:
        self.events = events
        self.files_at = files_at
        self.policy = policy
        self.options = options
        self.v7 = v7
        self.files = files
        self.state: ChatState = chat_state(events, policy)
        self.chat = ClientMessages()
        self.open: dict[str, _Response] = {}
        self.lead: dict[str, Continuation] = {}
        self.server_results: dict[str, list[tuple[ToolCall, Any]]] = {}
        self.calls = ReplayedCalls(self.state)
        self.saved: list[Event] = []
        """Untagged events of the images code execution saved, for the next model event."""
        self.failed = {
            tags.message_id
            for tags in map(bookkeeping.read, events)
            if tags.kept and tags.error is not None and tags.message_id
        }

    # --- the chat ------------------------------------------------------------------------

    def run(self) -> list[Message]:
        for event in in_sent_order(self.events):
            self.take(event)
        for message_id in list(self.lead) + list(self.server_results):  # nothing ran
            self.respond_now(message_id)
        for message_id in list(self.open):
            self.close(message_id)
        return self.chat.shown()

    def take(self, event: Event) -> None:
        self.calls.before(event)
        self.replay(event)
        self.calls.after(event)

    def replay(self, event: Event) -> None:
        tags = bookkeeping.read(event)
        content = event.content
        if event.input_transcription is not None or event.output_transcription is not None:
            message_id = tags.message_id or event.invocation_id  # (live speech)
            response = self.response(message_id, tags.started_at, cut=tags.cut)
            self.apply(response, response.converter.feed(event))
            return
        if event.author == "user" and tags.approved_call is None and not tags.error:
            parts = user_parts(content.parts, self.files) if content and content.parts else []
            if parts:
                message: Message = {
                    "id": tags.user_message_id or event.id,
                    "role": "user",
                    "parts": msgspec.to_builtins(parts),
                }
                if tags.user_metadata is not None:
                    message["metadata"] = tags.user_metadata
                self.chat.add(message)
                return
            self.answers(event)
            return
        if tags.approved_call is not None:
            self.released(tags.approved_call)
            return
        if content is None and tags.message_id is None and event.actions.artifact_delta:
            # ADK's code executor yields the images it saved just before the model event that
            # names them (convert/code_execution.py); a live connection leaves it untagged
            self.saved.append(event)
            return
        message_id = tags.message_id or event.invocation_id
        self.elsewhere(event, message_id)
        response = self.response(message_id, tags.started_at, cut=tags.cut)
        converter = response.converter
        if tags.kept:  # what an answer cut short had shown (convert/failures.py)
            self.apply(response, converter.feed(event))
            cut: list[UIMessageChunk] = [
                cut_call_chunk(self.policy, c.id, c.name, c.input) for c in tags.cut_calls
            ]
            if cut and not (content and content.parts):  # only calls were streaming: a step
                cut = [StartStep(), *cut]
            self.apply(response, cut)
            if tags.error is not None:
                self.apply(response, converter.fail(tags.error))
            return
        if (event.error_code or event.error_message) and message_id in self.failed:
            converter.facts.see(event)  # (the kept answer says what the client was shown)
            return
        for call_id, approved in tags.decisions.items():  # the user's, on a live connection
            self.decide(response, call_id, approved)
        response.calls.update(c.id for c in event.get_function_calls() if c.id)
        for saved in self.saved:
            self.apply(response, converter.feed(saved))
        self.saved.clear()
        self.apply(response, converter.feed(event))

    def decide(self, response: _Response, call_id: str, approved: bool) -> None:
        """A decision on a call the live bridge held for the user, made while it streamed."""
        streaming = response.message
        answered = [streaming.message]
        approval_id = client_approval_id(call_id)
        reason = self.state.reasons.get(approval_id)  # (recorded with the decision)
        try:
            respond_to_approval(answered, approval_id, approved, reason)
        except LookupError:
            return  # (decided already, or closed unanswered: shown by the close)
        streaming.message = answered[0]
        if approved:
            return
        why = self.state.closed_unanswered(call_id)
        cards = response.converter.cards
        denial = cards.deny(call_id) if why is None else cards.closed_unanswered(call_id, why)
        self.apply(response, denial)

    # --- responses -----------------------------------------------------------------------

    def response(
        self, message_id: str, started_at: float | None, *, cut: bool = False
    ) -> _Response:
        """The open response of the message, or a new one. ``cut``: the end of a live turn
        the user cut short with a new message is stored after that message: a message new
        then goes before it."""
        response = self.open.get(message_id)
        if response is not None and response.quiet:
            self.close(message_id)
            response = None
        if response is not None:
            started = response.converter.facts.started_at
            if started_at is None or started_at == started:
                return response
            self.close(message_id)  # (another response of the message: a live turn)
        last = self.chat.find(message_id)
        response = self.begin(message_id, started_at)
        converter = response.converter
        if last is None:
            self.chat.add(response.message.message, before_the_last_user_message=cut)
        self.apply(response, converter.start())
        for call, result in self.server_results.pop(message_id, []):
            self.apply(response, converter.cards.tool_result(call.id, result, call.name))
        answered = self.lead.pop(message_id, None)
        if answered is not None and self.calls.waits_on_server(message_id):
            converter.waiting_on_server()
        if answered is not None:
            answered.redenied = [  # denials the page sends again, not shown yet
                p["toolCallId"]
                for p in (last or {}).get("parts", [])
                if p.get("state") == "approval-responded"
                and (p.get("approval") or {}).get("approved") is False
                and p["toolCallId"] not in answered.denied
            ]
            self.apply(response, answered.lead(converter.cards, self.policy))
        return response

    def close(self, message_id: str) -> None:
        response = self.open.pop(message_id, None)
        if response is None or response.quiet:
            return
        if response.calls - self.calls.responded:  # it ended on calls left waiting
            response.converter.waiting_on_calls()
        self.apply(response, response.converter.finish())

    def quiet(self, message_id: str) -> _Response:
        """The open response of the message, or a quiet one (see :class:`_Response`)."""
        response = self.open.get(message_id)
        return response if response is not None else self.begin(message_id, None, quiet=True)

    def begin(self, message_id: str, started_at: float | None, *, quiet: bool = False) -> _Response:
        """A response of the message, opened: its converter knows the calls the client
        holds parts for, and it continues the message as the client has it."""
        known = self.chat.known_calls(message_id)
        converter = self.options.converter(
            message_id,
            policy=self.policy,
            known_calls=known,
            started_at=started_at,
            files_at=self.files_at,
        )
        streaming = StreamingMessage.begin(self.chat.find(message_id), message_id, v7=self.v7)
        response = self.open[message_id] = _Response(converter, streaming, quiet=quiet)
        return response

    def apply(self, response: _Response, chunks: Iterable[UIMessageChunk]) -> None:
        streaming = response.message
        for chunk in chunks:  # (every chunk, ai@7's too: admit_messages takes out what a
            streaming.apply(msgspec.to_builtins(chunk))  # v6 client is not sent, after)
        self.chat.replace(streaming.message)

    # --- the page's answers --------------------------------------------------------------

    def elsewhere(self, event: Event, message_id: str) -> None:
        """Results in ``event`` for calls of an earlier message (Gemini Live reads the answers
        of the calls a new message closed in its turn): shown on their calls' message."""
        for answer in event.get_function_responses():
            call = self.calls.answered(answer.id or "")
            if call is None or call.message_id in (None, message_id):
                continue
            if self.chat.find(call.message_id) is not None:
                self.show_result(call.message_id, answer, event)

    def closing(self, event: Event) -> bool:
        """What the bridge closed unanswered (:mod:`adk_asgi.hitl.closing`): a wait that ran out,
        calls the user left for a new message, calls a stopped server left. No client did
        it: each call's message shows it as a stream shows a wait that closed, in no response
        of its own (its metadata is its responses')."""
        tags = bookkeeping.read(event)
        closed = [*tags.closed_approvals, *tags.expired]
        outcomes = [
            r
            for r in event.get_function_responses()
            if r.response in _OUTCOMES
            or (r.response == REJECTED and client_approval_id(r.id or "") in closed)
        ]
        if not closed and not outcomes:
            return False
        for approval_id in closed:
            call = self.calls.asked(approval_id)
            if call is None or call.message_id is None:
                continue
            response = self.quiet(call.message_id)
            cards = response.converter.cards
            if approval_id == call.id and call.name in ASKING_THE_USER:  # a question: its
                result = self.state.results.get(call.id)  # answer is that nobody answered
                self.apply(response, cards.tool_result(call.id, result, call.name))
                continue
            why = self.state.closed_unanswered(call.id)
            if why is not None:
                self.apply(response, cards.closed_unanswered(call.id, why))
        for answer in outcomes:
            call = self.calls.answered(answer.id or "")
            if call is not None and call.message_id is not None:
                self.show_result(call.message_id, answer, event)
        return True

    def show_result(self, message_id: str, answer: types.FunctionResponse, event: Event) -> None:
        """A call's result, on its message, outside a response of its own."""
        response = self.quiet(message_id)
        out: list[UIMessageChunk] = []
        response.converter.cards.response(answer, {}, out, event)
        self.apply(response, out)

    def answers(self, event: Event) -> None:
        if self.closing(event):
            return
        for answer in event.get_function_responses():
            answer_id = answer.id or ""
            response = answer.response or {}
            if answer.name == CONFIRMATION_TOOL:
                asked = self.calls.asked(answer_id)
                if asked is None or asked.message_id is None:
                    continue
                self.approval_answered(asked, answer_id, response)
                continue
            call = self.calls.answered(answer_id)
            if call is None or call.message_id is None:
                continue
            if self.state.confirmation_of_call.get(call.id) == call.id:  # a node's approval
                self.approval_answered(call, call.id, response)
                continue
            if call.id in self.state.server_answered:  # the app's answer (server_answers.py)
                if call.message_id in self.lead:  # the page's answers before it: a response
                    self.respond_now(call.message_id)  # of their own
                self.close(call.message_id)
                self.server_results.setdefault(call.message_id, []).append((call, response))
                continue
            if not (self.policy.is_client_tool(call.name) or call.name in ASKING_THE_USER):
                continue
            self.close(call.message_id)
            if response == REJECTED and call.id in self.state.gated:
                approval = client_approval_id(call.id)
                reason = self.state.reasons.get(approval)
                self.chat.act(call.message_id, respond_to_approval, approval, False, reason)
                self.continuing(call.message_id).denied.append(call.id)
                continue
            if call.id in self.state.gated and call.id not in self.calls.released:
                self.released(call.id)  # (approved with its result, in one request)
            pending = self.lead.get(call.message_id)
            if pending is not None and call in pending.released:  # its answer is a request of
                self.respond_now(call.message_id)  # its own, after the response that released it
            shown = result_chunk(self.policy, call.id, call.name, call.args, response)
            if isinstance(shown, ToolOutputError):
                output: tuple[Any, ...] = ("output-error", None, shown.error_text)
            else:
                output = ("output-available", shown.output, None)
            self.chat.act(call.message_id, add_tool_output, call.id, *output)
            self.continuing(call.message_id)

    def approval_answered(self, call: ToolCall, approval_id: str, answer: dict[str, Any]) -> None:
        """``addToolApprovalResponse`` on ``call``'s approval (ADK's confirmation, or a
        workflow node's), as its stored answer says."""
        assert call.message_id is not None
        self.close(call.message_id)
        approved = answer.get("confirmed") is True
        reason = self.state.reasons.get(approval_id)
        self.chat.act(call.message_id, respond_to_approval, approval_id, approved, reason)
        answering = self.continuing(call.message_id)
        if not approved:
            answering.denied.append(call.id)
        else:  # the server ran it: a run that raised failed it, as the stream showed
            answering.confirmed.append(call)

    def released(self, call_id: str) -> None:
        call = self.state.calls.get(call_id)
        if call is None or call.message_id is None:
            return
        self.close(call.message_id)
        approval = client_approval_id(call_id)
        reason = self.state.reasons.get(approval)
        self.chat.act(call.message_id, respond_to_approval, approval, True, reason)
        self.continuing(call.message_id).released.append(call)
        self.calls.released.add(call_id)

    def respond_now(self, message_id: str) -> None:
        """The response to what the page answered so far, in which nothing more runs."""
        self.close(message_id)
        self.response(message_id, None)
        self.close(message_id)

    def continuing(self, message_id: str) -> Continuation:
        return self.lead.setdefault(message_id, Continuation(message_id=message_id))


def rebuild_messages(
    events: Iterable[Event],
    policy: ToolPolicy,
    files: Mapping[str, FilePart] | None = None,
    *,
    speakers: bool = False,
    metadata: MessageMetadata | None = None,
    send_usage: bool = False,
    v7: bool = False,
    files_at: str | None = None,
    model: str | None = None,
) -> list[UIMessage]:
    """The chat as its client built it. ``files``: the file parts of the uploads the artifact
    service keeps, by name, shown where the user's message has their placeholder.
    ``speakers``, ``metadata``, ``send_usage``, ``model``: the app's converter options, as its
    streams had them. ``v7``: the client is ai@7 (else ai@6: its parts where the reducers differ).
    ``files_at``: the chat's path, whose file route serves the images code execution drew
    (:attr:`.EventConverter.files_at`)."""
    persisted = [readable_event(e) for e in visible_events(events) if not e.partial]
    options = ConverterOptions(
        send_usage=send_usage, message_metadata=metadata, speakers=speakers, model=model
    )
    replayed = _Replay(persisted, policy, options, files or {}, v7, files_at).run()
    return ui_messages(replayed)
