"""A tool call's input as the real AI SDK clients show it (ai@5, ai@6 and ai@7, under a real
uvicorn, tests/e2e/tool_input_app.py): a call whose arguments the model streams goes through
``input-streaming`` with its input parsed as it grows (SSE), and calls ADK refuses are
``output-error`` parts with the input the model wrote (ai@5 and ai@6 keep it as ``rawInput``,
ai@7 as ``input``: history shows what the app's configured client built), over SSE and live, in
the client's message and in history alike."""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.node_client import drive_chat, validate_sse
from tests.e2e.test_agent_shapes import normalized
from tests.e2e.test_scenarios import live_bodies
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

CLIENTS = [("sse", 6), ("sse", 7), ("sse", 5), ("ws", 7), ("ws-js", 6), ("ws-js", 7), ("ws-js", 5)]
ALL = pytest.mark.parametrize("client", CLIENTS, ids=[f"{t}-v{v}" for t, v in CLIENTS])
SSE = pytest.mark.parametrize("client", CLIENTS[:3], ids=["sse-v6", "sse-v7", "sse-v5"])

NO_TOOL = (
    "Invoking `get_forcast()` failed as no tool with that name is available. The tools you can"
    " call are: get_forecast. You could retry, but it is IMPORTANT that you only call a tool"
    " from that list."
)
NO_DAYS = (
    "Invoking `get_forecast()` failed as the following mandatory input parameters are not"
    " present:\ndays\nYou could retry calling this tool, but it is IMPORTANT for you to provide"
    " all the mandatory parameters."
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with uvicorn_server("tests.e2e.tool_input_app:app", ready_path="/v6/transport.js") as base:
        yield base


def chat(server: str, client: tuple[str, int], text: str) -> dict[str, Any]:
    """One message from a fresh browser, answered to the end by the stock helpers. The report
    gains ``checked`` (each response through the SDK's own parser and state machine) and
    ``history`` (``GET /chat/{id}/messages``)."""
    transport, sdk = client
    server = f"{server}/v{sdk}"
    cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    chat_id = f"chat-{secrets.token_hex(4)}"
    report = drive_chat(
        {
            "transport": transport,
            "api": f"{server}/chat",
            "wsUrl": f"{server.replace('http', 'ws', 1)}/live",
            "transportJsUrl": f"{server}/transport.js",
            "chatId": chat_id,
            "headers": {"cookie": cookie},
            "steps": [{"send": text}],
            "idleMs": 100,
        },
        sdk,
    )
    assert not report["timeout"] and not report["loop"], report
    if transport == "sse":
        bodies = [r["sse"] for r in report["responses"] if r["status"] == 200]
    else:
        bodies = live_bodies(report)
    report["checked"] = validate_sse(bodies, sdk)
    assert all(result["ok"] for result in report["checked"]), report["checked"]
    history = httpx.get(f"{server}/chat/{chat_id}/messages", headers={"cookie": cookie})
    report["history"] = history.json()
    return report


@SSE
def test_streamed_arguments_show_input_streaming_then_the_call(
    server: str, client: tuple[str, int]
) -> None:
    report = chat(server, client, "weather")
    call_id = report["messages"][1]["parts"][2]["toolCallId"]

    def seen(state: str, value: Any) -> list[dict[str, Any]]:
        part = {"toolCallId": call_id, "state": state}
        return [part if value is None else {**part, "input": value}]

    assert report["checked"][0]["toolStates"] == [
        seen("input-streaming", None),
        seen("input-streaming", {"city": "Pa"}),
        seen("input-streaming", {"city": "Paris"}),
        seen("input-streaming", {"city": "Paris", "days": 2}),
        seen("input-available", {"city": "Paris", "days": 2}),
        seen("output-available", {"city": "Paris", "days": 2}),
    ]
    assert normalized(report["messages"]) == [
        {"id": "<msg1>", "role": "user", "parts": [{"type": "text", "text": "weather"}]},
        {
            "id": "<msg2>",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Let me see.", "state": "done"},
                {
                    "type": "tool-get_forecast",
                    "toolCallId": "<call1>",
                    "state": "output-available",
                    "input": {"city": "Paris", "days": 2},
                    "output": {"city": "Paris", "forecast": ["sunny", "sunny"]},
                    "providerExecuted": True,
                },
                {"type": "step-start"},
                {"type": "text", "text": "Done.", "state": "done"},
            ],
        },
    ]
    assert report["history"] == report["messages"]
    assert len(report["requests"]) == 1


@ALL
def test_calls_adk_refuses_are_output_errors_with_the_raw_input(
    server: str, client: tuple[str, int]
) -> None:
    report = chat(server, client, "clumsy")
    kinds = Counter(chunk["type"] for chunk in report["checked"][0]["chunks"])
    assert (kinds["tool-input-error"], kinds["tool-output-error"]) == (2, 0)
    answer = normalized(report["messages"])[1]
    shown = "input" if client[1] == 7 else "rawInput"  # (ai@5 and ai@6 keep it as rawInput)
    assert answer["parts"][1:3] == [
        {
            "type": "tool-get_forcast",
            "toolCallId": "<call1>",
            "state": "output-error",
            shown: {"city": "Paris"},
            "errorText": NO_TOOL,
            "providerExecuted": True,
        },
        {
            "type": "tool-get_forecast",
            "toolCallId": "<call2>",
            "state": "output-error",
            shown: {"city": "Paris"},
            "errorText": NO_DAYS,
            "providerExecuted": True,
        },
    ]
    assert answer["parts"][3:] == [
        {"type": "step-start"},
        {"type": "text", "text": "Done.", "state": "done"},
    ]
    assert report["history"] == report["messages"]
    assert len(report["requests"]) == 1
