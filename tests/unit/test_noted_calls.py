"""The notes the bridge's plugins keep between a tool's callback and its call's event are capped
(``serving/noted_calls.py``): a run stopped in between leaves its notes behind, and the plugins
live as long as the app. ``InvalidCalls`` kept two sets that grew without bound."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from google.adk.tools.function_tool import FunctionTool

from adk_asgi.serving.invalid_calls import InvalidCalls
from adk_asgi.serving.noted_calls import NOTED_LIMIT, NotedCalls


def test_the_oldest_note_goes_past_the_limit_and_a_renewed_note_counts_as_new() -> None:
    notes = NotedCalls(limit=3)
    for call_id in ["a", "b", "c"]:
        notes.add(call_id)
    notes.add("a")  # noted again: now the newest
    notes.add("d")
    assert ("a" in notes, "b" in notes, "c" in notes, "d" in notes) == (True, False, True, True)
    assert len(notes) == 3
    notes.discard("a")
    notes.discard("never noted")
    assert ("a" in notes, len(notes), bool(notes)) == (False, 2, True)


def pay(amount: int) -> dict[str, Any]:
    return {"paid": amount}


def test_calls_left_behind_by_stopped_runs_do_not_grow_invalid_calls() -> None:
    """Each call refused by ADK's checks (no ``amount``) and never answered: its run stopped."""
    plugin = InvalidCalls()
    tool = FunctionTool(pay)

    async def refused_calls(count: int) -> None:
        for number in range(count):
            context: Any = SimpleNamespace(function_call_id=f"call-{number}")
            await plugin.before_tool_callback(tool=tool, tool_args={}, tool_context=context)
            error = {"error": "missing amount"}
            await plugin.after_tool_callback(
                tool=tool, tool_args={}, tool_context=context, result=error
            )

    asyncio.run(refused_calls(NOTED_LIMIT + 500))
    assert plugin.is_invalid(f"call-{NOTED_LIMIT + 499}")
    assert not plugin.is_invalid("call-0")  # the oldest, dropped
    assert len(plugin._invalid) == NOTED_LIMIT
