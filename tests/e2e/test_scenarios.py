"""Every scenario of DESIGN.md §5, driven by the real AI SDK clients with the stock
``sendAutomaticallyWhen`` helpers against the demo app under a real uvicorn — over SSE
(``DefaultChatTransport``, ai@6 and ai@7) and over the live WebSocket (the stock ai@7
``WebSocketChatTransport``, and the served ``transport.js`` under ai@6 and ai@7).

Each test asserts the final messages, the number of requests, where the browser ran its tools,
and that every response passes the SDK's own parser and state machine."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from tests.e2e.node_client import drive_chat, validate_sse

pytestmark = pytest.mark.e2e

CLIENTS = [("sse", 6), ("sse", 7), ("ws", 7), ("ws-js", 6), ("ws-js", 7)]
SDKS = pytest.mark.parametrize(("transport", "sdk"), CLIENTS, ids=[f"{t}-v{v}" for t, v in CLIENTS])
SSE_ONLY = pytest.mark.parametrize(("transport", "sdk"), CLIENTS[:2], ids=["sse-v6", "sse-v7"])
LOCATION = {"latitude": 48.85, "longitude": 2.35}
PAID_ALICE = '{"amount": 5, "currency": "USD", "recipient": "alice", "status": "sent"}'
PAID_BOB = '{"amount": 7, "currency": "USD", "recipient": "bob", "status": "sent"}'
PARIS = '{"city": "Paris", "forecast": "windy", "temperature_c": 19}'


def run(server: str, client: tuple[str, int], *steps: Any, **spec: Any) -> dict[str, Any]:
    """Drive one chat of a fresh browser (its own identity cookie)."""
    transport, sdk = client
    cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    spec = {
        "transport": transport,
        "api": f"{server}/agent/chat",
        "wsUrl": f"{server.replace('http', 'ws', 1)}/agent/live",
        "transportJsUrl": f"{server}/agent/transport.js",
        "chatId": spec.pop("chatId", f"chat-{secrets.token_hex(4)}"),
        "headers": {"cookie": cookie},
        "steps": [step if isinstance(step, dict) else {"send": step} for step in steps],
        **spec,
    }
    report = drive_chat(spec, sdk)
    assert not report.get("timeout") and not report["loop"], report
    # every response through the SDK's own parser and state machine, a continuation on top of
    # the assistant message it continues
    bodies = response_bodies(report) if transport == "sse" else live_bodies(report)
    continued = []
    for request in report["requests"]:
        last = request["messages"][-1]
        continued.append(last if last["role"] == "assistant" else None)
    for result in validate_sse(bodies, sdk, messages=continued):
        assert result["ok"], result
    return report


def response_bodies(report: dict[str, Any]) -> list[str]:
    assert all(r["status"] == 200 for r in report["responses"]), report["responses"]
    return [r["sse"] for r in report["responses"]]


def live_bodies(report: dict[str, Any]) -> list[str]:
    """The chunks of each live request, in SSE form, checked for sequence and framing."""
    chunks: dict[str, list[str]] = {r["requestId"]: [] for r in report["requests"]}
    ended: set[str] = set()
    for entry in report["frames"]:
        frame = entry["frame"]
        if entry["dir"] != "in" or frame.get("requestId") not in chunks:
            continue
        request_id = frame["requestId"]
        if frame["type"] == "chunk":
            assert frame["sequence"] == len(chunks[request_id]), frame
            chunks[request_id].append(f"data: {json.dumps(frame['chunk'])}\n\n")
        elif frame["type"] == "end":
            ended.add(request_id)
    assert ended == set(chunks), "every live request ends with an end frame"
    return ["".join(c) + "data: [DONE]\n\n" for c in chunks.values()]


def shape(messages: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """Messages as (role, [part summaries]): ``text:<text>``, ``tool-<name>:<state>``…"""
    summary = []
    for message in messages:
        parts = []
        for part in message["parts"]:
            kind = part["type"]
            if kind == "text":
                parts.append(f"text:{part['text']}")
            elif kind.startswith("tool-"):
                parts.append(f"{kind}:{part['state']}")
            else:
                parts.append(kind)
        summary.append((message["role"], parts))
    return summary


def browser_runs(report: dict[str, Any], tool: str) -> list[int]:
    """The request index at which the browser's onToolCall ran ``tool``, per run."""
    return [c["atRequest"] for c in report["toolCalls"] if c["toolName"] == tool and c["handled"]]


