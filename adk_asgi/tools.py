"""Tools that run in the browser, and the plugin that pauses a run while one is unanswered.

A client tool is declared once, in Python, with a typed signature and a docstring (the model
sees the same declaration as for any ``FunctionTool``); its body never runs on the server. ADK
sees a long-running tool that returns nothing, so the call stays open until the browser's
result arrives — in the next request over SSE, or through the socket in live mode. The tool
holds no transport logic: the bridge supplies the mechanism.

Approval for a client tool is the bridge's, not ADK's: ADK's ``require_confirmation`` would run
the tool *on the server* once approved, and its ``None`` result would overwrite the browser's
answer (DESIGN.md §7.8). So ``require_approval`` is recorded on the tool and enforced by the
bridge, which asks the user before the browser is told to run it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, overload

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_context import ToolContext

from .pending import chat_state

ApprovalRule = bool | Callable[..., bool]


class ClientTool(LongRunningFunctionTool):
    """A tool the browser executes (``onToolCall`` + ``addToolOutput`` on the client)."""

    def __init__(self, func: Callable[..., Any], *, require_approval: ApprovalRule = False):
        super().__init__(func)
        self.require_approval = require_approval

    def needs_approval(self, args: dict[str, Any]) -> bool:
        """Whether this call must be approved by the user before the browser runs it."""
        rule = self.require_approval
        if callable(rule):
            accepted = inspect.signature(rule).parameters
            return bool(rule(**{k: v for k, v in args.items() if k in accepted}))
        return bool(rule)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        # The declaration is all the server needs: the browser runs the tool.
        return None


@overload
def client_tool(func: Callable[..., Any], /) -> ClientTool: ...


@overload
def client_tool(
    *, require_approval: ApprovalRule = False
) -> Callable[[Callable[..., Any]], ClientTool]: ...


def client_tool(
    func: Callable[..., Any] | None = None, /, *, require_approval: ApprovalRule = False
) -> ClientTool | Callable[[Callable[..., Any]], ClientTool]:
    """Declare a tool that runs in the browser.

    ::

        @client_tool
        def change_bgm(track: int) -> None:
            \"\"\"Switch the background music to another track.\"\"\"

        @client_tool(require_approval=True)
        def get_location() -> None:
            \"\"\"Get the user's current location from the browser.\"\"\"

    ``require_approval`` is a bool or a function of the call's arguments (as ADK's
    ``require_confirmation``).
    """
    if func is not None:
        return ClientTool(func)

    def decorate(f: Callable[..., Any]) -> ClientTool:
        return ClientTool(f, require_approval=require_approval)

    return decorate


class PauseForClientTools(BasePlugin):
    """Stop a run instead of calling the model while a client tool call is unanswered.

    ADK stops a run only when its *last* event is final. A client tool called in the same step
    as a server tool leaves the server tool's response last, so ADK would call the model again
    at once, without the browser's result — and the call would dangle forever (DESIGN.md §7.1).
    The same holds when a continuation answers some calls of a step and not others. Over SSE
    the run must end and resume with the next request; in live mode the bridge awaits the
    browser instead, so this plugin only acts on runs that are not live.
    """

    def __init__(self) -> None:
        super().__init__(name="adk_asgi_pause_for_client_tools")

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        context = callback_context.get_invocation_context()
        if context.live_request_queue is not None:
            return None
        if not _unanswered_long_running_calls(context.session.events, context.invocation_id):
            return None
        context.end_invocation = True
        return LlmResponse()


def _unanswered_long_running_calls(events: list[Event], invocation_id: str) -> list[str]:
    state = chat_state(e for e in events if e.invocation_id == invocation_id)
    return [call.id for call in state.calls.values() if state.open_client_call(call.id)]


def find_client_tools(tools: list[Any]) -> dict[str, ClientTool]:
    """The client tools among an agent's tools, by name."""
    return {tool.name: tool for tool in tools if isinstance(tool, ClientTool)}


def is_client_tool(tool: BaseTool) -> bool:
    return isinstance(tool, ClientTool)
