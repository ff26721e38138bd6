"""``adk_asgi.convert.tool_looks``: the one place that decides how a tool part looks, for the stream
(``ToolCards``) and for history alike, on plain values."""

from __future__ import annotations

from typing import Any

from google.adk.tools import FunctionTool

from adk_asgi import client_tool
from adk_asgi.convert.text_blocks import TextBlocks
from adk_asgi.convert.tool_cards import ToolCards
from adk_asgi.convert.tool_looks import provider_executed, raw_input, result_chunk, shown_answer
from adk_asgi.hitl.interrupts import REQUEST_CREDENTIAL, REQUEST_INPUT
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import ToolOutputAvailable, ToolOutputError


def get_weather(city: str) -> dict[str, Any]:
    """A server tool."""
    return {"city": city}


def pay(amount: int) -> dict[str, Any]:
    """A server tool that asks for approval."""
    return {"paid": amount}


def change_bgm(track: int) -> None:
    """A browser tool."""


def get_location() -> None:
    """A browser tool that asks for approval."""


POLICY = ToolPolicy(
    [
        FunctionTool(get_weather),
        FunctionTool(pay, require_confirmation=True),
        client_tool(change_bgm),
        client_tool(require_approval=True)(get_location),
    ]
)
ANSWERED = {
    "authScheme": {"type": "apiKey", "in": "header", "name": "x-api-key"},
    "credentialKey": "k",
    "exchangedAuthCredential": {"authType": "apiKey", "apiKey": "secret-key"},
}
"""ADK's ``AuthConfig`` as the bridge gave it to ADK: with the user's key."""


def test_only_a_call_the_server_runs_unasked_is_the_providers() -> None:
    assert provider_executed(POLICY, "get_weather") is True
    for asks in ("pay", "change_bgm", "get_location", REQUEST_INPUT, REQUEST_CREDENTIAL):
        assert provider_executed(POLICY, asks) is None
    assert provider_executed(POLICY, "get_weather", node=True) is None  # a node asking to run
    assert provider_executed(None, "get_weather") is None


def test_the_pages_answers_are_shown_as_sent_and_a_tools_result_as_the_tool_returned_it() -> None:
    assert shown_answer(POLICY, "change_bgm", {}, {"result": 3}) == 3
    assert shown_answer(POLICY, "change_bgm", {}, {"result": {"result": 3}}) == {"result": 3}
    assert shown_answer(POLICY, REQUEST_INPUT, {}, {"result": "Paris"}) == "Paris"
    assert shown_answer(POLICY, "get_weather", {}, {"result": "windy"}) == "windy"  # ADK wrapped
    assert shown_answer(POLICY, "get_weather", {}, {"result": [1, 2]}) == [1, 2]
    assert shown_answer(POLICY, "get_weather", {}, {"result": None}) is None
    assert shown_answer(POLICY, "get_weather", {}, {"result": {"a": 1}}) == {"result": {"a": 1}}
    assert shown_answer(POLICY, "get_weather", {}, {"result": 1, "b": 2}) == {"result": 1, "b": 2}
    kept = shown_answer(POLICY, "get_weather", {}, {"result": "windy"}, kept=True)
    assert kept == {"result": "windy"}  # the tool returned that object itself
    transfer = shown_answer(POLICY, "transfer_to_agent", {"agent_name": "b"}, {"result": None})
    assert transfer == {"transferredTo": "b"}
    assert result_chunk(POLICY, "c1", "get_weather", {}, {"error": "no"}) == ToolOutputError(
        tool_call_id="c1", error_text="no"
    )
    assert result_chunk(POLICY, "c1", "get_weather", {}, {"ok": 1}) == ToolOutputAvailable(
        tool_call_id="c1", output={"ok": 1}
    )


def test_the_stream_shows_a_credential_answer_without_its_secrets_as_history_does() -> None:
    cards = ToolCards(TextBlocks("m1"), known_calls={"cred"}, policy=POLICY)
    [chunk] = cards.tool_result("cred", ANSWERED, REQUEST_CREDENTIAL)
    assert chunk == ToolOutputAvailable(
        tool_call_id="cred",
        output={
            "authScheme": {"type": "apiKey", "in": "header", "name": "x-api-key"},
            "credentialKey": "k",
            "exchangedAuthCredential": {"authType": "apiKey"},
        },
    )


def test_a_browser_call_waiting_for_approval_is_sent_as_raw_json() -> None:
    assert raw_input({"latitude": 1}) == '{"latitude":1}'
