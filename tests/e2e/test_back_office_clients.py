"""A browser tool and a back-office tool in one step, with the real ai@6 and ai@7 clients over
SSE and live, as the AI SDK's docs write the page (``sendAutomaticallyWhen:
lastAssistantMessageIsCompleteWithToolCalls``, the browser tool answered in ``onToolCall``)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.asgi.test_server_answers import APPROVED, REFUND
from tests.e2e.back_office_app import PLAYING
from tests.e2e.node_client import drive_chat
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

CLIENTS = [("sse", 6), ("sse", 7), ("ws", 7), ("ws-js", 6)]


@pytest.fixture(scope="module")
def back_office_server() -> Iterator[str]:
    with uvicorn_server("tests.e2e.back_office_app:app", ready_path="/agent/chats") as base:
        yield base


@pytest.mark.parametrize("client", CLIENTS, ids=[f"{t}-v{s}" for t, s in CLIENTS])
def test_a_browser_result_next_to_a_back_office_call_is_sent_once(
    back_office_server: str, client: tuple[str, int]
) -> None:
    """The browser's result is sent once, and the page waits for the back office without an
    error: over SSE the model reads both results together, so the response that takes the
    browser's ends with an empty step (before: the helper saw the step complete again and sent
    it a second time, refused with 409 and shown as the chat's error); Gemini Live reads the
    browser's result at once and answers in a step of its own. Then the back office answers."""
    transport, sdk = client
    base = f"{back_office_server}/agent"
    user, chat_id = secrets.token_hex(6), f"chat-{secrets.token_hex(4)}"
    cookie = {"cookie": f"user={user}"}
    report = drive_chat(
        {
            "transport": transport,
            "api": f"{base}/chat",
            "wsUrl": f"{base.replace('http', 'ws', 1)}/live",
            "transportJsUrl": f"{base}/transport.js",
            "chatId": chat_id,
            "headers": cookie,
            "clientTools": {"change_bgm": {"output": {"playing": 3}}},
            "steps": [{"send": "refund order A7 and play track 3"}],
        },
        sdk,
    )
    assert (report["status"], report["error"], report["loop"]) == ("ready", None, False), report
    assert len(report["requests"]) == 2
    page = report["messages"][1]
    bgm, refund = (part.get("toolCallId") for part in page["parts"][1:3])
    waiting = [
        {"type": "step-start"},
        {
            "type": "tool-change_bgm",
            "toolCallId": bgm,
            "state": "output-available",
            "input": {"track": 3},
            "output": {"playing": 3},
        },
        {
            "type": "tool-request_refund",
            "toolCallId": refund,
            "state": "input-available",
            "input": REFUND,
            "providerExecuted": True,
        },
        {"type": "step-start"},
    ]
    if transport == "sse":
        assert page["parts"] == waiting
    else:
        assert page["parts"] == [*waiting, {"type": "text", "text": PLAYING, "state": "done"}]
    assert history(base, chat_id, cookie) == report["messages"]

    result = {"user": user, "chat": chat_id, "call": refund, "result": APPROVED}
    answered = httpx.post(f"{back_office_server}/office", json=result)
    assert answered.json() == {"messageId": page["id"]}
    refunded = {**waiting[2], "state": "output-available", "output": APPROVED}
    done = {"type": "text", "text": "Both done.", "state": "done"}
    later = history(base, chat_id, cookie)[1]["parts"]
    if transport == "sse":
        assert later == [
            *waiting[:2],
            refunded,
            {"type": "step-start"},
            {"type": "step-start"},
            done,
        ]
    else:
        said = {"type": "text", "text": PLAYING, "state": "done"}
        assert later == [
            *waiting[:2],
            refunded,
            {"type": "step-start"},
            said,
            {"type": "step-start"},
            done,
        ]


def history(base: str, chat_id: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = httpx.get(f"{base}/chat/{chat_id}/messages", headers=headers)
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()
    return messages
