"""The tool calls of one live connection and what they wait for (sans-I/O).

ADK records no confirmation in live mode, so this is the server-side truth a live continuation
is checked against: a :class:`~adk_asgi.hitl.pending.ChatState` kept up to date as calls arrive,
start waiting for the user (an approval) or the browser (a result), and get their answers. A
call is open exactly while it waits. Answers go out as :class:`~.outputs.Resolve`
for the tool pipeline (:mod:`.tools`), which holds the only futures.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final, Literal

from adk_asgi.hitl.continuation import Continuation
from adk_asgi.hitl.interrupts import REQUEST_INPUT
from adk_asgi.hitl.pending import INPUT_MOVED_ON, MOVED_ON, ChatState, ToolCall, client_approval_id
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.live.outputs import Output, Resolve
from adk_asgi.wire.chunks import ToolApprovalRequest, UIMessageChunk

UNANSWERED: Final = "unanswered"
"""The outcome of an approval wait the user left by sending a new message (not a denial)."""

WaitKind = Literal["approval", "result"]


@dataclass(frozen=True, slots=True)
class ShownResult:
    """A tool's result as the stream showed it, the agent that ran the tool, and how the
    bridge's plugins tag it."""

    author: str
    response: dict[str, Any]
    invalid: bool
    kept: bool


@dataclass(slots=True)
class Wait:
    call: ToolCall
    kind: WaitKind
    asked: bool = False
    """The client was told (the response paused on it)."""


