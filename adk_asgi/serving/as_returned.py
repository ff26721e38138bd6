"""The one tool result ADK's wrapper makes ambiguous, recorded when the tool returns it.

ADK stores a tool's return value that is not an object as ``{"result": value}``, and the client
is shown ``value`` (:mod:`adk_asgi.convert.returned`). A tool that itself returned an object of
that exact shape (``{"result": [1, 2]}``) is stored the same way, and must be shown as it
returned it. Only the tool pipeline can tell them apart: :class:`AsReturned`, a plugin, sees
the value the tool returned (ADK passes it to ``after_tool_callback`` unchanged) and notes
such a call of the app's own functions (:func:`returns_its_own`); when the function-response
event that answers it passes through the runner (``on_event_callback``, before the event is
stored and streamed), the call's id is added to the event's bookkeeping (``as_returned``),
which the stream and history read. Both modes: the live runner calls the same callbacks (the
live stream, which shows a result from the tool pipeline, asks :func:`returns_its_own` too).

The plugin changes the event in place and returns ``None``: ADK stops at the first plugin that
returns an event, and the live tool gate tags events after it. A result that another plugin
or an agent's ``after_tool_callback`` replaced is not seen (they run after it or stop the
chain), nor is the answer the app gives a long-running call (``AdkApp.answer_call``): those
follow the rule without the record.
"""

from __future__ import annotations

from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi.convert.returned import is_wrapper
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.interrupts import ASKING_THE_USER
from adk_asgi.hitl.tools import ClientTool
from adk_asgi.serving.noted_calls import NotedCalls


def returns_its_own(tool: BaseTool) -> bool:
    """Whether what ``after_tool_callback`` is given for ``tool`` is the app's own return value:
    a function of the app (a ``FunctionTool``), not a browser tool or ADK's questions (the page
    answers them), nor ADK's own tool classes (a ``NodeTool`` resumed after its workflow's
    question hands back the response ADK stored, wrapper included)."""
    page_answers = isinstance(tool, ClientTool) or tool.name in ASKING_THE_USER
    return isinstance(tool, FunctionTool) and not page_answers


class AsReturned(BasePlugin):
    """Tags the function-response events of the tools that returned ADK's wrapper shape."""

    def __init__(self) -> None:
        super().__init__(name="adk_asgi_as_returned")
        self._kept = NotedCalls()

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id
        if call_id and returns_its_own(tool) and is_wrapper(result):
            self._kept.add(call_id)
        return None

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        if not self._kept:
            return None
        answered = (response.id for response in event.get_function_responses())
        kept = [call_id for call_id in answered if call_id and call_id in self._kept]
        if kept:
            for call_id in kept:
                self._kept.discard(call_id)
            bookkeeping.add_calls(event, as_returned=kept)
        return None