@SDKS
def test_plain_text(demo_server: str, transport: str, sdk: int) -> None:
    report = run(demo_server, (transport, sdk), "hello")
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 1)
    [(role, parts)] = shape(report["messages"])[1:]
    assert role == "assistant" and parts[0] == "step-start"
    assert parts[1].startswith('text:You said: "hello".')


@SDKS
def test_weather(demo_server: str, transport: str, sdk: int) -> None:
    report = run(demo_server, (transport, sdk), "What's the weather in Paris?")
    assert (report["status"], len(report["requests"])) == ("ready", 1)
    assert shape(report["messages"]) == [
        ("user", ["text:What's the weather in Paris?"]),
        (
            "assistant",
            [
                "step-start",
                "tool-get_weather:output-available",
                "step-start",
                f"text:Here you go: get_weather: {PARIS}.",
            ],
        ),
    ]
    # the server's message id is the client's: history and continuations name the same message
    assert report["messages"][1]["id"].startswith("msg_")


@SDKS
def test_model_error(demo_server: str, transport: str, sdk: int) -> None:
    report = run(demo_server, (transport, sdk), "explode")
    assert report["status"] == "error"
    assert (
        report["error"] == "ScriptedModelError: explode: the scripted demo model failed on purpose"
    )
    assert len(report["requests"]) == 1


@SDKS
@pytest.mark.parametrize("approved", [True, False])
def test_payment(demo_server: str, transport: str, sdk: int, approved: bool) -> None:
    report = run(
        demo_server, (transport, sdk), "pay 5 to alice", approvals={"process_payment": [approved]}
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    closing = f"process_payment: {PAID_ALICE}" if approved else "process_payment was denied"
    state = "output-available" if approved else "output-denied"
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                f"tool-process_payment:{state}",
                "step-start",
                f"text:Here you go: {closing}.",
            ],
        )
    ]


@SDKS
def test_payment_abandoned(demo_server: str, transport: str, sdk: int) -> None:
    report = run(demo_server, (transport, sdk), "pay 5 to alice")
    assert (report["status"], len(report["requests"])) == ("ready", 1)
    assert shape(report["messages"])[1:] == [
        ("assistant", ["step-start", "tool-process_payment:approval-requested"])
    ]


@SDKS
def test_bgm(demo_server: str, transport: str, sdk: int) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "play track 2",
        clientTools={"change_bgm": {"output": {"playing": 2}}},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    assert browser_runs(report, "change_bgm") == [0]
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                "tool-change_bgm:output-available",
                "step-start",
                'text:Here you go: change_bgm: {"playing": 2}.',
            ],
        )
    ]


LOCATION_DONE = [
    "step-start",
    "tool-get_location:output-available",
    "step-start",
    'text:Here you go: get_location: {"latitude": 48.85, "longitude": 2.35}.',
]


@SDKS
def test_location_approved_result_in_a_later_request(
    demo_server: str, transport: str, sdk: int
) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "where am i",
        approvals={"get_location": [True]},
        clientTools={"get_location": {"output": LOCATION}},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 3)
    # the browser ran the tool exactly once, in the response to the approval
    assert browser_runs(report, "get_location") == [1]
    assert shape(report["messages"])[1:] == [("assistant", LOCATION_DONE)]


