"""What the stock client does to a chat's messages when the user answers a tool call
(``addToolApprovalResponse``, ``addToolOutput``), and which message a ``sendMessage()`` with
no message continues. Pure functions on the message list, kept apart from
:class:`~.ChatClient`'s requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adk_asgi.convert.ui_parts import UIMessageDict, is_tool_part, tool_name

_AWAITING_RESULT = ("input-available", "approval-responded")


def find_tool_part(
    messages: Sequence[UIMessageDict],
    target: str,
    what: str,
    waiting: Callable[[dict[str, Any]], bool],
) -> tuple[int, dict[str, Any]]:
    """The tool part ``target`` names and the index of its message: by call or approval id
    anywhere, else by tool name, the first waiting part in the latest message that has one."""
    for index, message in enumerate(messages):
        for part in message.get("parts", []):
            if is_tool_part(part) and target in (
                part.get("toolCallId"),
                (part.get("approval") or {}).get("id"),
            ):
                return index, part
    for index in reversed(range(len(messages))):
        for part in messages[index].get("parts", []):
            if is_tool_part(part) and waiting(part) and tool_name(part) == target:
                return index, part
    raise LookupError(f"no tool call {what} matches {target!r}")


def _replace_part(
    messages: list[UIMessageDict], index: int, part: dict[str, Any], updated: dict[str, Any]
) -> None:
    """The message at ``index``, as a new object with ``updated`` for ``part``, like the
    client's immutable state update."""
    message = messages[index]
    messages[index] = {
        **message,
        "parts": [updated if p is part else p for p in message["parts"]],
    }


def respond_to_approval(
    messages: list[UIMessageDict], tool: str, approved: bool, reason: str | None
) -> int:
    """``addToolApprovalResponse({id, approved, reason})`` on the part waiting for approval
    that ``tool`` names; the index of its message."""
    index, part = find_tool_part(
        messages, tool, "waiting for approval", lambda p: p.get("state") == "approval-requested"
    )
    if part.get("state") != "approval-requested":
        raise LookupError(f"{tool!r} is {part.get('state')}, not waiting for approval")
    approval = {**part["approval"], "approved": approved}
    if reason is not None:
        approval["reason"] = reason
    updated = {**part, "state": "approval-responded", "approval": approval}
    _replace_part(messages, index, part, updated)
    return index


def add_tool_output(
    messages: list[UIMessageDict], tool: str, state: str, output: Any, error_text: str | None
) -> int:
    """``addToolOutput({toolCallId, state, output | errorText})`` for the call ``tool`` names
    (``state``: ``output-available`` or ``output-error``); the index of its message."""
    index, part = find_tool_part(
        messages, tool, "waiting for a result", lambda p: p.get("state") in _AWAITING_RESULT
    )
    updated = {**part, "state": state}
    updated.pop("output", None)
    updated.pop("errorText", None)
    if state == "output-error":
        updated["errorText"] = error_text
    else:
        updated["output"] = output
    _replace_part(messages, index, part, updated)
    return index


def continued_message_id(messages: Sequence[UIMessageDict]) -> str | None:
    """The ``messageId`` of ``sendMessage()`` with no message: the latest assistant message
    with an answered approval, else the last message."""
    for message in reversed(messages):
        if message.get("role") == "assistant" and any(
            is_tool_part(p) and p.get("state") == "approval-responded"
            for p in message.get("parts", [])
        ):
            message_id: str = message["id"]
            return message_id
    return messages[-1]["id"] if messages else None
