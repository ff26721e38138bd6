"""The agent's own tool callbacks, run where the live bridge acts on a call.

ADK runs the plugins' ``before_tool_callback`` and ``after_tool_callback`` first (the bridge's
among them) and the agent's only when no plugin answered, so the live gate (:mod:`.tools`) runs
them itself where it acts, as ADK would (its pipeline: the first that answers wins), to keep
live mode what SSE is:

* **Before a call it asks the user about, or answers itself** (a browser tool, a question, a
  workflow run as a tool, an approval): an agent's callback that answers the call (a policy that
  blocks it, a cache) answers it, and the user is not asked, as over SSE, where ADK runs the
  agent's callbacks before the tool asks. An approved call's callbacks run again as ADK runs
  it, as they do over SSE when the approved call is run.
* **After a result** (:func:`after_agent_callbacks`): the page is shown, and the early record
  keeps, the result the callbacks make, and ADK is answered with it, so it does not run them
  again. Before, the page got the tool's raw result where the model and history got the
  callback's: a callback that redacts did not redact for the page.
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
    callbacks = _agents(tool_context, "canonical_after_tool_callbacks")
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


async def before_agent_callbacks(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
) -> Any:
    """What the agent's ``before_tool_callback`` list answers for the call (``None``: none
    answers, the call goes on)."""
    callbacks = _agents(tool_context, "canonical_before_tool_callbacks")
    if not callbacks:
        return None
    return await _run_callbacks(
        callbacks, _stop_on_non_none, tool=tool, args=args, tool_context=tool_context
    )


def _agents(tool_context: ToolContext, callbacks: str) -> Any:
    """The callbacks (``canonical_…_tool_callbacks``) of the agent that made the call, if any."""
    agent = tool_context._invocation_context.agent  # (not get_invocation_context(): it copies)
    return getattr(agent, callbacks, None)
