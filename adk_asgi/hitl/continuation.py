"""A continuation of an assistant message, checked against the chat's open calls.

The AI SDK continues a paused assistant message by re-sending it with the user's answers in its
tool parts: approval decisions (``addToolApprovalResponse``) and browser results
(``addToolOutput``). Nothing in it is believed: each answer must match a call that is open in
*this* chat's server-side state (:class:`~.pending.ChatState`), or the request is a
:class:`Conflict`. One checker serves both transports: SSE reads the state from the stored
events, live mode keeps it as its calls wait. Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec
from google.genai import types

from adk_asgi.errors import ClientError
from adk_asgi.hitl.credentials import REQUEST_CREDENTIAL, check_answer
from adk_asgi.hitl.interrupts import ASKING_THE_USER, REQUEST_INPUT, check_input
from adk_asgi.hitl.outcomes import reason_payload
from adk_asgi.hitl.pending import (
    CODE_EXECUTION,
    INPUT_MOVED_ON,
    REJECTED,
    ChatState,
    ToolCall,
    client_approval_id,
)
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import UIMessageChunk
from adk_asgi.wire.messages import ToolPart, UIMessage


class Conflict(ClientError, ValueError):
    """A continuation that does not match the chat's open calls (409): forged, stale or replayed."""

    def __init__(self, reason: str) -> None:
        super().__init__(409, reason)


@dataclass(slots=True)
class Continuation:
    """What a continuation request answers, checked against the session.

    ``responses`` go to ADK as one user ``Content`` (function responses only: ADK refuses text
    mixed with them). ``denied`` calls are shown as denied at once — unless ``released`` client
    calls (approved, handed to the browser now, before any new step) run in the same step: then
    the denials are shown with the browser's result, since the stock
    ``lastAssistantMessageIsCompleteWithToolCalls`` never sends a step that holds a denied part,
    while the approvals helper sends one whose denials are still ``approval-responded``.
    ``redenied`` are those denials, re-sent by that later request: already recorded, shown now
    (:meth:`shown_denials`).
    """

    message_id: str = ""
    """The assistant message continued."""
    responses: list[types.Part] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    released: list[ToolCall] = field(default_factory=list)
    redenied: list[str] = field(default_factory=list)
    known_calls: set[str] = field(default_factory=set)
    answered: list[str] = field(default_factory=list)
    """The client's ids of what ``responses`` answer (approval ids, call ids): ADK's may
    repeat across turns (:mod:`.interrupts`), the client's do not."""
    waits_on_server: bool = False
    """Calls of the message that only the app answers (:mod:`adk_asgi.server_answers`) stay
    open after it: the model does not run until the app answers them."""
    confirmed: list[ToolCall] = field(default_factory=list)
    """Calls approved through ADK's confirmation: ADK runs them in the run that takes these
    answers."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Approval id → the user's reason, for the decisions no response here carries: a browser
    tool's (recorded in the bridge's tags, ``pending.approved_marker``/``reason_marker``), and
    a call the live connection holds (it records the reason with the decision,
    :mod:`adk_asgi.live`)."""

    def shown_denials(self, browser_runs: bool) -> list[str]:
        """The calls to show as denied in this response; ``browser_runs``: a released call
        runs in the browser now (in live mode an approved server tool is released too)."""
        return self.redenied + ([] if browser_runs else self.denied)

    def answer_ids(self) -> list[str]:
        """What this continuation acts on, as claimed (:mod:`adk_asgi.stores.claims`): each function
        response it sends (an approval id, or the id of a browser call or of a denied one) and the
        approval of each released browser call."""
        return self.answered + [client_approval_id(call.id) for call in self.released]

    @property
    def empty(self) -> bool:
        return not (self.responses or self.denied or self.released)

    def lead(self, cards: Answering, policy: ToolPolicy) -> list[UIMessageChunk]:
        """What the response to this continuation says before the run: the denials it shows
        now and the approved browser calls (``tool-input-available``: the browser runs them).
        Every denied call is settled in ``cards``, so ADK's rejection is not shown again; the
        approved calls the server runs now are running there, so a run that raises shows them
        failed (:mod:`adk_asgi.convert.failures`)."""
        in_browser = [call for call in self.released if policy.is_client_tool(call.name)]
        shown = self.shown_denials(browser_runs=bool(in_browser))
        chunks: list[UIMessageChunk] = []
        for call_id in self.denied + self.redenied:
            denial = cards.deny(call_id)
            chunks += denial if call_id in shown else []
        for call in in_browser:
            chunks += cards.release(call.id, call.name, call.args)
        on_server = [call for call in self.released if call not in in_browser]
        for call in self.confirmed + on_server:  # (a run that raises fails them)
            cards.runs(call.id, call.answered_as, call.name)
        return chunks


