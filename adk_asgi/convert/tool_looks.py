"""How a tool part looks, decided once for the stream and for history (sans-I/O).

The stream (:mod:`.tool_cards`, which sends a call's chunks as they happen) and history
(:mod:`.history`, which rebuilds the part from the stored session) must show a call the same
way, or a reload changes what the user sees and what the stock helpers send next. Each rule
that both need lives here, and only here:

* ``providerExecuted``: said of a call the server runs with nothing asked of the page — not a
  browser tool, not ADK's questions for the user, not a tool that asks for approval, not a
  workflow node that asks to run (:func:`provider_executed`);
* a call's result as the client is shown it: a credential request's answer without its
  secrets, the page's own answer as the page sent it, a transfer as a handover, a tool's
  result as the tool returned it (:mod:`.returned`), and ADK's ``{"error": …}`` convention as
  an error (:func:`result_chunk`);
* whether the call is a ``dynamic-tool`` part (``dynamic: true`` on its chunks), a tool the
  page cannot know when it is built (:func:`dynamic`, :mod:`adk_asgi.hitl.dynamic_tools`);
* an approval shows what the tool (or the workflow node) asked the user, its hint and payload
  (``approval.descriptor``), whether it is open or decided (:func:`confirmation_descriptor`,
  :func:`node_descriptor`);
* a call its tool's ``require_confirmation`` function let run unasked shows an approval
  marked automatic, as the AI SDK shows a call its tool's ``needsApproval`` let through
  (:func:`approved_automatically`, :func:`automatic_approval`; v7 only: the wire gate drops
  it for v6);
* a call the server's policy denied without asking (:func:`adk_asgi.hitl.denials.deny`) shows
  an approval marked automatic and denied, with its reason, then ``output-denied``, as the AI
  SDK shows a call its ``toolApproval`` denied (:func:`automatic_denial`; v7: the wire gate
  turns it into the call's error, with the reason, for older clients);
* a call ADK refused without running a tool (a made-up name, arguments the tool refuses) is
  a ``tool-input-error``: ADK's error, and the input as the model wrote it (:func:`input_error`);
* a browser tool that waits for approval shows its input only as the raw JSON the stream
  sent (``tool-input-delta``), not as ``input-available``, until it is approved: the AI SDK
  client keeps that text as the part's ``rawInput`` (:func:`raw_input`).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from adk_asgi.convert.adk_values import (
    approval_descriptor,
    as_sent,
    shown_result,
    to_json,
    tool_result_chunk,
)
from adk_asgi.convert.returned import as_returned
from adk_asgi.hitl.credentials import shown_input, shown_output
from adk_asgi.hitl.denials import denial
from adk_asgi.hitl.interrupts import ASKING_THE_USER, NodeConfirmation
from adk_asgi.hitl.pending import client_approval_id
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import (
    ToolApprovalRequest,
    ToolApprovalResponse,
    ToolInputError,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    UIMessageChunk,
)


def provider_executed(policy: ToolPolicy | None, name: str, *, node: bool = False) -> bool | None:
    """The part's ``providerExecuted``: ``True`` for a call the server runs unasked, else
    absent (``None``). ``node``: the call is a workflow node asking to run (its approval)."""
    if node or policy is None or not policy.runs_unasked(name):
        return None
    return True


def answered_by_page(policy: ToolPolicy | None, name: str) -> bool:
    """Whether the page answers a call of ``name`` (a browser tool, ADK's questions for the
    user): its answer reached ADK wrapped (``{"result": value}``) when it was not an object,
    and is shown as the page sent it."""
    return name in ASKING_THE_USER or (policy is not None and policy.is_client_tool(name))


def dynamic(policy: ToolPolicy | None, name: str) -> bool | None:
    """The ``dynamic`` of a call's chunks: ``True`` for a tool the page cannot know when it is
    built (the client makes it a ``dynamic-tool`` part), else absent (``None``)."""
    return True if policy is not None and policy.is_dynamic(name) else None


def shown_answer(
    policy: ToolPolicy | None,
    name: str,
    args: dict[str, Any],
    response: Any,
    *,
    kept: bool = False,
) -> Any:
    """A call's result as the client is shown it. ``kept``: the tool returned ADK's wrapper
    shape itself (:mod:`.returned`)."""
    response = shown_output(name, response)
    if answered_by_page(policy, name):
        return as_sent(response)
    return as_returned(shown_result(name, args, response), kept=kept)


def result_chunk(
    policy: ToolPolicy | None,
    call_id: str,
    name: str,
    args: dict[str, Any],
    response: Any,
    *,
    kept: bool = False,
) -> ToolOutputAvailable | ToolOutputError:
    """The chunk that shows a call's result (an output, or ADK's error convention)."""
    chunk = tool_result_chunk(call_id, shown_answer(policy, name, args, response, kept=kept))
    if dynamic(policy, name):
        chunk = msgspec.structs.replace(chunk, dynamic=True)
    return chunk


def approved_automatically(
    policy: ToolPolicy | None, name: str, result: ToolOutputAvailable | ToolOutputError
) -> bool:
    """Whether a call of ``name`` the user was not asked about (the caller knows), with this
    result, was approved automatically: its tool decides by a function of the arguments
    (``FunctionTool(require_confirmation=callable)``), and the call has an output. ADK has no
    refusal without asking (a function that returns anything but ``True`` lets the call run),
    but a ``before_tool_callback`` may answer a call before the function is asked, and its
    refusal (ADK's ``{"error": …}``) looks like a tool's failure in the session: a call with
    an error is shown without an approval, so a refusal is never shown approved."""
    if policy is None or not policy.approves_by_rule(name):
        return False
    return isinstance(result, ToolOutputAvailable)


def automatic_approval(call_id: str) -> list[UIMessageChunk]:
    """The chunks of an automatic approval, as the AI SDK's own server sends them for a call
    its ``needsApproval`` let through: the request marked ``isAutomatic``, then the approval.
    The client's part ends with ``approval: {id, isAutomatic: true, approved: true}``."""
    approval_id = client_approval_id(call_id)
    return [
        ToolApprovalRequest(approval_id=approval_id, tool_call_id=call_id, is_automatic=True),
        ToolApprovalResponse(approval_id=approval_id, approved=True),
    ]


def denied_automatically(
    policy: ToolPolicy | None, name: str, response: Any
) -> tuple[str | None] | None:
    """``(reason,)`` when a call's result is the server's denial (:func:`.denials.deny`): a
    server tool's only (a browser's answer is the page's own words)."""
    if answered_by_page(policy, name):
        return None
    return denial(response)


def automatic_denial(call_id: str, reason: str | None) -> list[UIMessageChunk]:
    """The chunks of an automatic denial, as the AI SDK's own server sends them for a call its
    ``toolApproval`` denied: the request marked ``isAutomatic``, the denial with its reason,
    then ``tool-output-denied``. The client's part ends ``output-denied`` with ``approval:
    {id, isAutomatic: true, approved: false, reason}``."""
    approval_id = client_approval_id(call_id)
    return [
        ToolApprovalRequest(approval_id=approval_id, tool_call_id=call_id, is_automatic=True),
        ToolApprovalResponse(approval_id=approval_id, approved=False, reason=reason),
        ToolOutputDenied(tool_call_id=call_id),
    ]


def input_error(
    policy: ToolPolicy | None, call_id: str, name: str, args: dict[str, Any], response: Any
) -> ToolInputError | None:
    """The chunk that shows a call ADK refused without running a tool (no tool of that name,
    arguments the tool refuses: :mod:`adk_asgi.serving.invalid_calls`): ADK's error, with the
    input as the model wrote it. The client's part becomes ``output-error`` with that input as
    its ``rawInput`` and no ``input`` (the AI SDK's reducer); ``None`` for an answer that is
    not ADK's error (an ``on_tool_error_callback`` that answered the call itself)."""
    error = response.get("error") if isinstance(response, dict) else None
    if not isinstance(error, str):
        return None
    return ToolInputError(
        tool_call_id=call_id,
        tool_name=name,
        input=shown_input(name, args),
        error_text=error,
        provider_executed=provider_executed(policy, name),
        dynamic=dynamic(policy, name),
    )


CUT_SHORT: Final = "The answer ended before this call was complete."
"""The error of a call whose arguments were streaming when its answer failed or stopped."""


def cut_call_chunk(policy: ToolPolicy | None, call_id: str, name: str, args: Any) -> ToolInputError:
    """A call cut short while its arguments streamed: an error, with the arguments so far (no
    tool runs it, and no stored event holds it: the answer's record keeps it)."""
    return ToolInputError(
        tool_call_id=call_id,
        tool_name=name,
        input=args,
        error_text=CUT_SHORT,
        provider_executed=provider_executed(policy, name),
        dynamic=dynamic(policy, name),
    )


def waits_for_approval(policy: ToolPolicy | None, name: str, args: dict[str, Any]) -> bool:
    """Whether a call of this browser tool waits for the user's approval before the page may
    run it (its input is then sent as raw JSON, not as ``input-available``)."""
    return policy is not None and policy.needs_approval(name, args)


def raw_input(args: dict[str, Any]) -> str:
    """The JSON text of a call's args the stream sends (one ``tool-input-delta``) for a browser
    tool that waits for approval; the client keeps it as ``rawInput`` until the call is
    released with ``tool-input-available``."""
    return to_json(args)


def confirmation_descriptor(args: dict[str, Any]) -> dict[str, Any] | None:
    """The descriptor of the approval an ``adk_request_confirmation`` call (``args``) asks."""
    return approval_descriptor(args.get("toolConfirmation") or {})


def node_descriptor(node: NodeConfirmation) -> dict[str, Any] | None:
    """The descriptor of the approval a workflow node asks to run with."""
    return approval_descriptor({"hint": node.hint, "payload": node.payload})
