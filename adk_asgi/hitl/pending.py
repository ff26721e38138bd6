"""Server-side truth about tool calls, read from a chat's ADK session events.

Nothing the client sends about a tool call is believed until it is checked here: an approval
id must name a confirmation that is still open, a tool result must answer a client-tool call
that is still open, in *this* user's session. Pure functions of the persisted events (no I/O),
so the same rules hold for in-memory and database sessions and across restarts.

What the bridge itself must remember — that a client tool call was approved and the browser
was told to run it, and the reason the user gave with the decision — is recorded as a
content-less event carrying the bridge's tags (:mod:`.bookkeeping`) (``approved_marker``,
``reason_marker``), so it lives where ADK keeps everything else about the chat.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from google.adk.events.event import Event

from adk_asgi.adk.private import without_rewound
from adk_asgi.hitl import bookkeeping, interrupts, node_tools, outcomes
from adk_asgi.hitl.interrupts import ASKING_THE_USER, REQUEST_INPUT
from adk_asgi.hitl.outcomes import reason_of, unanswered
from adk_asgi.hitl.policy import ToolPolicy

CONFIRMATION_TOOL: Final = "adk_request_confirmation"
CODE_EXECUTION: Final = "code_execution"
"""The tool the AI SDK's Google provider names Gemini's code execution: the model runs it
itself, so its calls are no ADK call of the chat (:mod:`adk_asgi.convert.code_execution`)."""
PAYLOADS_KEY: Final = "confirmationPayloads"
"""The request body key carrying ADK confirmation payloads: ``{approval id: payload}``."""
REJECTED: Final = outcomes.REJECTED
MOVED_ON: Final = outcomes.MOVED_ON
EXPIRED: Final = outcomes.EXPIRED
INTERRUPTED: Final = outcomes.INTERRUPTED
APPROVAL_EXPIRED: Final = outcomes.APPROVAL_EXPIRED
APPROVAL_MOVED_ON: Final = outcomes.APPROVAL_MOVED_ON
INPUT_MOVED_ON: Final = outcomes.INPUT_MOVED_ON
NEEDS_CONFIRMATION: Final = outcomes.NEEDS_CONFIRMATION
"""(What the bridge answers calls nobody answered, :mod:`.outcomes`; read from here.)"""


def client_approval_id(call_id: str) -> str:
    """The approval id of a client tool call (the bridge's approval, not ADK's)."""
    return f"approval-{call_id}"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    args: dict[str, Any]
    invocation_id: str
    message_id: str | None
    long_running: bool
    adk_id: str = ""
    """The id ADK knows the call by, when the client knows it by another
    (:func:`~.interrupts.client_call_id`): what its answer is sent under."""
    branch: str = ""
    """The branch of the event that made it: a tool call's, inside a workflow run as a tool."""

    @property
    def answered_as(self) -> str:
        """The id of the function response ADK expects for this call."""
        return self.adk_id or self.id


@dataclass(frozen=True, slots=True)
class Confirmation:
    """An open ``adk_request_confirmation``: ADK waits for the user's decision on ``call``."""

    approval_id: str
    call_id: str
    hint: str | None
    payload: Any
    answer_id: str = ""
    """The id of the function response that answers it (``approval_id`` unless a workflow
    node asks, whose call the client knows by another id)."""
    answer_name: str = CONFIRMATION_TOOL
    """The function ADK expects the answer from: ``adk_request_input`` for a workflow node."""


