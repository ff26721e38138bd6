"""The AI SDK as app developers write it, with the real ai@6 and ai@7 clients against a real
uvicorn: ``DefaultChatTransport({prepareSendMessagesRequest})`` sending only the last message
(the persistence guide's snippet, and the one that keeps the trigger, the message id and the
``body`` extras), for a text chat, an approval, a browser tool's result and a regenerate; and
``body`` extras an app's ``request_state`` hook writes into the state the agent reads.

Every request body and every response's whole chunk sequence is asserted (server-made ids as
placeholders), every response goes through the SDK's own parser, and history (what a reload
shows) is what the client shows."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.node_client import drive_chat, validate_sse
from tests.servers import uvicorn_server
from tests.support import normalize_ids, parse_sse

pytestmark = pytest.mark.e2e

SDKS = pytest.mark.parametrize("sdk", [6, 7], ids=["v6", "v7"])
GUIDE = "guide"
TRIGGER = "trigger"
BY_ID = "regenerate-by-id"
DEMO_CHUNK = 8
"""The demo model streams its text 8 characters a delta."""


def run(server: str, sdk: int, *steps: Any, **spec: Any) -> dict[str, Any]:
    """Drive one chat of a fresh browser over SSE; the report gains ``chatId``, ``cookie``,
    ``chunks`` (each 200 response's chunks, ids normalized) and ``history``."""
    cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    chat_id = f"chat-{secrets.token_hex(4)}"
    spec = {
        "transport": "sse",
        "api": f"{server}/agent/chat",
        "chatId": chat_id,
        "headers": {"cookie": cookie},
        "steps": [step if isinstance(step, dict) else {"send": step} for step in steps],
        **spec,
    }
    report = drive_chat(spec, sdk)
    assert not report.get("timeout") and not report["loop"], report
    ok = [r for r in report["responses"] if r["status"] == 200]
    continued = [r.get("message") for r in report["requests"]]
    results = validate_sse(
        [r["sse"] for r in ok],
        sdk,
        messages=[
            m if m is not None and m["role"] == "assistant" else None
            for m, r in zip(continued, report["responses"], strict=True)
            if r["status"] == 200
        ],
    )
    assert all(result["ok"] for result in results), results
    report["chatId"] = chat_id
    report["chunks"] = [normalize_ids(parse_sse(r["sse"])) for r in ok]
    shown = httpx.get(f"{server}/agent/chat/{chat_id}/messages", headers={"cookie": cookie})
    assert shown.status_code == 200, shown.text
    report["history"] = shown.json()
    return report


def text_chunks(text: str, size: int = DEMO_CHUNK) -> list[dict[str, Any]]:
    """A text block as the server streams it, ``size`` characters a delta."""
    deltas = [text[i : i + size] for i in range(0, len(text), size)]
    return [
        {"type": "text-start", "id": "<block1>"},
        *({"type": "text-delta", "id": "<block1>", "delta": d} for d in deltas),
        {"type": "text-end", "id": "<block1>"},
    ]


def said(text: str) -> str:
    """The demo model's answer to a text it has no tool for."""
    return (
        f'You said: "{text}". I can try "weather in Paris", "pay 5 to alice", "play track 3" '
        'or "where am i" (join them with "and" or "then").'
    )


def answer(text: str, size: int = DEMO_CHUNK) -> list[dict[str, Any]]:
    return [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        *text_chunks(text, size),
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def sent(report: dict[str, Any], index: int, message: int | None = None, **keys: Any) -> None:
    """Request ``index``'s whole body: the chat id, ``keys``, and ``message`` (the client's
    message at that position) when given."""
    body = {"id": report["chatId"], **keys}
    if message is not None:
        body["message"] = report["messages"][message]
    assert report["requests"][index] == body


def shape(messages: list[dict[str, Any]]) -> list[tuple[str, str, list[Any]]]:
    """(id, role, parts) of each message, a text part as its text."""
    return [
        (m["id"], m["role"], [p["text"] if p["type"] == "text" else p["type"] for p in m["parts"]])
        for m in messages
    ]


@SDKS
@pytest.mark.parametrize("snippet", [GUIDE, TRIGGER])
def test_a_text_chat_sends_only_its_last_message(demo_server: str, sdk: int, snippet: str) -> None:
    report = run(demo_server, sdk, "hello", "how are you", prepareSendMessagesRequest=snippet)
    assert (report["status"], report["error"]) == ("ready", None)
    kind = {"trigger": "submit-message"} if snippet == TRIGGER else {}
    sent(report, 0, message=0, **kind)
    sent(report, 1, message=2, **kind)
    assert report["chunks"] == [answer(said("hello")), answer(said("how are you"))]
    assert shape(report["messages"]) == shape(report["history"])
    assert [m["role"] for m in report["history"]] == ["user", "assistant"] * 2


@SDKS
def test_an_approval_continues_from_the_last_message_alone(demo_server: str, sdk: int) -> None:
    report = run(
        demo_server,
        sdk,
        "pay 5 to alice",
        approvals={"process_payment": [True]},
        prepareSendMessagesRequest=GUIDE,
    )
    assert (report["status"], report["error"]) == ("ready", None)
    sent(report, 0, message=0)
    final = report["messages"][1]
    tool = final["parts"][1]
    answered = {  # the assistant message as it was when the user approved
        "id": final["id"],
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-process_payment",
                "toolCallId": tool["toolCallId"],
                "state": "approval-responded",
                "input": {"amount": 5, "recipient": "alice", "currency": "USD"},
                "approval": {"id": tool["approval"]["id"], "approved": True},
            },
        ],
    }
    assert report["requests"][1] == {"message": answered, "id": report["chatId"]}
    paid = {"amount": 5, "currency": "USD", "recipient": "alice", "status": "sent"}
    call = {"toolCallId": "<call1>", "toolName": "process_payment"}
    payment = {"amount": 5, "recipient": "alice", "currency": "USD"}
    assert report["chunks"] == [
        [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            {"type": "tool-input-start", **call},
            {"type": "tool-input-available", **call, "input": payment},
            {"type": "tool-approval-request", "approvalId": "<approval1>", "toolCallId": "<call1>"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "tool-calls"},
        ],
        [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "tool-output-available", "toolCallId": "<call1>", "output": paid},
            {"type": "start-step"},
            *text_chunks(
                'Here you go: process_payment: {"amount": 5, "currency": "USD", '
                '"recipient": "alice", "status": "sent"}.'
            ),
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ],
    ]
    assert report["chunks"][0][0] == report["chunks"][1][0]  # one message, continued
    assert shape(report["messages"]) == shape(report["history"])


