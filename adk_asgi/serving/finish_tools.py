"""What ran is recorded: a client that leaves never stops a run between a tool and its result.

A client that leaves sets the SSE run's ``abort_signal`` (docs/internals/architecture.md,
"Disconnect"). ADK's runner reads events from the agent's task through a queue, and once the signal
is set it stops taking them and cancels that task (``Runner._consume_event_queue``,
``Runner._cleanup_root_task``): a tool that ran while the client left — an approved payment, a
continuation's first step — had its function response dropped before it was stored. The
payment ran, but history and the model were told it never did (``input-available``, "aborted").

So the abort is *held* while a tool may have run and its result is not stored yet
(:meth:`.pace.RunSignal.hold`), and ADK sees it only once the result is in the session:

- :class:`FinishRanTools`, a plugin, holds the abort from each tool's ``before_tool_callback``
  (in the agent's task; it finds the run's signal in :func:`.pace.run_signal`). A tool that
  would start after the abort took effect is not run: its call is answered by ADK's abort
  record, so it is neither run nor shown as run.
- :func:`stored`, called by the runner's session service (:mod:`.session_handover`) right
  after an event is appended, releases the calls the event answers: the abort takes effect
  with the truth stored.
- A continuation is held from its start (``CONTINUATION``): the answers were claimed, so an
  approved tool must run and be recorded, not be dropped with the claim spent.
- Every hold ends at the next model call at the latest (``before_model_callback``): by then
  ADK has stored the step's results (a complete event waits until the runner stored it), and
  what is left is the model's answer, which a client that left does not need. A tool that
  answers nothing (a browser tool) so never holds a run longer than its step.

A live connection has no abort signal: a closed socket cancels its ``run_live`` task. There
:func:`finish_ran_tools` runs the session in a task of its own and passes a cancellation on
only once no tool's result waits to be stored. In live mode the plugin runs after the live
tool gate (``live/tools.py``), so a call waiting for the user's decision holds nothing: the
hold starts when the tool is let run.

Holding rather than appending the result ourselves after the run: the result lives in the
agent's task, which ADK cancels; and a response the bridge appended after ADK sealed the
invocation would be the call's second answer, after ADK's "aborted" one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Final

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi.adk.private import answered_later
from adk_asgi.serving.pace import RunSignal, run_signal

CONTINUATION: Final = "adk_asgi:continuation"
"""The hold of a continuation's run, from its start to its first model call."""

NOT_RUN: Final = "The run was stopped before this tool ran."


class FinishRanTools(BasePlugin):
    """Holds an SSE run's abort while a tool's result is not stored yet."""

    def __init__(self) -> None:
        super().__init__(name="adk_asgi_finish_ran_tools")

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        signal = run_signal()
        call_id = tool_context.function_call_id
        if signal is None or call_id is None:
            return None
        if signal.is_set():  # ADK is stopping the run: this tool's result would be lost
            return {"error": NOT_RUN}
        signal.hold(call_id)
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """A long-running tool that returned nothing leaves its call open (ADK stores no
        response: the app answers it later, ``AdkApp.answer_call``), so nothing will be stored
        to release it: it holds nothing from here on."""
        signal = run_signal()
        call_id = tool_context.function_call_id
        long_running = answered_later(tool)
        if signal is not None and call_id is not None and long_running and not result:
            signal.release(call_id)
        return None

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        signal = run_signal()
        if signal is not None:
            signal.release_all()
        return None


def stored(event: Event) -> None:
    """``event`` is in the session: the calls it answers no longer hold the run's abort."""
    signal = run_signal()
    if signal is None or event.content is None or not event.content.parts:
        return
    answered = [p.function_response.id for p in event.content.parts if p.function_response]
    signal.release(*(call_id for call_id in answered if call_id))


async def finish_ran_tools(
    work: Coroutine[Any, Any, None], signal: RunSignal, grace: float
) -> None:
    """Run ``work`` (a live session, under ``signal``) in a task of its own. A cancellation of
    the caller asks it to stop, and cancels it once no tool's result waits to be stored, or
    ``grace`` seconds later (a tool that never answers does not keep a connection forever)."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        signal.set()
        if not task.done():
            try:
                async with asyncio.timeout(grace):
                    await signal.wait()
            except TimeoutError:
                pass
            finally:
                task.cancel()
                await asyncio.wait([task])
        raise
