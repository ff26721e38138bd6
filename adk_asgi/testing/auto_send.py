"""When the stock ``useChat`` sends a chat by itself: its ``sendAutomaticallyWhen`` helpers.

An approval or a browser tool's result only reaches the server if the chat is sent again; the
AI SDK's ``lastAssistantMessageIs…`` helpers decide when, from the messages alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from adk_asgi.convert.ui_parts import UIMessageDict, is_tool_part, last_step

SendAutomaticallyWhen: TypeAlias = Callable[[Sequence[UIMessageDict]], bool]
"""``useChat({sendAutomaticallyWhen})``: given the chat's messages, whether to send them."""


def _last_assistant_step(messages: Sequence[UIMessageDict]) -> list[dict[str, Any]] | None:
    if not messages or messages[-1].get("role") != "assistant":
        return None
    return last_step(messages[-1].get("parts", []))


def _settled(part: Mapping[str, Any]) -> bool:
    return (
        part.get("state") == "output-available" and part.get("preliminary") is not True
    ) or part.get("state") == "output-error"


def last_assistant_message_is_complete_with_tool_calls(
    messages: Sequence[UIMessageDict],
) -> bool:
    """The AI SDK's ``lastAssistantMessageIsCompleteWithToolCalls``: the last step has client
    tool calls, all with a result, and no text still streaming after them."""
    step = _last_assistant_step(messages)
    if step is None:
        return False
    calls = [i for i, p in enumerate(step) if is_tool_part(p) and not p.get("providerExecuted")]
    if not calls:
        return False
    after = step[calls[-1] + 1 :]
    if any(p.get("type") == "text" and p.get("state") != "done" for p in after):
        return False
    return all(_settled(step[i]) for i in calls)


def last_assistant_message_is_complete_with_approval_responses(
    messages: Sequence[UIMessageDict],
) -> bool:
    """The AI SDK's ``lastAssistantMessageIsCompleteWithApprovalResponses``: the last step has
    an answered approval, and every tool part of it is answered or settled."""
    step = _last_assistant_step(messages)
    if step is None:
        return False
    tools = [p for p in step if is_tool_part(p)]
    return any(p.get("state") == "approval-responded" for p in tools) and all(
        _settled(p) or p.get("state") in ("output-denied", "approval-responded") for p in tools
    )


def stock_send_automatically_when(messages: Sequence[UIMessageDict]) -> bool:
    """``toolCallsDone(o) || approvalsDone(o)``: the ``sendAutomaticallyWhen`` docs/hitl.md
    recommends, with which every human-in-the-loop order works."""
    return last_assistant_message_is_complete_with_tool_calls(
        messages
    ) or last_assistant_message_is_complete_with_approval_responses(messages)
