"""The chat's tool calls as a history replay meets them (:mod:`.history`), sans-I/O.

The session's state (:func:`~adk_asgi.hitl.pending.chat_state`) is the whole chat's; a replay
goes through it event by event, so it also needs what was true *at that point*: which call an
ADK id meant then (ADK's ids repeat across a workflow's turns), which calls had a response
yet, which browser calls the user had let run.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.adk.events.event import Event

from adk_asgi.hitl.interrupts import client_call_id
from adk_asgi.hitl.pending import ChatState, ToolCall


class ReplayedCalls:
    """``state``: the chat's calls; :meth:`before` and :meth:`after` each replayed event."""

    def __init__(self, state: ChatState) -> None:
        self.state = state
        self.latest: dict[str, str] = {}
        """ADK's call id → the id the client knows its latest call by (:mod:`.interrupts`)."""
        self.responded: set[str] = set()
        """The calls with a response so far (ADK's ids)."""
        self.released: set[str] = set()
        """Browser calls the user let run so far."""

    def before(self, event: Event) -> None:
        for call in event.get_function_calls():
            if call.id and call.name:
                self.latest[call.id] = client_call_id(call.id, call.name, event)

    def after(self, event: Event) -> None:
        self.responded.update(r.id for r in event.get_function_responses() if r.id)

    def answered(self, answer_id: str) -> ToolCall | None:
        """The call a function response answers (by ADK's id, which the client may know by
        another: :func:`~adk_asgi.hitl.interrupts.client_call_id`)."""
        return self.state.calls.get(self.latest.get(answer_id, answer_id))

    def asked(self, approval_id: str) -> ToolCall | None:
        """The call an approval id asks about (the bridge's ``approval-<id>``, ADK's own, a
        workflow node's or a question's: its call's id)."""
        for call_id, asked in self.state.confirmation_of_call.items():
            if asked == approval_id:
                return self.state.calls.get(call_id)
        call_id = approval_id.removeprefix("approval-")
        return self.state.calls.get(call_id) or self.answered(approval_id)

    def waits_on_server(self, message_id: str) -> bool:
        """Whether calls of the message that the app answers are still open."""
        calls: Iterable[ToolCall | None] = map(self.state.calls.get, self.state.server_answered)
        return any(
            c.message_id == message_id and c.answered_as not in self.responded
            for c in calls
            if c is not None
        )
