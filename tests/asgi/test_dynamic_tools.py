"""Dynamic tools and tool outputs as the tools returned them, whole messages, both modes.

A toolset's tools (``Catalog``, as an MCP server's) are sent as ``dynamic-tool`` parts by
default, a browser tool named in ``dynamic_tools`` too; the page approves the dynamic tool
(``addToolApprovalResponse``) and answers the dynamic browser tool (``addToolOutput``) as the
stock client does. A tool's list is shown as the list (ADK stores ``{"result": [...]}``), and
the browser's object of that very shape as the page sent it. The stream's message and history
are the same (tests/asgi/test_one_derivation.py plays these scenarios too); here they are also
asserted whole.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.asgi.test_one_derivation import (
    SCENARIOS,
    Scenario,
    as_json,
    client,
    history_of,
    play,
    scenario_app,
    sse_chat,
)
from tests.e2e.shapes_app import SHOP_DONE, SHOP_FOUND, SHOP_ORDER, SHOP_SEARCH

pytestmark = pytest.mark.asyncio


def ids_named(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with their generated ids named by order of appearance (``<id1>``…)."""
    names: dict[str, str] = {}

    def name(found: re.Match[str]) -> str:
        return names.setdefault(found.group(1), f"<id{len(names) + 1}>")

    text = re.sub(r"((?:call_|adk-|msg_)[0-9a-f-]{8,})", name, json.dumps(messages))
    result: list[dict[str, Any]] = json.loads(text)
    return result


def shown(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message's role and parts, ids named (its metadata is test_one_derivation's)."""
    return [{"role": m["role"], "parts": m["parts"]} for m in ids_named(messages)]


def shop_answer(dynamic_locate: bool, approval_id: str) -> dict[str, Any]:
    dynamic = {"type": "dynamic-tool", "toolName": "locate"}
    locate: dict[str, Any] = dynamic if dynamic_locate else {"type": "tool-locate"}
    return {
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "dynamic-tool",
                "toolName": "search_catalog",
                "toolCallId": "<id2>",
                "state": "output-available",
                "providerExecuted": True,
                "input": SHOP_SEARCH,
                "output": SHOP_FOUND,
            },
            {"type": "step-start"},
            {
                "type": "dynamic-tool",
                "toolName": "order_item",
                "toolCallId": "<id3>",
                "state": "output-available",
                "providerExecuted": True,
                "input": SHOP_ORDER,
                "approval": {"id": approval_id, "approved": True},
                "output": {"ordered": "lamp one"},
            },
            {"type": "step-start"},
            {
                **locate,
                "toolCallId": "<id5>" if approval_id == "<id4>" else "<id4>",
                "state": "output-available",
                "input": {},
                "output": {"result": "Paris"},
            },
            {"type": "step-start"},
            {"type": "text", "text": SHOP_DONE, "state": "done"},
        ],
    }


USER = {"role": "user", "parts": [{"type": "text", "text": "shop"}]}
CASES = {
    "a toolset's tools, dynamic, order True": False,
    "a dynamic browser tool": True,
}


@pytest.mark.parametrize(("key", "dynamic_locate"), CASES.items(), ids=CASES.keys())
async def test_sse_dynamic_tools_approved_and_answered(key: str, dynamic_locate: bool) -> None:
    scenario: Scenario = SCENARIOS[key]
    async with sse_chat(scenario) as sse:
        await play(sse, scenario)
        history = await sse.history()
    assert history == as_json(sse.messages)
    assert shown(history) == [USER, shop_answer(dynamic_locate, "<id4>")]


@pytest.mark.parametrize(("key", "dynamic_locate"), CASES.items(), ids=CASES.keys())
async def test_live_dynamic_tools_approved_and_answered(key: str, dynamic_locate: bool) -> None:
    scenario: Scenario = SCENARIOS[key]
    app = scenario_app(scenario)
    try:
        async with client(app, "live") as chat:
            await play(chat, scenario)
        history = await history_of(app)
    finally:
        await app.aclose()
    assert history == as_json(chat.messages)
    assert shown(history) == [USER, shop_answer(dynamic_locate, "approval-<id3>")]


async def test_a_list_is_shown_as_the_list_and_a_tools_own_result_object_as_it_is() -> None:
    """Over SSE and live; history shows the same (the scenario of test_one_derivation)."""
    scenario = SCENARIOS["tools returning a list and their own result object"]
    async with sse_chat(scenario) as sse:
        await play(sse, scenario)
    app = scenario_app(scenario)
    try:
        async with client(app, "live") as live:
            await play(live, scenario)
    finally:
        await app.aclose()
    for messages in (sse.messages, live.messages):
        tools = [p for p in messages[1]["parts"] if p["type"].startswith("tool-")]
        assert [(p["type"], p["output"]) for p in tools] == [
            ("tool-listing", [1, 2]),
            ("tool-own_result", {"result": [1, 2]}),
        ]
