"""Calls the model got wrong: a tool that does not exist, arguments the tool refuses.

ADK answers both to the model, not with an exception: a name that names no tool is answered
``{"error": "Invoking `x()` failed as no tool with that name is available…"}`` (after the
``on_tool_error_callback`` hooks, which may answer it otherwise), and a ``FunctionTool`` whose
arguments miss a mandatory parameter, or fail its type checks (``FUNCTION_TOOL_ARG_VALIDATION``),
answers ``{"error": "Invoking `x()` failed …"}`` without running. The AI SDK has a chunk for
exactly this, ``tool-input-error``: the part shows the error with the input as the model wrote
it, not as a tool that ran and failed. Telling the two apart by the error's words would break
with any rewording, so :class:`InvalidCalls`, a plugin, watches ADK decide:

- a name ADK could not resolve reaches ``on_tool_error_callback`` with ADK's stand-in tool (a
  bare ``BaseTool``, never a real tool's class);
- for a ``FunctionTool``, ``before_tool_callback`` runs ADK's own argument checks (the same
  methods ``FunctionTool.run_async`` runs first), and ``after_tool_callback`` confirms that ADK
  did answer with an error.

The call's function-response event is then tagged (``invalid_calls`` in the bridge's
bookkeeping, :mod:`adk_asgi.hitl.bookkeeping`), so the stream and history show the same
``tool-input-error`` part; the model is told exactly what ADK tells it. In live mode the
result is shown from the tool pipeline before its event (:mod:`adk_asgi.live.tools`), which
asks :meth:`InvalidCalls.is_invalid`.
"""

from __future__ import annotations

import logging
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi.adk import private
from adk_asgi.hitl import bookkeeping
from adk_asgi.serving.noted_calls import NotedCalls

logger = logging.getLogger("adk_asgi")


def is_error_answer(result: Any) -> bool:
    """ADK's answer to a call it refused: ``{"error": "…"}``."""
    return isinstance(result, dict) and isinstance(result.get("error"), str)


def refuses_arguments(tool: BaseTool, args: dict[str, Any]) -> bool:
    """Whether ADK's ``FunctionTool`` will refuse these arguments without running: its own
    checks, in the order ``FunctionTool.run_async`` makes them. Any other tool: no (its
    arguments are its own business)."""
    if not isinstance(tool, FunctionTool):
        return False
    try:
        return private.refuses_arguments(tool, args)
    except Exception:  # (ADK's checks changed shape: the call is shown as any other)
        logger.debug("could not check the arguments of %s", tool.name, exc_info=True)
        return False


class InvalidCalls(BasePlugin):
    """Tags the function response of each call ADK refused (see the module docstring).

    Registered on every ``AdkApp``, before the bridge's other plugins: its callbacks return
    ``None`` (ADK stops at the first plugin that returns a value), and its marks are read by
    the live tool gate after it."""

    def __init__(self) -> None:
        super().__init__(name="adk_asgi_invalid_calls")
        self._suspects = NotedCalls()
        """Calls whose arguments ADK's checks refuse, until the tool pipeline answers them."""
        self._invalid = NotedCalls()
        """Calls ADK refused, until their function-response event is tagged."""

    def is_invalid(self, call_id: str | None) -> bool:
        """Whether ADK refused this call (asked once its answer is known)."""
        return call_id is not None and call_id in self._invalid

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id
        if call_id and refuses_arguments(tool, tool_args):
            self._suspects.add(call_id)
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id
        if call_id and call_id in self._suspects:
            self._suspects.discard(call_id)
            if is_error_answer(result):
                self._invalid.add(call_id)
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id
        if call_id:
            self._suspects.discard(call_id)
            if type(tool) is BaseTool:  # ADK's stand-in for a name that named no tool
                self._invalid.add(call_id)
        return None

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        """Tags the event in place (a returned event would stop the plugins after this one).
        Every streamed delta passes here: one that can answer nothing returns at once."""
        if event.partial or not (self._invalid or self._suspects):
            return None
        answered = [(r.id, r.response) for r in event.get_function_responses() if r.id]
        marked = [i for i, response in answered if i in self._invalid and is_error_answer(response)]
        for call_id, _ in answered:
            self._invalid.discard(call_id)
            self._suspects.discard(call_id)
        bookkeeping.add_calls(event, invalid_calls=marked)
        return None
