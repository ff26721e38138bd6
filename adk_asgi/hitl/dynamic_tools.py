"""Which tool calls the client is sent as *dynamic* tools (``dynamic-tool`` parts).

The AI SDK types a page's tool parts by name (``tool-<name>``) for the tools the page knows
when it is built, and has a second kind, ``dynamic-tool`` (with ``toolName``), for tools it
cannot know: an MCP server's, or any toolset that lists its tools at run time. A page renders
the two kinds apart (``part.type === "dynamic-tool"``), so a call sent with the wrong kind is
not rendered, and an approval that is not rendered is never answered.

The rule (docs/tools.md#dynamic-tools), decided by name and the same for the stream, history
and both transports:

* by default a call is dynamic when its tool comes from a toolset (an ADK ``BaseToolset``, such
  as ``McpToolset``): every name that no agent of the app lists as a tool itself (a function or
  a ``BaseTool``), in an app whose agents have a toolset. The tools ADK adds itself
  (:data:`ADK_OWN`: ``transfer_to_agent``, the questions it asks the page…) are never dynamic;
  an app with no toolset has no dynamic tool;
* ``Messages(dynamic_tools=...)`` replaces that rule: a collection of names (exactly those are
  dynamic; empty: none is) or a predicate of the name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable
from typing import Any, Final

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset

from adk_asgi.hitl.interrupts import ASKING_THE_USER

DynamicTools = Collection[str] | Callable[[str], bool]
"""``Messages(dynamic_tools=...)``: the names of the dynamic tools, or a predicate of a name."""

ADK_OWN: Final = frozenset(
    {
        "transfer_to_agent",  # an agent with sub-agents
        "task_completed",  # the sub-agents of a live SequentialAgent
        "set_model_response",  # an agent with both tools and an output_schema
        "adk_request_confirmation",  # a tool's confirmation (shown as its call's approval)
        *ASKING_THE_USER,
    }
)
"""The tools ADK adds itself, which no agent lists: never a toolset's."""


def listed_name(tool: Any) -> str | None:
    """The name of a tool an agent lists itself (a ``BaseTool``, or a callable ADK wraps in a
    ``FunctionTool``, named as ADK names it: ``get_callable_name`` in
    ``google.adk.tools._function_tool_declarations``); ``None`` for a toolset."""
    if isinstance(tool, BaseToolset):
        return None
    if isinstance(tool, BaseTool):
        return tool.name
    while isinstance(tool, functools.partial) and not hasattr(tool, "__name__"):
        tool = tool.func
    name = getattr(tool, "__name__", None)
    return name if isinstance(name, str) and name else type(tool).__name__


def dynamic_rule(tools: Iterable[Any], override: DynamicTools | None) -> Callable[[str], bool]:
    """The predicate that says whether a call of a name is sent as a dynamic tool, for the
    tools the app's agents list (``override``: the app's ``dynamic_tools``)."""
    if override is not None:
        if isinstance(override, str):
            raise TypeError("dynamic_tools is a collection of names or a predicate, not a str")
        if callable(override):
            return override
        names = frozenset(override)
        return names.__contains__
    tools = list(tools)
    if not any(isinstance(tool, BaseToolset) for tool in tools):
        return _never
    listed = {name for name in map(listed_name, tools) if name is not None} | ADK_OWN
    return lambda name: name not in listed


def _never(name: str) -> bool:
    return False