@SDKS
def test_a_browser_tools_result_goes_in_the_last_message_alone(demo_server: str, sdk: int) -> None:
    report = run(
        demo_server,
        sdk,
        "play track 2",
        clientTools={"change_bgm": {"output": {"playing": 2}}},
        prepareSendMessagesRequest=GUIDE,
    )
    assert (report["status"], report["error"]) == ("ready", None)
    sent(report, 0, message=0)
    final = report["messages"][1]
    answered = {  # the assistant message as it was when the browser ran the tool
        "id": final["id"],
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-change_bgm",
                "toolCallId": final["parts"][1]["toolCallId"],
                "state": "output-available",
                "input": {"track": 2},
                "output": {"playing": 2},
            },
        ],
    }
    assert report["requests"][1] == {"message": answered, "id": report["chatId"]}
    call = {"toolCallId": "<call1>", "toolName": "change_bgm"}
    assert report["chunks"] == [
        [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            {"type": "tool-input-start", **call},
            {"type": "tool-input-available", **call, "input": {"track": 2}},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "tool-calls"},
        ],
        answer('Here you go: change_bgm: {"playing": 2}.'),
    ]
    assert shape(report["messages"]) == shape(report["history"])


@SDKS
@pytest.mark.parametrize("snippet", [GUIDE, TRIGGER, BY_ID])
def test_a_regenerate_answers_anew_from_the_session(
    demo_server: str, sdk: int, snippet: str
) -> None:
    report = run(
        demo_server, sdk, "hello", {"regenerate": True}, prepareSendMessagesRequest=snippet
    )
    assert (report["status"], report["error"]) == ("ready", None)
    if snippet == GUIDE:  # the user message before the dropped answer, as if new
        sent(report, 1, message=0)
    elif snippet == TRIGGER:
        sent(report, 1, message=0, trigger="regenerate-message")
    else:  # no message: the session holds it
        sent(report, 1, trigger="regenerate-message")
    assert report["chunks"] == [answer(said("hello"))] * 2
    # one answer, the new one: the first left the session (and the model's context)
    assert shape(report["history"]) == shape(report["messages"])
    assert [m["role"] for m in report["history"]] == ["user", "assistant"]


@pytest.fixture(scope="module")
def moody_server() -> Iterator[str]:
    """tests/e2e/request_state_app.py: extras → ``{mode}`` in the agent's instruction."""
    with uvicorn_server("tests.e2e.request_state_app:app", ready_path="/agent/chats") as base:
        yield base


@SDKS
@pytest.mark.parametrize("snippet", [None, TRIGGER], ids=["stock", "last-only"])
def test_body_extras_choose_the_mode_the_agent_reads(
    moody_server: str, sdk: int, snippet: str | None
) -> None:
    spec: dict[str, Any] = {"body": {"mode": "terse", "theme": "dark"}}
    if snippet is not None:
        spec["prepareSendMessagesRequest"] = snippet
    report = run(
        moody_server,
        sdk,
        "hello",
        {"send": {"text": "and now?", "body": {"mode": "chatty"}}},
        {"send": {"text": "shout", "body": {"mode": "loud"}}},
        **spec,
    )
    assert (report["status"], report["responses"][2]["status"]) == ("error", 422)
    reason = "Invalid enum value 'loud' - at `$.mode`"
    assert report["responses"][2]["body"] == '{"error":"' + reason.replace('"', '\\"') + '"}'
    extras = [{"mode": "terse", "theme": "dark"}, {"mode": "chatty", "theme": "dark"}]
    extras.append({"mode": "loud", "theme": "dark"})
    for index, keys in enumerate(extras):
        assert {k: report["requests"][index][k] for k in keys} == keys
    big = 1000  # the app's model streams its whole answer in one delta
    assert report["chunks"] == [
        answer("Answer in terse mode. You said: hello", big),
        answer("Answer in chatty mode. You said: and now?", big),
    ]
    assert [m["role"] for m in report["history"]] == ["user", "assistant"] * 2
