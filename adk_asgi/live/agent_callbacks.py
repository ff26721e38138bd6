"""The agent's own ``after_tool_callback``, run where the live bridge takes a tool's result.

ADK runs the plugins' ``after_tool_callback`` first (the bridge's among them) and the agent's
only when no plugin answered. The live bridge shows a server tool's result from its plugin, as
it comes, and stores it early next to a call that waits (:mod:`.tools`): without this, the page
was shown, and the early record kept, the tool's raw result where ADK's event (the model, a
later history) had the callback's — a callback that redacts did not redact for the page. So the
gate runs the agent's callbacks itself, as ADK would (its pipeline: the first that answers
wins), and answers ADK with their result: ADK then does not run them again.
"""

from __future__ import annotations

from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.adk.utils._callback_pipeline import _run_callbacks, _stop_on_non_none


async def after_agent_callbacks(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, result: Any
) -> Any:
    """``result`` as the agent's ``after_tool_callback`` list makes it (``result`` itself when
    none answers)."""
    agent = tool_context._invocation_context.agent  # (not get_invocation_context(): it copies)
    callbacks = getattr(agent, "canonical_after_tool_callbacks", None)
    if not callbacks:
        return result
    changed = await _run_callbacks(
        callbacks,
        _stop_on_non_none,
        tool=tool,
        args=args,
        tool_context=tool_context,
        tool_response=result,
    )
    return result if changed is None else changed