@dataclass(slots=True)
class ChatState:
    calls: dict[str, ToolCall] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    """Real function responses by call id (ADK's confirmation placeholders excluded)."""
    open_confirmations: dict[str, Confirmation] = field(default_factory=dict)
    decided_confirmations: dict[str, bool] = field(default_factory=dict)
    """Answered confirmations: approval id → confirmed."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Approval id → the reason the user gave with the decision (``addToolApprovalResponse
    ({reason})``), kept as the confirmation's payload when the tool asked for none, and with
    a browser tool's decision in the bridge's tags (``Tags.reasons``)."""
    confirmation_of_call: dict[str, str] = field(default_factory=dict)
    """Call id → the approval id of its latest confirmation request."""
    gated: set[str] = field(default_factory=set)
    """Calls the bridge asks the user about before they run (approval id ``approval-<id>``):
    client tools that need approval and, in live mode, calls waiting for the user's decision."""
    approved_client_calls: set[str] = field(default_factory=set)
    live_decisions: dict[str, bool] = field(default_factory=dict)
    """Call id → approved, for calls gated by the live bridge (ADK records no confirmation)."""
    expires: dict[str, float] = field(default_factory=dict)
    """Call id → when its wait ends (Unix time), for the calls live mode recorded as waiting."""
    responded: set[str] = field(default_factory=set)
    """Calls with any response, ADK's confirmation placeholders included."""
    expired: set[str] = field(default_factory=set)
    """Approval ids and call ids whose wait ended unanswered (closed for a timeout)."""
    closed_approvals: set[str] = field(default_factory=set)
    """Approval ids closed unanswered because the user sent a new message."""
    rejected_nodes: set[str] = field(default_factory=set)
    """Ids of the events that hold ADK's rejection of a workflow node the user denied: shown
    on its card, not as the workflow's answer."""
    server_answered: set[str] = field(default_factory=set)
    """Long-running calls the page has no part in (a back office's approval): only the app
    answers them (:mod:`.server_answers`), never the browser. Known only with a policy."""

    def waiting(self) -> list[ToolCall]:
        """The calls that wait for the user or the browser: open confirmations, open browser
        calls (not the app's own long-running calls: nobody on the page can answer those)."""
        ids = [c.call_id for c in self.open_confirmations.values()]
        ids += [
            c
            for c in self.calls
            if c not in ids and c not in self.server_answered and self.open_client_call(c)
        ]
        return [self.calls[c] for c in ids if c in self.calls]

    def dangling(self) -> list[ToolCall]:
        """Calls left with no response at all and nothing waiting on them (a workflow run as
        a tool waits on its question, :mod:`.node_tools`): a server stopped while they ran."""
        held = node_tools.suspended(self.calls.values(), self.waiting(), self.responded)
        return [
            call
            for call in self.calls.values()
            if call.id not in self.responded and not call.long_running and call not in held
        ]

    def approved_unrun(self) -> list[ToolCall]:
        """Calls the user approved through ADK's confirmation that have no result: the request
        that took the approval runs them now, holding the chat, or a server stopped while they
        ran. (A workflow node's confirmation is its own call, and its answer resumes the
        workflow: not one of these.)"""
        return [
            self.calls[call_id]
            for call_id, approval_id in self.confirmation_of_call.items()
            if approval_id != call_id
            and self.decided_confirmations.get(approval_id) is True
            and call_id not in self.results
            and call_id in self.calls
        ]

    def closed_unanswered(self, call_id: str) -> str | None:
        """Why the approval of ``call_id`` was closed without the user's answer
        (:data:`APPROVAL_EXPIRED`, :data:`APPROVAL_MOVED_ON`), or ``None``."""
        ids = {call_id, client_approval_id(call_id), self.confirmation_of_call.get(call_id)}
        if ids & self.expired:
            return APPROVAL_EXPIRED
        if ids & self.closed_approvals:
            return APPROVAL_MOVED_ON
        return None

    def open_client_call(self, call_id: str) -> ToolCall | None:
        call = self.calls.get(call_id)
        if call is None or not call.long_running or call_id in self.results:
            return None
        return call

    def denied(self, call_id: str) -> bool:
        """Whether the user denied this call (through ADK's confirmation or the bridge's)."""
        approval_id = self.confirmation_of_call.get(call_id)
        if approval_id is not None and self.decided_confirmations.get(approval_id) is False:
            return True
        if self.live_decisions.get(call_id) is False:
            return True
        call = self.calls.get(call_id)
        return call is not None and call.long_running and self.results.get(call_id) == REJECTED


def approved_marker(call: ToolCall, author: str, reason: str | None = None) -> Event:
    """The event that records a client tool call as approved (and sent to the browser), with
    the reason the user gave (``Tags.reasons``)."""
    return _marker(call, author, approved_call=call.id, reasons=decision_reasons(call, reason))


def reason_marker(call: ToolCall, author: str, reason: str) -> Event:
    """The event that records the reason the user gave with their decision on a client tool
    call that ADK's record of has no place for: a denial (ADK records the rejection,
    :data:`REJECTED`), or an approval sent with the call's result (ADK records the result)."""
    return _marker(call, author, reasons=decision_reasons(call, reason))


def decision_reasons(call: ToolCall, reason: str | None) -> dict[str, str]:
    """``Tags.reasons`` for the user's ``reason`` with the decision on a client tool call."""
    return {client_approval_id(call.id): reason} if reason else {}


def _marker(call: ToolCall, author: str, **tags: Any) -> Event:
    return Event(
        invocation_id=call.invocation_id,
        author=author,
        custom_metadata=bookkeeping.with_tags(None, message_id=call.message_id, **tags),
    )


def visible_events(events: Iterable[Event]) -> list[Event]:
    """The session's events as the model sees them: without what a rewind took back (a
    regenerated or edited turn), by ADK's own rule (``_apply_rewinds``, which its prompt
    building and compaction share; private in ADK 2.13, pinned by the regenerate tests)."""
    return without_rewound(list(events))


