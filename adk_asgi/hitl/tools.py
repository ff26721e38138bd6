"""Tools that run in the browser: `client_tool` and `ClientTool` (the plugin that pauses an SSE
run while one is unanswered is in :mod:`adk_asgi.sse.pause`).

A client tool is declared once, in Python, with a typed signature and a docstring (the model
sees the same declaration as for any ``FunctionTool``); its body never runs on the server. ADK
sees a long-running tool that returns nothing, so the call stays open until the browser's
result arrives — in the next request over SSE, or through the socket in live mode. The tool
holds no transport logic: the bridge supplies the mechanism.

Approval for a client tool is the bridge's, not ADK's: ADK's ``require_confirmation`` would run
the tool *on the server* once approved, and its ``None`` result would overwrite the browser's
answer (docs/internals/architecture.md#browser-tools-that-need-approval). So ``require_approval`` is
recorded on the tool and enforced by the bridge, which asks the user before the browser is told
to run it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, overload

from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_context import ToolContext

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
