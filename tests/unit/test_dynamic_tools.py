"""Which calls are dynamic tools (hitl/dynamic_tools.py), and their chunks (convert/)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.tools import FunctionTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.genai import types

from adk_asgi import client_tool
from adk_asgi.convert.progress import Progress
from adk_asgi.convert.text_blocks import TextBlocks
from adk_asgi.convert.tool_cards import ToolCards
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import (
    ToolApprovalRequest,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    ToolOutputAvailable,
    ToolOutputError,
    UIMessageChunk,
)


def weather(city: str) -> dict[str, Any]:
    """The weather."""
    return {}


@client_tool(require_approval=True)
def locate() -> None:
    """Where the user is."""


class Forecast:
    """A callable object: ADK names its tool after its class."""

    def __call__(self) -> dict[str, Any]:
        return {}


class Remote(BaseToolset):
    async def get_tools(self, readonly_context: Any = None) -> list[BaseTool]:
        return []


def test_a_toolsets_tools_are_dynamic_by_default_and_nothing_else() -> None:
    policy = ToolPolicy([weather, locate, Remote()])
    assert [policy.is_dynamic(n) for n in ("weather", "locate", "search", "transfer_to_agent")] == [
        False,
        False,
        True,
        False,
    ]
    adk_own = ("adk_request_input", "task_completed", "set_model_response")
    assert not any(policy.is_dynamic(name) for name in adk_own)
    named = ToolPolicy([functools.partial(weather, city="Paris"), Forecast(), Remote()])
    assert (named.is_dynamic("weather"), named.is_dynamic("Forecast")) == (False, False)
    assert not ToolPolicy([weather, FunctionTool(weather)]).is_dynamic("search")  # no toolset


def test_dynamic_tools_names_or_a_predicate_replace_the_rule() -> None:
    names = ToolPolicy([weather, Remote()], dynamic={"weather"})
    assert (names.is_dynamic("weather"), names.is_dynamic("search")) == (True, False)
    predicate = ToolPolicy([weather], dynamic=lambda name: name.startswith("w"))
    assert (predicate.is_dynamic("weather"), predicate.is_dynamic("locate")) == (True, False)
    assert not ToolPolicy([Remote()], dynamic=()).is_dynamic("search")
    with pytest.raises(TypeError):
        ToolPolicy([], dynamic="weather")


def call_event(*calls: tuple[str, str, dict[str, Any]]) -> Event:
    parts = [
        types.Part(function_call=types.FunctionCall(id=i, name=n, args=a)) for i, n, a in calls
    ]
    return Event(author="a", content=types.Content(role="model", parts=parts))


def test_a_dynamic_calls_chunks_say_so_from_its_start_to_its_result() -> None:
    policy = ToolPolicy([weather, locate, Remote()], dynamic=lambda n: n != "weather")
    cards = ToolCards(TextBlocks("m1"), policy=policy)
    out: list[UIMessageChunk] = []
    event = call_event(("c1", "search", {"q": "x"}), ("c2", "locate", {}), ("c3", "weather", {}))
    for part in event.content.parts:  # type: ignore[union-attr]
        cards.call(part.function_call, event, out)  # type: ignore[arg-type]
    out += cards.progress(Progress("c1", "search", "searching"))
    wrapped = types.FunctionResponse(id="c1", name="search", response={"result": [1, 2]})
    cards.response(wrapped, {}, out)
    out += cards.release("c2", "locate", {})
    out += cards.tool_result("c2", {"result": "Paris"})
    failed = types.FunctionResponse(id="c3", name="weather", response={"error": "down"})
    cards.response(failed, {}, out)
    assert out == [
        ToolInputStart(tool_call_id="c1", tool_name="search", provider_executed=True, dynamic=True),
        ToolInputAvailable(
            tool_call_id="c1",
            tool_name="search",
            input={"q": "x"},
            provider_executed=True,
            dynamic=True,
        ),
        ToolInputStart(tool_call_id="c2", tool_name="locate", dynamic=True),
        ToolInputDelta(tool_call_id="c2", input_text_delta="{}"),
        ToolApprovalRequest(approval_id="approval-c2", tool_call_id="c2"),
        ToolInputStart(tool_call_id="c3", tool_name="weather", provider_executed=True),
        ToolInputAvailable(
            tool_call_id="c3", tool_name="weather", input={}, provider_executed=True
        ),
        ToolOutputAvailable(tool_call_id="c1", output="searching", preliminary=True, dynamic=True),
        ToolOutputAvailable(tool_call_id="c1", output=[1, 2], dynamic=True),
        ToolInputAvailable(tool_call_id="c2", tool_name="locate", input={}, dynamic=True),
        ToolOutputAvailable(tool_call_id="c2", output="Paris", dynamic=True),
        ToolOutputError(tool_call_id="c3", error_text="down"),
    ]


def test_a_tools_own_result_object_is_shown_as_it_is_in_the_stream() -> None:
    cards = ToolCards(TextBlocks("m1"), policy=ToolPolicy([weather]))
    out: list[UIMessageChunk] = []
    event = call_event(("c1", "weather", {}), ("c2", "weather", {}))
    for part in event.content.parts:  # type: ignore[union-attr]
        cards.call(part.function_call, event, out)  # type: ignore[arg-type]
    responses = [
        types.Part(function_response=types.FunctionResponse(id=i, name="weather", response=sun))
        for i, sun in (("c1", {"result": "sun"}), ("c2", {"result": "sun"}))
    ]
    answered = Event(
        author="a",
        content=types.Content(role="user", parts=responses),
        custom_metadata=bookkeeping.with_tags(None, as_returned=["c2"]),
    )
    for part in responses:
        cards.response(part.function_response, {}, out, answered)  # type: ignore[arg-type]
    assert out[-2:] == [
        ToolOutputAvailable(tool_call_id="c1", output="sun"),
        ToolOutputAvailable(tool_call_id="c2", output={"result": "sun"}),
    ]


def clock() -> str:
    """The time: a tool an agent lists itself."""
    return "noon"


class ConfirmingToolset(BaseToolset):
    """As ``McpToolset(require_confirmation=...)`` keeps it: on the toolset, for every tool
    it lists at run time."""

    def __init__(self, require_confirmation: Any) -> None:
        super().__init__()
        self._require_confirmation = require_confirmation

    async def get_tools(self, readonly_context: Any = None) -> list[BaseTool]:
        return [FunctionTool(weather)]


def test_a_toolset_that_asks_for_confirmation_makes_its_tools_ask() -> None:
    """ToolPolicy read ``name`` of every item with ``_require_confirmation``, and a toolset has
    none: an app with ``McpToolset(require_confirmation=True)`` failed with AttributeError."""
    asking = ToolPolicy([ConfirmingToolset(True), FunctionTool(clock)])
    assert (asking.may_ask("weather"), asking.runs_unasked("weather")) == (True, False)
    assert (asking.may_ask("clock"), asking.runs_unasked("clock")) == (False, True)
    assert asking.approves_by_rule("weather") is False
    by_rule = ToolPolicy([ConfirmingToolset(lambda city: city == "Oslo")])
    assert (by_rule.may_ask("weather"), by_rule.approves_by_rule("weather")) == (True, True)
    quiet = ToolPolicy([ConfirmingToolset(False)])
    assert (quiet.may_ask("weather"), quiet.runs_unasked("weather")) == (False, True)
