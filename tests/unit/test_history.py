"""History replayed from hand-made sessions, where no stream could show the case: stored
values the bridge cannot read back (a session written before the bridge repaired them)."""

from __future__ import annotations

from typing import Any

import msgspec

from adk_asgi.convert.history import rebuild_messages
from adk_asgi.convert.safe_history import MAX_DEPTH, lost_input, lost_result
from adk_asgi.hitl.policy import ToolPolicy
from tests.unit.test_continuation import call_event, response_event


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_a_call_or_result_that_cannot_be_read_back_is_shown_as_its_error() -> None:
    """Too deep for the client's JSON, so never sent as it is: the part says what was lost,
    as the model is told (convert/safe_history.py)."""
    why = f"it is nested deeper than {MAX_DEPTH} levels"
    events = [
        call_event(("c1", "lookup", nested(MAX_DEPTH + 5)), ("c2", "lookup", {"q": 1})),
        response_event("c1", "lookup", {"ok": True}),
        response_event("c2", "lookup", nested(MAX_DEPTH + 5)),
    ]
    parts = msgspec.to_builtins(rebuild_messages(events, ToolPolicy())[0].parts)
    assert parts == [
        {"type": "step-start"},
        {
            "type": "tool-lookup",
            "toolCallId": "c1",
            "state": "output-available",
            "input": {"error": lost_input(why)},
            "output": {"ok": True},
            "providerExecuted": True,
        },
        {
            "type": "tool-lookup",
            "toolCallId": "c2",
            "state": "output-error",
            "input": {"q": 1},
            "errorText": lost_result(why),
            "providerExecuted": True,
        },
    ]
