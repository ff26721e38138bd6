"""A workflow run as a tool (ADK's ``NodeTool``) that asks the user, on a live connection.

Over SSE a ``RequestInput`` inside the tool's workflow stops the run, and the user's answer
resumes the invocation: ADK calls the tool again and the workflow picks up from the session
(:mod:`adk_asgi.hitl.node_tools`). ADK's live flow has no such pause: the tool raises
``NodeInterruptedError`` (a ``BaseException``) out of its tool pipeline and the live run
dies with it. So the live plugin runs such a tool itself (:func:`run`): when the workflow
stops for the user, the questions it asked (already shown to the page, as over SSE) wait for
the page's answers like the ``request_input`` tool's question; each answer is stored as ADK
stores one over SSE (a function response on the tool's branch, in the same invocation), and
the tool runs again: the workflow resumes from the session, as it does over SSE.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard

from google.adk.events.event import Event
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_asgi.adk.private import NodeInterruptedError, NodeTool
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.interrupts import REQUEST_INPUT
from adk_asgi.hitl.outcomes import EXPIRED as TIMED_OUT


class Page(Protocol):
    """The connection's page, as the tool's questions need it."""

    async def ask(self, question: types.FunctionCall) -> tuple[bool, Any]:
        """Wait for the page's answer: ``(True, answer)``, or ``(False, outcome)`` when none
        came (the wait ran out, the user moved on, another request took it)."""
        ...

    def answered(self, call_id: str, answer: Any) -> None:
        """Show the answer as the question's output."""
        ...


def runs_a_workflow(tool: BaseTool) -> TypeGuard[NodeTool]:
    """Whether ``tool`` runs a node (a workflow) that may stop for the user."""
    return isinstance(tool, NodeTool)


async def run(
    tool: NodeTool, args: dict[str, Any], tool_context: ToolContext, page: Page
) -> dict[str, Any]:
    """Run ``tool`` to its output (as ADK stores it), waiting for the page's answers whenever
    its workflow stops for the user; a question left unanswered ends the tool with its
    outcome, and the workflow is not resumed."""
    context = tool_context.get_invocation_context()
    segment = f"{tool.name}@{tool_context.function_call_id}"
    while True:
        try:
            result = await tool.run_async(args=args, tool_context=tool_context)
        except NodeInterruptedError:
            questions = _open_questions(context.session.events, segment, context.invocation_id)
            if not questions:
                raise
        else:
            return result if isinstance(result, dict) else {"result": result}
        for event, question in questions:
            answered, answer = await page.ask(question)
            if not answered:  # closed, never answered: the workflow must not resume with it
                closed = bookkeeping.with_tags(
                    None,
                    closed_approvals=[question.id],
                    expired=[question.id] if answer == TIMED_OUT else [],
                )
                stored = Event(
                    invocation_id=context.invocation_id, author="user", custom_metadata=closed
                )
                await context.session_service.append_event(context.session, stored)
                page.answered(question.id or "", answer)
                return answer if isinstance(answer, dict) else {"result": answer}
            response = types.FunctionResponse(id=question.id, name=REQUEST_INPUT, response=answer)
            content = types.Content(role="user", parts=[types.Part(function_response=response)])
            stored = Event(
                invocation_id=context.invocation_id,
                author="user",
                branch=event.branch,
                content=content,
            )
            await context.session_service.append_event(context.session, stored)
            page.answered(question.id or "", answer)


def _open_questions(
    events: list[Event], segment: str, invocation_id: str
) -> list[tuple[Event, types.FunctionCall]]:
    """The questions for the user asked on the tool call's branch and not answered yet."""
    answered = {
        response.id
        for event in events
        if event.invocation_id == invocation_id
        for response in event.get_function_responses()
    }
    return [
        (event, call)
        for event in events
        if event.invocation_id == invocation_id and segment in (event.branch or "").split(".")
        for call in event.get_function_calls()
        if call.name == REQUEST_INPUT and call.id and call.id not in answered
    ]
