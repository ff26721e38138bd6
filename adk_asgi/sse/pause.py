"""The plugin that ends an SSE run instead of calling the model while a browser call is open."""

from __future__ import annotations

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin

from adk_asgi.hitl.pending import chat_state


class PauseForClientTools(BasePlugin):
    """Stop a run instead of calling the model while a client tool call is unanswered.

    ADK stops a run only when its *last* event is final. A client tool called in the same step
    as a server tool leaves the server tool's response last, so ADK would call the model again
    at once, without the browser's result — and the call would dangle forever
    (docs/internals/architecture.md#long-running-tools).
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
    mine = [e for e in events if e.invocation_id == invocation_id]
    if not any(e.get_function_calls() for e in mine):  # the first model call of most turns
        return []
    state = chat_state(mine)
    return [call.id for call in state.calls.values() if state.open_client_call(call.id)]
