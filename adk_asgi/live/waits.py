"""Tool calls waiting for the user, as one live connection's machine sees them (sans-I/O).

ADK's tool pipeline asks (through the plugin of :mod:`.tools`, which holds the futures)
what a call waits for and what its answer means; these are the answers, an object the machine
(:mod:`.protocol`) holds and shares its context, phases and model events with, so the plugin
never reads the machine's fields.
"""

from __future__ import annotations

from typing import Any

from google.adk.events.event import Event

from adk_asgi.hitl.outcomes import EXPIRED as TIMED_OUT
from adk_asgi.hitl.outcomes import reason_payload
from adk_asgi.hitl.pending import ToolCall, client_approval_id
from adk_asgi.live.calls import ShownResult, WaitKind
from adk_asgi.live.context import LiveContext
from adk_asgi.live.durable import ClosedHow
from adk_asgi.live.events import ModelEvents
from adk_asgi.live.outputs import Output
from adk_asgi.live.phases import Phases
from adk_asgi.wire.chunks import DataChunk


class ToolMoves:
    """The machine's answers to the tool pipeline, :attr:`LiveProtocol.tools
    <.protocol.LiveProtocol.tools>`: each is the ``tool`` move of the machine's phase table
    (legal while the session is open, and after it closed for a tool that finishes late), then
    its effect on the connection's context; those that send return the outputs."""

    __slots__ = ("_context", "_events", "_phases")

    def __init__(self, context: LiveContext, phases: Phases, events: ModelEvents) -> None:
        self._context = context
        self._phases = phases
        self._events = events

    def call(self, call_id: str, name: str, args: dict[str, Any], invocation_id: str) -> ToolCall:
        """The call ADK is about to run (it may run before its event reached the machine)."""
        self._phases.move("tool")
        calls = self._context.calls
        known = calls.state.calls.get(call_id)
        if known is not None:
            return known
        return calls.remember(ToolCall(call_id, name, dict(args), invocation_id, None, False))

    def early_result(self, call_id: str) -> Any | None:
        """The browser's result that came with the call's approval, taken (once)."""
        self._phases.move("tool")
        return self._context.calls.early_results.pop(call_id, None)

    def asked(self, call_id: str, descriptor: Any) -> None:
        """What the tool asks the user about the call (``request_confirmation``), shown with
        its approval request."""
        self._phases.move("tool")
        self._context.calls.descriptors[call_id] = descriptor

    def confirmed_payload(self, call_id: str, asked_payload: Any | None) -> Any | None:
        """The payload the user answered the call's approval with, taken: its
        ``confirmationPayloads``, else the user's reason (``{"reason": …}``) when the tool
        asked with no payload of its own, as over SSE (:mod:`adk_asgi.hitl.continuation`)."""
        self._phases.move("tool")
        calls = self._context.calls
        reason = calls.reasons.pop(call_id, None)
        if call_id in calls.payloads:
            return calls.payloads.pop(call_id)
        return reason_payload(reason) if reason and asked_payload is None else None

    def decision_reason(self, call_id: str) -> str | None:
        """The reason the user gave with the decision on a browser tool's approval, taken: it
        has no payload, as over SSE (a ``confirmationPayloads`` entry for it is dropped)."""
        self._phases.move("tool")
        calls = self._context.calls
        calls.payloads.pop(call_id, None)
        return calls.reasons.pop(call_id, None)

    def wait(self, call: ToolCall, kind: WaitKind) -> list[Output]:
        """``call`` waits for the user's decision or the browser's result; the answer comes
        as a :class:`~.outputs.Resolve` (or :meth:`timed_out` is called)."""
        self._phases.move("tool")
        self._context.calls.open(call, kind)
        self._context.maybe_pause()
        return self._context.take()

    def timed_out(self, call_id: str) -> tuple[Any, list[Output]]:
        """The wait of ``call_id`` ran out: its outcome (denied, or :data:`TIMED_OUT`) and what
        to send. The paused message goes on with no request open: what follows reaches the
        client as that message's continuation (``resume``, or the user's late answer)."""
        self._phases.move("tool")
        context = self._context
        wait = context.calls.waits.get(call_id)
        if wait is None or not context.calls.close(wait):
            return None, context.take()
        if wait.kind == "result":
            context.unasked_response(wait.call.message_id)
            return TIMED_OUT, context.take()
        return False, context.take()

    def decided(
        self, call: ToolCall, approved: bool, *, closed: ClosedHow | None = None
    ) -> list[Output]:
        """The decision on a gated call is final: the user's, or a denial because nobody
        answered (``closed``), which the client sees as an error saying so, not as a
        denial."""
        self._phases.move("tool")
        context = self._context
        state = context.calls.state
        state.live_decisions[call.id] = approved
        approval_id = client_approval_id(call.id)
        if closed == "expired":
            state.expired.add(approval_id)
        elif closed == "moved-on":
            state.closed_approvals.add(approval_id)
        if not approved:
            message_id = state.calls.get(call.id, call).message_id
            converter = context.unasked_response(message_id).converter
            why = state.closed_unanswered(call.id)
            chunks = (
                converter.cards.deny(call.id)
                if why is None
                else converter.cards.closed_unanswered(call.id, why)
            )
            context.streams.emit(chunks, context.clock())
        return context.take()

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
        """What stores a tool's result at once, before :meth:`tool_finished` shows it: a
        result next to a call that waits is stored as it comes, not when the step's last call
        returns (:meth:`~.calls.LiveCalls.store_early`); ``step``: the calls of its model
        event. ``None`` when ADK stores it. ``invalid``, ``kept``: as :meth:`tool_finished`
        takes them, tagged on the event as the bridge's plugins tag ADK's."""
        self._phases.move("tool")
        return self._events.stored_result(
            call_id, author, response, step, invalid=invalid, kept=kept
        )

    def tool_finished(
        self,
        call_id: str | None,
        result: Any,
        *,
        invalid: bool = False,
        kept: bool = False,
        ran_by: str | None = None,
    ) -> list[Output]:
        """A tool call's result, from the tool pipeline: shown at once, so a server tool's
        output reaches the client before the turn pauses for its sibling calls. ``invalid``:
        the result is ADK's refusal of the call (shown as ``tool-input-error``). ``kept``: the
        tool returned ADK's wrapper shape itself (:mod:`adk_asgi.convert.returned`). ``ran_by``:
        the agent whose tool returned the result (an object, as ADK stores it), which is kept
        if the session fails before ADK stores it (:attr:`~.calls.LiveCalls.shown_results`)."""
        self._phases.move("tool")
        context = self._context
        if not call_id:
            return context.take()
        calls = context.calls
        calls.finished.add(call_id)
        if result is None:  # a long-running tool left it open for the app to answer
            calls.left_to_server(call_id)
        elif ran_by is not None:
            calls.shown_results[call_id] = ShownResult(ran_by, result, invalid, kept)
        response = context.streams.response
        if response is not None and result is not None:
            call = calls.state.calls.get(call_id)
            name = call.name if call is not None else ""
            asked = call_id in calls.state.live_decisions
            cards = response.converter.cards
            shown = cards.tool_result(
                call_id, result, name, asked=asked, invalid=invalid, kept=kept
            )
            context.streams.emit(shown, context.clock())
        context.maybe_pause()
        return context.take()

    def data(self, chunk: DataChunk) -> tuple[str | None, list[Output]]:
        """An app's data part, sent by a tool or a callback (``send_data``): shown at once in
        the response under way (before the tool's result); its message id, and what to send.
        With no response under way it is not shown (``None``)."""
        self._phases.move("tool")
        context = self._context
        response = context.streams.response
        if response is None:
            return None, context.take()
        context.streams.emit([chunk], context.clock())  # (live holds no calls: convert/events.py)
        return response.message_id, context.take()
