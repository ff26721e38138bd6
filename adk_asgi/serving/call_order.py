"""Results in the order of their calls: what Gemini needs of a model request.

Gemini's REST API gives function calls no ids (ADK mints its own and strips them from the
request again), so the model pairs a turn's function responses with the calls before it by
position. ADK merges a step's responses in the order they were stored: a browser tool that
answers the second call together with its approval, and the first one later, sent the results
swapped, and the model read each as the other call's. :class:`ResultsInCallOrder` puts each turn
of responses in its calls' order before the request leaves. The ids are gone from the request
by then, so it reads them from the session: the step's call event, and its responses in the
order they were stored, which is the order ADK merged them in. (The scripted model, whose calls
keep their ids, never showed it.)
"""

from __future__ import annotations

from collections.abc import Sequence

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types


class ResultsInCallOrder(BasePlugin):
    """Orders each turn of function responses as the calls it answers (module docstring)."""

    def __init__(self) -> None:
        super().__init__(name="adk_asgi_results_in_call_order")

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        contents = llm_request.contents
        events = callback_context.session.events
        cursor = 0
        for index in range(1, len(contents)):
            calls = _calls(contents[index - 1])
            if not calls or all(call.id for call in calls) or not _responses(contents[index]):
                continue  # (calls that kept their ids are paired by id: nothing to read)
            found = _call_event(events, calls, cursor)
            if found is None:
                continue
            cursor, ids = found
            stored = _stored_order(events[cursor + 1 :], ids)
            contents[index] = in_call_order(contents[index], ids, stored)
        return None


def in_call_order(
    results: types.Content, call_ids: Sequence[str], stored: Sequence[str]
) -> types.Content:
    """``results``, whose function responses answer ``stored`` (ids, in their order there), or
    a copy of it (the request's parts are shared with the session's events) with them in the
    order of ``call_ids``."""
    parts = results.parts or []
    answers = [part for part in parts if part.function_response is not None]
    if len(answers) != len(stored) or list(stored) == [i for i in call_ids if i in stored]:
        return results
    rank = {call_id: position for position, call_id in enumerate(call_ids)}
    by_id = dict(zip(stored, answers, strict=True))
    ordered = iter(sorted(by_id.items(), key=lambda item: rank.get(item[0], len(rank))))
    reordered = [next(ordered)[1] if part.function_response is not None else part for part in parts]
    return results.model_copy(update={"parts": reordered})


def _calls(content: types.Content) -> list[types.FunctionCall]:
    return [part.function_call for part in content.parts or [] if part.function_call is not None]


def _responses(content: types.Content) -> bool:
    return any(part.function_response is not None for part in content.parts or [])


def _call_event(
    events: Sequence[Event], calls: list[types.FunctionCall], start: int
) -> tuple[int, list[str]] | None:
    """The first event from ``start`` that made ``calls`` (same names and arguments, in
    order): its index and its calls' ids."""
    wanted = [(call.name, call.args) for call in calls]
    for index in range(start, len(events)):
        made = events[index].get_function_calls()
        if [(call.name, call.args) for call in made] == wanted and all(c.id for c in made):
            return index, [call.id or "" for call in made]
    return None


def _stored_order(events: Sequence[Event], call_ids: list[str]) -> list[str]:
    """The ids of ``call_ids``' responses in the order ``events`` hold them (each once)."""
    seen: list[str] = []
    for event in events:
        for response in event.get_function_responses():
            if response.id in call_ids and response.id not in seen:
                seen.append(response.id)
        if len(seen) == len(call_ids):
            break  # (the rest of the chat after the step is not read)
    return seen
