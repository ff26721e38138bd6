"""An agent's call of a workflow tool (ADK's ``NodeTool``) whose workflow asks the user, read
from hand-made sessions: while the question waits, the call waits with it (it is no call a
crash left); a new message closes both; once the question is answered, a call still without
its output is one a crash left."""

from __future__ import annotations

from typing import Any

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.hitl.interrupts import REQUEST_INPUT
from adk_asgi.hitl.pending import INPUT_MOVED_ON, INTERRUPTED
from tests.unit.test_pending import call_event, closing

REQUEST = {"interruptId": "ask", "message": "What is your name?", "response_schema": None}


def asked_inside(tool: str, call_id: str, *, branch: str | None = None) -> list[Event]:
    """The agent calls ``tool`` (a workflow), whose first node asks the user on the tool's
    branch, as ADK stores it."""
    question = types.FunctionCall(id="ask", name=REQUEST_INPUT, args=REQUEST)
    inner = Event(
        invocation_id="inv-1",
        author=tool,
        branch=branch or f"{tool}@{call_id}",
        content=types.Content(role="model", parts=[types.Part(function_call=question)]),
        long_running_tool_ids={"ask"},
    )
    return [call_event(tool, call_id), inner]


def answered(events: list[Event], output: Any) -> list[Event]:
    inner = events[-1]
    response = types.FunctionResponse(id="ask", name=REQUEST_INPUT, response=output)
    return [
        *events,
        Event(
            invocation_id="inv-1",
            author="user",
            branch=inner.branch,
            content=types.Content(role="user", parts=[types.Part(function_response=response)]),
        ),
    ]


def question_id(events: list[Event]) -> str:
    return f"ask~{events[-1].id}"


def test_a_tool_call_whose_workflow_asks_waits_with_the_question() -> None:
    events = asked_inside("greeter", "c1")
    assert closing(events) is None
    # another call of the same tool is not held by this one's question
    assert closing([call_event("greeter", "c0"), *events]) == ({"c0": INTERRUPTED}, [])
    # once the answer resumed the workflow, a call still without its output was left by a
    # server that stopped before the tool returned
    assert closing(answered(events, {"name": "Bob"})) == ({"c1": INTERRUPTED}, [])


def test_a_sub_agents_tool_call_waits_with_its_question_too() -> None:
    events = asked_inside("greeter", "c1", branch="front.helper.greeter@c1")
    assert closing(events) is None


def test_a_new_message_closes_the_question_and_answers_the_tool_call() -> None:
    events = asked_inside("greeter", "c1")
    assert closing(events, moved_on=True) == ({"c1": INPUT_MOVED_ON}, [question_id(events)])
