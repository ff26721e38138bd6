"""Function responses reach the model in their calls' order (adk_asgi/serving/call_order.py)."""

from __future__ import annotations

from typing import Any

from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.sessions.session import Session
from google.genai import types

from adk_asgi.serving.call_order import ResultsInCallOrder


def call(call_id: str | None, place: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name="where", args={"p": place}))


def result(call_id: str | None, value: Any) -> types.Part:
    answer = types.FunctionResponse(id=call_id, name="where", response={"at": value})
    return types.Part(function_response=answer)


class _Context:
    """What the plugin reads of its ``CallbackContext``: the session."""

    def __init__(self, session: Session) -> None:
        self.session = session


async def test_results_answered_out_of_order_reach_gemini_in_their_calls_order() -> None:
    """The browser answered the second call first (with its approval): ADK merged the results
    in that order, and Gemini, whose calls carry no ids, read each as the other call's."""
    model = types.Content(role="model", parts=[call("adk-1", "a"), call("adk-2", "b")])
    events = [
        Event(author="agent", content=model),
        Event(author="user", content=types.Content(role="user", parts=[result("adk-2", 2)])),
        Event(author="user", content=types.Content(role="user", parts=[result("adk-1", 1)])),
    ]
    session = Session(id="s", app_name="a", user_id="u", events=events)
    # the request as ADK builds it for Gemini: ids stripped, results in stored order
    sent_calls = types.Content(role="model", parts=[call(None, "a"), call(None, "b")])
    merged = types.Content(role="user", parts=[result(None, 2), result(None, 1)])
    request = LlmRequest(contents=[sent_calls, merged])
    context: Any = _Context(session)
    assert (
        await ResultsInCallOrder().before_model_callback(
            callback_context=context, llm_request=request
        )
        is None
    )
    assert request.contents[1].parts == [result(None, 1), result(None, 2)]
    assert merged.parts == [result(None, 2), result(None, 1)]  # the session's own: untouched


async def test_results_already_in_order_are_left_as_they_are() -> None:
    model = types.Content(role="model", parts=[call("adk-1", "a"), call("adk-2", "b")])
    answered = types.Content(role="user", parts=[result("adk-1", 1), result("adk-2", 2)])
    session = Session(
        id="s", app_name="a", user_id="u",
        events=[Event(author="agent", content=model), Event(author="user", content=answered)],
    )  # fmt: skip
    merged = types.Content(role="user", parts=[result(None, 1), result(None, 2)])
    sent = types.Content(role="model", parts=[call(None, "a"), call(None, "b")])
    request = LlmRequest(contents=[sent, merged])
    context: Any = _Context(session)
    await ResultsInCallOrder().before_model_callback(callback_context=context, llm_request=request)
    assert request.contents[1] is merged
