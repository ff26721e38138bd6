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

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Final

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi.adk.private import invocation_of


async def after_agent_callbacks(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, result: Any
) -> Any:
    """``result`` as the agent's ``after_tool_callback`` list makes it (``result`` itself when
    none answers)."""
    callbacks = _agents(tool_context, "canonical_after_tool_callbacks")
    if not callbacks:
        return result
    changed = await run_callbacks(
        callbacks, tool=tool, args=args, tool_context=tool_context, tool_response=result
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
    return await run_callbacks(callbacks, tool=tool, args=args, tool_context=tool_context)


def _agents(tool_context: ToolContext, callbacks: str) -> Any:
    """The callbacks (``canonical_…_tool_callbacks``) of the agent that made the call, if any."""
    agent = invocation_of(tool_context).agent  # (not get_invocation_context(): it copies)
    return getattr(agent, callbacks, None)


async def run_callbacks(callbacks: Sequence[Callable[..., Any]], **kwargs: Any) -> Any:
    """Run ``callbacks`` in order, as ADK's tool pipeline runs an agent's list: the first that
    answers (not ``None``) wins and the rest do not run; each may be async.

    ADK's own runner (``google.adk.utils._callback_pipeline._run_callbacks`` with
    ``_stop_on_non_none``) is private; this is the same rule on the public
    ``canonical_*_tool_callbacks`` lists, kept equal to ADK's by a test that runs both
    (tests/unit/test_adk_private.py)."""
    result: Any = None
    for callback in callbacks:
        result = _invoke(callback, kwargs)
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            return result
    return result


_PARAMETER_ORDER: Final = (
    "tool",
    "args",
    "tool_context",
    "response",
    "tool_response",
    "callback_context",
    "llm_request",
    "llm_response",
    "error",
)
"""The order ADK passes a callback's arguments in by position, when the callback's parameters
are not named as ADK names them (``def before(t, a, ctx)``)."""


def _invoke(callback: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call ``callback`` with ``kwargs``, or with their values by position in ADK's order when
    its signature takes them so and not by name (as ADK's pipeline calls a callback)."""
    positional: list[Any] | None = None
    try:
        signature = inspect.signature(callback)
        try:
            signature.bind(**kwargs)
        except TypeError:
            ordered = sorted(kwargs.items(), key=lambda item: _position(item[0]))
            signature.bind(*(value for _, value in ordered))
            positional = [value for _, value in ordered]
    except (ValueError, TypeError):  # (no signature, or it binds neither way: ADK's call)
        pass
    return callback(**kwargs) if positional is None else callback(*positional)


def _position(name: str) -> int:
    return _PARAMETER_ORDER.index(name) if name in _PARAMETER_ORDER else len(_PARAMETER_ORDER)