def user_turn(events: Iterable[Event], message_id: str) -> str | None:
    """The invocation of the stored user message the client calls ``message_id``, or
    ``None``: where a rewind goes back to when that message is sent again (regenerated or
    edited)."""
    for event in visible_events(events):
        if event.author == "user" and bookkeeping.read(event).user_message_id == message_id:
            return event.invocation_id
    return None


def chat_state(events: Iterable[Event], policy: ToolPolicy | None = None) -> ChatState:
    """The chat's tool calls as its stored events say; ``policy`` tells which calls are the
    bridge's to approve (without it, none)."""
    state = ChatState()
    latest: dict[str, str] = {}  # ADK call id -> the id the client knows its latest call by
    for event in visible_events(events):
        if event.partial:
            continue
        tags = bookkeeping.read(event)
        asked = interrupts.confirmed_node(event)
        if asked is not None and asked in latest:  # the confirmed node ran (or was rejected)
            state.results[latest[asked]] = event.output
            if event.output == REJECTED:
                state.rejected_nodes.add(event.id)
        if tags.approved_call is not None:
            state.approved_client_calls.add(tags.approved_call)
        state.live_decisions.update(tags.decisions)  # live mode records the user's decisions
        state.reasons.update(tags.reasons)  # a browser tool's, recorded with the decision
        state.expires.update(tags.expires)
        state.expired.update(tags.expired)
        state.closed_approvals.update(tags.closed_approvals)
        for approval_id in tags.closed_approvals:  # the user moved on
            if state.open_confirmations.pop(approval_id, None) is not None:
                state.decided_confirmations[approval_id] = False
            elif approval_id in state.calls:  # a question for the user, left unanswered
                state.results.setdefault(approval_id, unanswered(approval_id in tags.expired))
        placeholders = event.actions.requested_tool_confirmations or {}
        long_running = event.long_running_tool_ids or set()
        for call in event.get_function_calls():
            if not call.id or not call.name:
                continue
            args = dict(call.args or {})
            if call.name == CONFIRMATION_TOOL:
                original = args.get("originalFunctionCall") or {}
                confirmation = args.get("toolConfirmation") or {}
                call_id = original.get("id")
                if isinstance(call_id, str):
                    state.open_confirmations[call.id] = Confirmation(
                        approval_id=call.id,
                        call_id=call_id,
                        hint=confirmation.get("hint"),
                        payload=confirmation.get("payload"),
                    )
                    state.confirmation_of_call[call_id] = call.id
                continue
            client_id = latest[call.id] = interrupts.client_call_id(call.id, call.name, event)
            node = interrupts.node_confirmation(call)
            if node is not None:  # a workflow node asks for approval: its call is the node's
                state.open_confirmations[client_id] = Confirmation(
                    approval_id=client_id,
                    call_id=client_id,
                    hint=node.hint,
                    payload=node.payload,
                    answer_id=call.id,
                    answer_name=call.name,
                )
                state.confirmation_of_call[client_id] = client_id
                name, args = node.tool_name, node.args
            else:
                name = call.name
            state.calls[client_id] = ToolCall(
                id=client_id,
                name=name,
                args=args,
                invocation_id=event.invocation_id,
                message_id=tags.message_id,
                long_running=call.id in long_running,
                adk_id=call.id if client_id != call.id else "",
                branch=event.branch or "",
            )
            if call.id in long_running and policy and policy.needs_approval(call.name, args):
                state.gated.add(call.id)
            if call.id in long_running and policy and _answered_by_server(call.name, policy):
                state.server_answered.add(client_id)
        for response in event.get_function_responses():
            if not response.id:
                continue
            answered = latest.get(response.id, response.id)
            state.responded.add(answered)
            if answered in state.open_confirmations and response.name == REQUEST_INPUT:
                _decide(state, answered, response.response)  # a node's: its output follows
                continue
            if response.name == CONFIRMATION_TOOL:
                if response.id in state.open_confirmations:
                    _decide(state, response.id, response.response)
                continue
            if response.id in placeholders:
                continue
            state.results[answered] = response.response
    return state


def _answered_by_server(name: str, policy: ToolPolicy) -> bool:
    """Whether only the app can answer a long-running call of ``name``: the page answers its
    browser tools and ADK's questions for the user, nothing else."""
    return not policy.is_client_tool(name) and name not in ASKING_THE_USER


def _decide(state: ChatState, approval_id: str, answer: dict[str, Any] | None) -> None:
    """Record the user's answer to an open confirmation."""
    state.open_confirmations.pop(approval_id)
    answer = answer or {}
    state.decided_confirmations[approval_id] = answer.get("confirmed") is True
    reason = reason_of(answer.get("payload"))
    if reason is not None:
        state.reasons[approval_id] = reason
