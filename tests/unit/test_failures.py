"""What a failed answer leaves of the calls it ran (convert/failures.py): their results, stored
as ADK would have stored them."""

from __future__ import annotations

from typing import Any

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from adk_asgi.convert.failures import FailedCall, failed_calls_answer
from adk_asgi.hitl import bookkeeping


def calls(author: str, invocation: str, *ids: str, branch: str | None = None) -> Event:
    parts = [types.Part(function_call=types.FunctionCall(id=i, name=f"t_{i}")) for i in ids]
    return Event(
        invocation_id=invocation,
        author=author,
        branch=branch,
        content=types.Content(role="model", parts=parts),
    )


def responses(author: str, results: dict[str, Any], **actions: Any) -> Event:
    parts = [
        types.Part(function_response=types.FunctionResponse(id=i, name=f"t_{i}", response=r))
        for i, r in results.items()
    ]
    return Event(
        invocation_id="i1",
        author=author,
        content=types.Content(role="user", parts=parts),
        actions=EventActions(**actions),
    )


def answered(event: Event) -> tuple[str, str, str | None, dict[str, Any], list[tuple[Any, ...]]]:
    tags = tags_of(event)
    parts = [
        (p.function_response.id, p.function_response.name, p.function_response.response)
        for p in (event.content.parts or [] if event.content else [])
        if p.function_response is not None
    ]
    return event.author, event.invocation_id, event.branch, tags, parts


def tags_of(event: Event) -> dict[str, Any]:
    raw: dict[str, Any] = (event.custom_metadata or {})[bookkeeping.KEY]
    return raw


def test_each_failed_call_is_answered_with_the_error_as_the_agent_that_made_it() -> None:
    """From the call's agent, in its invocation and branch, one event per agent; a call that
    no stored event holds gets nothing, nor one with a stored result. ADK's placeholder for a
    call waiting on its confirmation is no result."""
    events = [
        calls("front", "i1", "c1", "c2", "c3"),
        responses("front", {"c2": {"ok": True}}),
        calls("worker", "i2", "c4", branch="front.worker"),
        responses(
            "worker",
            {"c4": {"error": "This tool call requires confirmation, please approve or reject."}},
            requested_tool_confirmations={"c4": ToolConfirmation(hint="sure?")},
        ),
    ]
    failed = [FailedCall(i, i, f"t_{i}") for i in ("c1", "c2", "c3", "c4", "c9")]
    stored = failed_calls_answer(events, failed, "An error occurred.", "msg1")
    error = {"error": "An error occurred."}
    assert [answered(e) for e in stored] == [
        (
            "front",
            "i1",
            None,
            {"v": 2, "messageId": "msg1", "kept": True},
            [("c1", "t_c1", error), ("c3", "t_c3", error)],
        ),
        (
            "worker",
            "i2",
            "front.worker",
            {"v": 2, "messageId": "msg1", "kept": True},
            [("c4", "t_c4", error)],
        ),
    ]
    assert all(e.content is not None and e.content.role == "user" for e in stored)
