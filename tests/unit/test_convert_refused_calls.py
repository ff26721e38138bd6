"""Calls ADK refused (no such tool, arguments the tool refuses): ``tool-input-error``, exact."""

from __future__ import annotations

import warnings
from typing import Any

from google.adk.features import FeatureName
from google.adk.features._feature_registry import temporary_feature_override
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool

from adk_asgi.convert.events import EventConverter
from adk_asgi.hitl import bookkeeping
from adk_asgi.serving.invalid_calls import refuses_arguments
from tests.unit.test_convert import MID, STOP, call, model_event, response_event, run, wire

REFUSED = {"error": "Invoking `get_wether()` failed as no tool with that name is available."}


def test_a_refused_call_is_a_tool_input_error_with_its_input() -> None:
    """The response event's bookkeeping names the calls ADK refused
    (:mod:`adk_asgi.serving.invalid_calls`); a result of another call stays a result."""
    tags = bookkeeping.with_tags(None, invalid_calls=["c1"])
    events = [
        model_event(
            "e1", call("c1", "get_wether", city="Paris"), call("c2", "f"), finish_reason=STOP
        ),
        response_event(
            "e2",
            ("c1", "get_wether", REFUSED),
            ("c2", "f", {"error": "f failed"}),
            custom_metadata=tags,
        ),
    ]
    assert run(events)[6:8] == [
        {
            "type": "tool-input-error",
            "toolCallId": "c1",
            "toolName": "get_wether",
            "input": {"city": "Paris"},
            "errorText": REFUSED["error"],
        },
        {"type": "tool-output-error", "toolCallId": "c2", "errorText": "f failed"},
    ]


def test_an_untagged_error_answer_stays_a_tool_output_error() -> None:
    """Without the bookkeeping (a chat stored before, another app's events), ADK's words are
    not guessed at: the call is shown as a tool that failed, as before."""
    events = [
        model_event("e1", call("c1", "get_wether", city="Paris"), finish_reason=STOP),
        response_event("e2", ("c1", "get_wether", REFUSED)),
    ]
    assert run(events)[4] == {
        "type": "tool-output-error",
        "toolCallId": "c1",
        "errorText": REFUSED["error"],
    }


def test_live_a_result_from_the_tool_pipeline_can_be_a_refusal() -> None:
    converter = EventConverter(message_id=MID, live=True)
    converter.start()
    converter.feed(model_event("e1", call("c1", "get_weather", town="Paris")))
    refusal = {"error": "Invoking `get_weather()` failed: city is missing"}
    assert wire(converter.cards.tool_result("c1", refusal, invalid=True)) == [
        {
            "type": "tool-input-error",
            "toolCallId": "c1",
            "toolName": "get_weather",
            "input": {"town": "Paris"},
            "errorText": refusal["error"],
        }
    ]


def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Weather for a city."""
    return {"city": city, "days": days}


def test_adks_own_argument_checks_decide_which_calls_are_refused() -> None:
    tool = FunctionTool(get_weather)
    assert refuses_arguments(tool, {"town": "Paris"})  # a mandatory argument missing
    assert not refuses_arguments(tool, {"city": "Paris"})
    assert not refuses_arguments(tool, {"city": "Paris", "extra": 1})  # (ADK drops extras)
    assert not refuses_arguments(BaseTool(name="x", description="not a FunctionTool"), {})


def test_with_adks_type_checks_on_a_wrong_type_is_refused_too() -> None:
    """``FUNCTION_TOOL_ARG_VALIDATION`` (experimental in ADK 2.13): ADK refuses arguments of
    the wrong type as well, and so the check follows it."""
    tool = FunctionTool(get_weather)
    assert not refuses_arguments(tool, {"city": "Paris", "days": "many"})
    with (
        warnings.catch_warnings(),  # (ADK warns once per process that it is experimental)
        temporary_feature_override(FeatureName.FUNCTION_TOOL_ARG_VALIDATION, True),
    ):
        warnings.filterwarnings("ignore", ".*FUNCTION_TOOL_ARG_VALIDATION is enabled")
        assert refuses_arguments(tool, {"city": "Paris", "days": "many"})
        assert not refuses_arguments(tool, {"city": "Paris", "days": 2})
