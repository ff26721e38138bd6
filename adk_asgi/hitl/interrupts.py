"""ADK 2's requests for the user's input, in the bridge's terms (sans-I/O).

A workflow node that yields ``RequestInput``, and the ``request_input`` tool of an
``LlmAgent``, ask the user through a long-running ``adk_request_input`` call: the client
shows it as a ``tool-adk_request_input`` part and answers it with ``addToolOutput``, like a
browser tool. Two things make these calls unlike a model's:

* Their ids repeat. A node's confirmation is always ``wf_tool_confirmation:<node path>``,
  and a ``RequestInput`` may name its own ``interrupt_id``; each new turn of the same chat asks
  again under the same id. The client, the chat's state and the exactly-once claims all need
  one id per question, so the bridge shows such a call under :func:`client_call_id` (the id
  qualified by the event that asked) and answers ADK under its own id.
* A node with ``require_confirmation`` asks through the same call, with ADK's
  ``ToolConfirmation`` as the answer's schema. That is an approval, and the client is shown
  one: a ``tool-<node>`` part with the node's input and a ``tool-approval-request``, answered
  with ``addToolApprovalResponse``; the node's output (or ADK's rejection) is its result.

A workflow's own answer is its output value, which no ``Content`` carries: :func:`workflow_answer`
shows it as the model's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec
from google.adk.events.event import Event
from google.genai import types

from adk_asgi.adk.private import check_resume_answer, node_confirmation_id
from adk_asgi.errors import ClientError
from adk_asgi.hitl import bookkeeping, node_tools

REQUEST_INPUT: Final = "adk_request_input"
REQUEST_CREDENTIAL: Final = "adk_request_credential"
ASKING_THE_USER: Final = frozenset({REQUEST_INPUT, REQUEST_CREDENTIAL})
"""ADK's calls that ask the user (a question, a credential): the page answers them."""
_CONFIRMATION_PREFIX: Final = node_confirmation_id("")
_SEPARATOR: Final = "~"


def client_call_id(call_id: str, name: str, event: Event) -> str:
    """The id the client knows a call by: a request for the user's input is qualified by the
    event that asked, since ADK asks again under the same id (module docstring). A live
    connection's calls keep ADK's ids: a live run is one invocation of an agent (a workflow
    cannot be its root; one run as a tool asks within it), whose model gives every call an id
    of its own."""
    if name not in ASKING_THE_USER or bookkeeping.read(event).live_step is not None:
        return call_id
    return f"{call_id}{_SEPARATOR}{event.id}"


def qualified_prefix(call_id: str) -> str:
    """What every client id of ``call_id`` starts with."""
    return f"{call_id}{_SEPARATOR}"


def asks_for_a_workflow(args: dict[str, Any]) -> bool:
    """Whether an ``adk_request_input`` call is a workflow's ``RequestInput`` (which resumes
    the workflow with whatever answers it), not the model's ``request_input`` tool call."""
    return "interruptId" in args


@dataclass(frozen=True, slots=True)
class NodeConfirmation:
    """A workflow node that waits for the user's approval before it runs."""

    tool_name: str
    args: dict[str, Any]
    hint: str | None
    payload: Any


def node_confirmation(call: types.FunctionCall) -> NodeConfirmation | None:
    """The node confirmation a ``adk_request_input`` call asks, or ``None`` for any other."""
    if call.name != REQUEST_INPUT or not (call.id or "").startswith(_CONFIRMATION_PREFIX):
        return None
    request = call.args or {}
    payload = request.get("payload") or {}
    name = payload.get("tool_name")
    if not isinstance(name, str):
        return None
    args = payload.get("args")
    message = request.get("message")
    return NodeConfirmation(
        tool_name=name,
        args=args if isinstance(args, dict) else {},
        hint=message if isinstance(message, str) else None,
        payload=payload.get("confirmation_payload"),
    )


def confirmed_node(event: Event) -> str | None:
    """The (ADK) id of the confirmation a node's output event answers: the node ran, or ADK
    recorded its rejection, after the user's decision. ``None`` for other events."""
    info = event.node_info
    if event.output is None or event.content is not None or not info.path:
        return None
    return node_confirmation_id(info.path)


def workflow_answer(event: Event) -> types.Content | None:
    """A workflow's output, shown as the model's text: the value its last node returned (a
    string as it is, any other value as JSON). Outputs of inner nodes feed the next node and
    are not shown; a node shows something by yielding content. A workflow run as an agent's
    tool answers that agent, not the user: its output is the tool's result."""
    if event.output is None or event.content is not None or event.partial:
        return None
    tops = [path for path in event.node_info.output_for or () if "/" not in path]
    if not tops or all(node_tools.run_by_a_tool(path) for path in tops):
        return None
    value = event.output
    text = value if isinstance(value, str) else _json(value)
    return types.Content(role="model", parts=[types.Part(text=text)])


def _json(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except TypeError:
        return str(value)


def check_input(call_id: str, request: dict[str, Any], answer: dict[str, Any]) -> None:
    """Refuse (422) an answer that does not fit the request's ``response_schema``, by the rule
    ADK applies when it resumes: an invalid answer stored in the session would fail every later
    run of the chat, so it never reaches ADK."""
    schema = request.get("response_schema")
    if schema is None:
        return
    try:
        check_resume_answer(answer, schema)
    except ValueError as error:  # (ADK's WorkflowDataError is one)
        message = str(error).splitlines()[0]
        raise ClientError(
            422, f"the answer to {call_id!r} does not fit its response_schema: {message}"
        ) from None