class Answering(Protocol):
    """The converter's side of a continuation (its
    :class:`~adk_asgi.convert.tool_cards.ToolCards`)."""

    def deny(self, call_id: str) -> list[UIMessageChunk]: ...

    def release(self, call_id: str, name: str, args: dict[str, Any]) -> list[UIMessageChunk]: ...

    def runs(self, call_id: str, adk_id: str, name: str) -> None: ...


def _tool_output(part: ToolPart, call: ToolCall) -> dict[str, Any]:
    """The function response of a page's answer. A function response is an object: an answer
    that is not one goes to ADK as ``{"result": answer}``, as ADK stores a tool's return value.
    A browser tool's object of that same shape (``{"result": …}``) is wrapped too, so that
    what is shown of the stored response is always what the page sent
    (:mod:`adk_asgi.convert.returned`). ADK's questions (``adk_request_input``) keep ADK's
    convention: ADK unwraps their answer's ``result`` itself."""
    if part.state == "output-error":
        return {"error": part.error_text or "The tool failed."}
    output = None if part.output is msgspec.UNSET else part.output  # (sent as ``undefined``)
    page_tool = call.name not in ASKING_THE_USER
    if isinstance(output, dict) and not (page_tool and set(output) == {"result"}):
        return output
    return {"result": output}


def continuation(
    message: UIMessage,
    state: ChatState,
    payloads: Mapping[str, Any] | None = None,
) -> Continuation:
    """Translate the tool parts of a continued assistant message into ADK input.

    The client re-sends the whole message with every continuation, so parts that describe calls
    already settled are history and are skipped; parts that *answer* something (an approval
    decision, a client tool's result) must match an open call of this session, or the request
    is a :class:`Conflict`. ``payloads`` maps approval ids to ADK confirmation payloads.
    """
    result = Continuation(message_id=message.id)
    seen: set[str] = set()
    for part in message.parts:
        if not isinstance(part, ToolPart) or part.tool_call_id in seen:
            continue
        seen.add(part.tool_call_id)
        call = state.calls.get(part.tool_call_id)
        if call is None and part.name == CODE_EXECUTION and part.provider_executed:
            # Gemini ran it (code execution): history the client holds, never an answer
            result.known_calls.add(part.tool_call_id)
            continue
        if call is None:
            if part.state in ("approval-responded", "output-available", "output-error"):
                raise Conflict(f"tool call {part.tool_call_id!r} is not part of this chat")
            continue
        result.known_calls.add(call.id)
        if call.message_id is not None and call.message_id != message.id:
            raise Conflict(f"tool call {call.id!r} does not belong to message {message.id!r}")
        if part.state == "approval-responded":
            _answer_approval(part, call, state, payloads or {}, result)
        elif part.state in ("output-available", "output-error"):
            _answer_client_call(part, call, state, result)
    if result.empty:
        raise Conflict("this request answers no open tool call of the chat")
    result.waits_on_server = any(
        call.message_id == message.id and state.open_client_call(call.id) is not None
        for call in map(state.calls.get, state.server_answered)
        if call is not None
    )
    return result


