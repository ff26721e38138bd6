"""What the bridge must know about an agent's tools, read once from the agent tree.

Four questions decide how a tool call travels: does it run in the browser (a
:class:`~.tools.ClientTool`), must the user approve it before the browser runs it (the
bridge's approval, not ADK's), may it ask the user at all (so the converter holds a step's
later calls until ADK's confirmation event shows whether it asks), and is it sent as a dynamic
tool (:mod:`.dynamic_tools`). :class:`ToolPolicy` answers all four, with one name each, for
every transport and the sans-I/O core.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from google.adk.tools.base_toolset import BaseToolset

from adk_asgi.adk.private import confirmation_rule
from adk_asgi.hitl.dynamic_tools import DynamicTools, dynamic_rule
from adk_asgi.hitl.interrupts import ASKING_THE_USER
from adk_asgi.hitl.tools import ClientTool


class ToolPolicy:
    """The tool facts of a set of tools (:meth:`of` reads them from agent trees)."""

    def __init__(self, tools: Iterable[Any] = (), *, dynamic: DynamicTools | None = None) -> None:
        tools = list(tools)
        self.client_tools: Mapping[str, ClientTool] = {
            tool.name: tool for tool in tools if isinstance(tool, ClientTool)
        }
        # (an ``McpToolset``'s rule is for each tool it lists at run time)
        named = [t for t in tools if not isinstance(t, BaseToolset | ClientTool)]
        confirming = {t.name for t in named if confirmation_rule(t)}
        self._asking = frozenset(confirming | set(self.client_tools))
        self._by_rule = frozenset(t.name for t in named if callable(confirmation_rule(t)))
        sets = [t for t in tools if isinstance(t, BaseToolset)]
        self._toolset_asks = any(confirmation_rule(t) for t in sets)
        """A toolset's tools may ask (an ``McpToolset(require_confirmation=...)``): the
        names are known only at run time, so every dynamic tool may."""
        self._toolset_rules = any(callable(confirmation_rule(t)) for t in sets)
        self._dynamic = dynamic_rule(tools, dynamic)

    @classmethod
    def of(cls, *roots: object, dynamic: DynamicTools | None = None) -> ToolPolicy:
        """The policy of every tool of these agent trees (an app's agent and its live agent);
        ``dynamic``: the app's ``dynamic_tools`` (:mod:`.dynamic_tools`)."""
        return cls((tool for root in roots for tool in agent_tools(root)), dynamic=dynamic)

    def is_dynamic(self, name: str) -> bool:
        """Whether a call of this tool is sent as a ``dynamic-tool`` part (a tool the page
        cannot know when it is built: a toolset's, :mod:`.dynamic_tools`)."""
        return self._dynamic(name)

    def is_client_tool(self, name: str) -> bool:
        """Whether the browser runs this tool (its call waits for ``addToolOutput``)."""
        return name in self.client_tools

    def needs_approval(self, name: str, args: dict[str, Any]) -> bool:
        """Whether a call of this client tool waits for the user's approval before the browser
        runs it (``client_tool(require_approval=...)``; ADK's own confirmations are ADK's)."""
        tool = self.client_tools.get(name)
        return tool is not None and tool.needs_approval(args)

    def runs_unasked(self, name: str) -> bool:
        """Whether the server runs a call of this name with nothing asked of the page: no
        approval, no browser, no answer from the user (ADK's ``adk_request_input`` and
        ``adk_request_credential`` are the page's to answer). The client is told
        (``providerExecuted``), as the AI SDK tells it of any tool the server runs: its
        ``onToolCall`` leaves the call alone, and ``lastAssistantMessageIsCompleteWithToolCalls``
        does not take an answer that ends on its output (``skip_summarization``, ``exit_loop``,
        a live ``task_completed``) for one to send again."""
        asked = name in self.client_tools or name in ASKING_THE_USER or self.may_ask(name)
        return not asked

    def approves_by_rule(self, name: str) -> bool:
        """Whether a function of the arguments decides if a call of this server tool asks the
        user (``FunctionTool(require_confirmation=callable)``): a call it let through was
        approved automatically, as the AI SDK calls a call its ``needsApproval`` let through."""
        return name in self._by_rule or (self._toolset_rules and self.is_dynamic(name))

    def may_ask(self, name: str) -> bool:
        """Whether a tool may ask the user before it runs (``require_confirmation`` set, or a
        client tool that needs approval). Tools that call ``request_confirmation`` themselves
        cannot be told apart: their approvals come after all of the step's calls."""
        return name in self._asking or (self._toolset_asks and self.is_dynamic(name))


def agent_tools(root: object) -> Iterator[Any]:
    """Every tool of the agent tree (functions, tools and toolsets, as the agents list them)."""
    agents = [root]
    while agents:
        agent = agents.pop()
        yield from getattr(agent, "tools", None) or []
        agents.extend(getattr(agent, "sub_agents", None) or [])


def toolsets(root: object) -> set[BaseToolset]:
    """Every toolset of the agent tree (what ``Runner.close`` closes)."""
    return {tool for tool in agent_tools(root) if isinstance(tool, BaseToolset)}