class LiveCalls:
    def __init__(self, out: list[Output], tools: ToolPolicy) -> None:
        self.out = out
        self.tools = tools
        self.state = ChatState()
        self.waits: dict[str, Wait] = {}
        self.early_results: dict[str, Any] = {}
        """Browser results that came with their approval, for the call to take when released."""
        self.step: list[str] = []
        """The calls of the model's last step."""
        self.finished: set[str] = set()
        self.descriptors: dict[str, Any] = {}
        """Call id → what a tool asked the user (``request_confirmation(hint, payload)``)."""
        self.told_server: set[str] = set()
        """Calls left to the server (:meth:`left_to_server`) whose response ended on them."""
        self.payloads: dict[str, Any] = {}
        """Call id → the payload the user answered it with (``confirmationPayloads``)."""
        self.reasons: dict[str, str] = {}
        """Call id → the reason the user gave with the decision on it."""
        self.stored_early: dict[str, Any] = {}
        """Call id → the result stored as it came (:meth:`store_early`), to take out of the
        step's merged response event when ADK stores it."""
        self.shown_results: dict[str, ShownResult] = {}
        """Call id → a server tool's result as the stream showed it: the stream shows a result
        as the tool returns, before ADK stores it, so a session that fails in between keeps it
        (:meth:`~.events.ModelEvents.shown_results`)."""

    def store_early(self, call_id: str, response: Any, step: list[str]) -> bool:
        """Whether ``call_id``'s result, which just came, must be stored now, ahead of ADK;
        ``step``: the calls of its model event, as stored (the machine may not have seen that
        event yet: ADK runs the tools as it hands the event over).

        ADK's live flow runs a step's calls together and stores their results as one event
        once all have returned: a server tool's result next to a call that waits for the user
        would be stored only when that wait ends — or never, if the connection drops first —
        although it ran, and the stream showed it (the stock client needs it shown to send the
        step's answers). So the result is stored as it comes while a sibling of its step has
        not returned yet; a reload shows what ran, and a continuation from any worker, in
        either mode, gives it to the model.
        """
        if not any(c != call_id and not self._returned(c) for c in step):
            return False
        self.stored_early[call_id] = response
        return True

    def _returned(self, call_id: str) -> bool:
        """Finished on this connection, or its result was stored before (an earlier connection
        ran it: the step resumes with an approval answered on this one)."""
        return call_id in self.finished or self.state.results.get(call_id) is not None

    def remember(self, call: ToolCall) -> ToolCall:
        call = self.state.calls.setdefault(call.id, call)
        if call.id not in self.waits:
            self.state.results.setdefault(call.id, None)  # closed unless it waits
        return call

    def new_step(self, calls: list[ToolCall]) -> None:
        self.step = [self.remember(call).id for call in calls]

    def open(self, call: ToolCall, kind: WaitKind) -> None:
        """``call`` waits for the user's decision or the browser's result."""
        self.waits[call.id] = Wait(call, kind)
        self.state.calls[call.id] = dataclasses.replace(call, long_running=True)
        self.state.results.pop(call.id, None)
        if kind == "approval":
            self.state.gated.add(call.id)

    def close(self, wait: Wait) -> bool:
        """``wait`` is over; False if it was over already."""
        call_id = wait.call.id
        if self.waits.get(call_id) is not wait:
            return False
        del self.waits[call_id]
        self.state.calls[call_id] = dataclasses.replace(wait.call, long_running=False)
        self.state.results[call_id] = None
        if call_id not in self.state.approved_client_calls:
            self.state.gated.discard(call_id)
        return True

    def resolve(self, wait: Wait, value: Any) -> None:
        if self.close(wait):
            self.out.append(Resolve(wait.call.id, value))

    def move_on(self) -> bool:
        """A new user message: pending waits are closed unanswered (:data:`UNANSWERED`, or
        :data:`MOVED_ON` for a browser's result); whether any was."""
        waits = list(self.waits.values())
        for wait in waits:
            if wait.kind == "approval":
                self.resolve(wait, UNANSWERED)
            else:
                asked_user = wait.call.name == REQUEST_INPUT
                self.resolve(wait, INPUT_MOVED_ON if asked_user else MOVED_ON)
        return bool(waits)

    def answer(self, answers: Continuation, payloads: dict[str, Any]) -> None:
        """Resolve the waits a checked continuation answers."""
        for call_id in answers.denied:
            self._keep_answer(call_id, answers, payloads)
            self.resolve(self.waits[call_id], False)
        for call in answers.released:
            self._keep_answer(call.id, answers, payloads)
            if self.tools.is_client_tool(call.name):
                self.state.approved_client_calls.add(call.id)
            self.resolve(self.waits[call.id], True)
        for part in answers.responses:
            response = part.function_response
            assert response is not None and response.id is not None
            if response.id in answers.denied:
                continue
            wait = self.waits[response.id]
            if wait.kind == "approval":  # approved with its result in the same request
                self._keep_answer(response.id, answers, payloads)
                self.early_results[response.id] = response.response
                self.state.approved_client_calls.add(response.id)
                self.resolve(wait, True)
            else:
                self.resolve(wait, response.response)

    def _keep_answer(self, call_id: str, answers: Continuation, payloads: dict[str, Any]) -> None:
        """What the user answered the call's approval with besides the decision, for the
        call to take with it (:meth:`~.waits.ToolMoves.confirmed_payload`)."""
        approval_id = client_approval_id(call_id)
        if approval_id in payloads:
            self.payloads[call_id] = payloads[approval_id]
        if approval_id in answers.reasons:
            self.reasons[call_id] = answers.reasons[approval_id]

    def left_to_server(self, call_id: str) -> None:
        """A long-running tool returned nothing (a back office decides): its call stays open,
        for the app to answer (:mod:`.server_answers`), never the browser."""
        call = self.state.calls.get(call_id)
        if call is None or call_id in self.waits:
            return
        self.state.calls[call_id] = dataclasses.replace(call, long_running=True)
        self.state.results.pop(call_id, None)
        self.state.server_answered.add(call_id)

    def still_paused(self) -> bool:
        """Some calls the client was asked about are unanswered."""
        return any(wait.asked for wait in self.waits.values())

    def pause(self) -> list[UIMessageChunk] | None:
        """If every call of the last step waits or is done and the client was not told yet,
        what ends the response (the approval requests of gated server tools); else ``None``.

        Waiting for the whole step keeps parallel approvals in one response: the stock approvals
        helper only sends when every tool of the step is answered.
        """
        waiting = [self.waits[c] for c in self.step if c in self.waits]
        if not all(c in self.waits or c in self.finished for c in self.step):
            return None
        # Calls left to the server give the model nothing to answer: when no other call of
        # the step did, the model is silent until the app answers, and the response ends.
        left = [c for c in self.step if c in self.state.server_answered]
        silent = all(c in self.waits or c in left for c in self.step)
        untold = silent and bool(set(left) - self.told_server)
        self.told_server.update(left if silent else ())
        if not (waiting or untold) or (all(w.asked for w in waiting) and not untold):
            return None
        chunks: list[UIMessageChunk] = []
        for wait in waiting:
            if wait.asked:
                continue
            wait.asked = True
            if wait.kind == "approval" and not self.tools.is_client_tool(wait.call.name):
                chunks.append(
                    ToolApprovalRequest(
                        approval_id=client_approval_id(wait.call.id),
                        tool_call_id=wait.call.id,
                        approval_descriptor=self.descriptors.pop(wait.call.id, None),
                    )
                )
        return chunks