def _answer_approval(
    part: ToolPart,
    call: ToolCall,
    state: ChatState,
    payloads: Mapping[str, Any],
    result: Continuation,
) -> None:
    approval = part.approval
    if approval is None or approval.approved is None:
        raise Conflict(f"tool call {call.id!r} is approval-responded without a decision")
    confirmation = state.open_confirmations.get(approval.id)
    if confirmation is not None:
        if confirmation.call_id != call.id:
            raise Conflict(f"approval {approval.id!r} is not for tool call {call.id!r}")
        response: dict[str, Any] = {"confirmed": approval.approved}
        if approval.id in payloads:
            response["payload"] = payloads[approval.id]
        elif approval.reason and confirmation.payload is None:
            response["payload"] = reason_payload(approval.reason)
        answer = types.FunctionResponse(
            id=confirmation.answer_id or approval.id,
            name=confirmation.answer_name,
            response=response,
        )
        result.responses.append(types.Part(function_response=answer))
        result.answered.append(approval.id)
        if not approval.approved:
            result.denied.append(call.id)
        else:  # the server runs it now: a tool's confirmation, or a workflow node's
            result.confirmed.append(call)
        return
    closed = state.closed_unanswered(call.id)
    if closed is not None and approval.id not in state.open_confirmations:
        raise Conflict(f"approval {approval.id!r} was closed unanswered ({closed})")
    if approval.approved is False and state.denied(call.id):
        result.redenied.append(call.id)  # decided already; shown late (``shown_denials``)
        return
    is_client_approval = approval.id == client_approval_id(call.id) and call.id in state.gated
    if not is_client_approval or approval.id in state.decided_confirmations:
        raise Conflict(f"approval {approval.id!r} is not open in this chat")
    if state.open_client_call(call.id) is None or call.id in state.approved_client_calls:
        raise Conflict(f"approval {approval.id!r} was already answered")
    if approval.reason:
        result.reasons[approval.id] = approval.reason
    if approval.approved:
        result.released.append(call)
    else:
        _respond(result, call, REJECTED)
        result.denied.append(call.id)


def _answer_client_call(
    part: ToolPart,
    call: ToolCall,
    state: ChatState,
    result: Continuation,
) -> None:
    if call.id in state.server_answered and state.open_client_call(call.id) is not None:
        # A long-running call the page was never handed (a back office's approval): an answer
        # from the browser would be a forged result. The app answers it (server_answers.py).
        raise Conflict(f"tool call {call.id!r} is answered by the server, not the browser")
    if state.open_client_call(call.id) is None:
        if state.results.get(call.id) == INPUT_MOVED_ON and part.state == "output-available":
            raise Conflict(f"{call.id!r} was closed unanswered: a new message was sent first")
        return  # a settled call, re-sent as history
    if call.id in state.gated and call.id not in state.approved_client_calls:
        approval = part.approval
        approved_now = (
            approval is not None
            and approval.approved is True
            and approval.id == client_approval_id(call.id)
        )
        if not approved_now:
            raise Conflict(f"tool call {call.id!r} needs the user's approval before its result")
        assert approval is not None
        if approval.reason:  # (approved with its result, in one request)
            result.reasons[approval.id] = approval.reason
    if state.confirmation_of_call.get(call.id) in state.open_confirmations:
        raise Conflict(f"tool call {call.id!r} waits for the user's approval, not a result")
    output = _tool_output(part, call)
    if call.name == REQUEST_CREDENTIAL:
        output = check_answer(part, call)
    if call.name == REQUEST_INPUT:
        if part.state == "output-error":
            raise ClientError(422, f"{call.id!r} asks the user: answer it with an output")
        check_input(call.id, call.args, output)
    _respond(result, call, output)


def _respond(result: Continuation, call: ToolCall, response: dict[str, Any]) -> None:
    answer = types.FunctionResponse(id=call.answered_as, name=call.name, response=response)
    result.responses.append(types.Part(function_response=answer))
    result.answered.append(call.id)