@SDKS
def test_location_approved_result_in_the_same_request(
    demo_server: str, transport: str, sdk: int
) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "where am i",
        {"approve": {"tool": "get_location", "approved": True}},
        {"addToolOutput": {"tool": "get_location", "output": LOCATION}},
        sendAutomaticallyWhen="toolCalls",
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    sent = report["requests"][1]["messages"][-1]["parts"][1]
    assert sent["state"] == "output-available" and sent["approval"]["approved"] is True
    assert browser_runs(report, "get_location") == []  # the app ran it itself, once
    assert shape(report["messages"])[1:] == [("assistant", LOCATION_DONE)]


@SDKS
def test_location_denied(demo_server: str, transport: str, sdk: int) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "where am i",
        approvals={"get_location": [False]},
        clientTools={"get_location": {"output": LOCATION}},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    assert browser_runs(report, "get_location") == []
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                "tool-get_location:output-denied",
                "step-start",
                "text:Here you go: get_location was denied.",
            ],
        )
    ]


@SDKS
@pytest.mark.parametrize("decisions", [(True, True), (True, False), (False, True), (False, False)])
def test_two_payments_in_one_turn(
    demo_server: str, transport: str, sdk: int, decisions: tuple[bool, bool]
) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice and pay 7 to bob",
        approvals={"process_payment": list(decisions)},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    states = ["output-available" if ok else "output-denied" for ok in decisions]
    results = [
        f"process_payment: {paid}" if ok else "process_payment was denied"
        for ok, paid in zip(decisions, (PAID_ALICE, PAID_BOB), strict=True)
    ]
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                f"tool-process_payment:{states[0]}",
                f"tool-process_payment:{states[1]}",
                "step-start",
                f"text:Here you go: {'; '.join(results)}.",
            ],
        )
    ]


@SDKS
def test_payment_then_payment_after_intermediate_text(
    demo_server: str, transport: str, sdk: int
) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice then pay 7 to bob",
        approvals={"process_payment": [True, True]},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 3)
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                "tool-process_payment:output-available",
                "step-start",
                "text:Done. Next, process_payment.",
                "tool-process_payment:output-available",
                "step-start",
                f"text:Here you go: process_payment: {PAID_ALICE}; process_payment: {PAID_BOB}.",
            ],
        )
    ]


@SDKS
def test_server_and_client_tool_in_one_step(demo_server: str, transport: str, sdk: int) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "weather in Paris and play track 1",
        clientTools={"change_bgm": {"output": {"playing": 1}}},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                "tool-get_weather:output-available",
                "tool-change_bgm:output-available",
                "step-start",
                f'text:Here you go: get_weather: {PARIS}; change_bgm: {{"playing": 1}}.',
            ],
        )
    ]


@SSE_ONLY
def test_reload_mid_approval_then_approve(demo_server: str, transport: str, sdk: int) -> None:
    chat_id = f"chat-{secrets.token_hex(4)}"
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice",
        {"reload": f"{demo_server}/agent/chat/{chat_id}/messages"},
        {"approve": {"tool": "process_payment", "approved": True}},
        chatId=chat_id,
        sendAutomaticallyWhen="or",
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    assert shape(report["messages"]) == [
        ("user", ["text:pay 5 to alice"]),
        (
            "assistant",
            [
                "step-start",
                "tool-process_payment:output-available",
                "step-start",
                f"text:Here you go: process_payment: {PAID_ALICE}.",
            ],
        ),
    ]


@SDKS
def test_payment_and_location_in_one_step(demo_server: str, transport: str, sdk: int) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice and where am i",
        approvals={"process_payment": [True], "get_location": [True]},
        clientTools={"get_location": {"output": LOCATION}},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 3)
    assert browser_runs(report, "get_location") == [1]
    location = '{"latitude": 48.85, "longitude": 2.35}'
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                "tool-process_payment:output-available",
                "tool-get_location:output-available",
                "step-start",
                f"text:Here you go: process_payment: {PAID_ALICE}; get_location: {location}.",
            ],
        )
    ]
