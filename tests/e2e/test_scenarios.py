"""Every scenario of docs/internals/architecture.md#scenarios, driven by the real AI SDK clients
with the stock ``sendAutomaticallyWhen`` helpers against the demo app under a real uvicorn — over
SSE (``DefaultChatTransport``, ai@6 and ai@7) and over the live WebSocket (the stock ai@7
``WebSocketChatTransport``, and the served ``transport.js`` under ai@6 and ai@7).

Each test asserts the final messages, the number of requests, where the browser ran its tools,
how many times each server tool really ran (``serverRuns``, counted by the test app
``tests/e2e/demo_under_test.py``), and that every response passes the SDK's own parser and
state machine."""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx
import pytest

from tests.e2e.node_client import drive_chat, validate_sse

pytestmark = pytest.mark.e2e

SCRIPTED = [("sse", 6), ("sse", 7), ("ws", 7), ("ws-js", 6), ("ws-js", 7)]
ON_GEMINI = [("sse", 7), ("ws", 7)]
"""The clients that also drive the demo on ADK's ``Gemini`` class through the Gemini stand-in
(SSE and the stock live transport): every scenario on both models. (A scenario with several
decision combinations runs one of them there: the combinations are the bridge's logic, the same
on any model; the wire is what the stand-in adds, within ``make test``'s time.)"""
CLIENTS = [(t, v, "scripted") for t, v in SCRIPTED] + [(t, v, "gemini") for t, v in ON_GEMINI]


def clients(transports: tuple[str, ...]) -> pytest.MarkDecorator:
    chosen = [c for c in CLIENTS if c[0] in transports]
    ids = [f"{t}-v{v}" + ("-gemini" if m == "gemini" else "") for t, v, m in chosen]
    return pytest.mark.parametrize(("transport", "sdk", "model"), chosen, ids=ids)


def clients_and(name: str, values: list[Any], on_gemini: Any) -> pytest.MarkDecorator:
    """:func:`clients` times ``values`` of ``name``, but only ``on_gemini`` on the stand-in."""
    chosen = [
        (t, v, m, value)
        for t, v, m in CLIENTS
        for value in values
        if m == "scripted" or value == on_gemini
    ]
    ids = [f"{t}-v{v}-{value}" + ("-gemini" if m == "gemini" else "") for t, v, m, value in chosen]
    return pytest.mark.parametrize(("transport", "sdk", "model", name), chosen, ids=ids)


SDKS = clients(("sse", "ws", "ws-js"))
SSE_ONLY = clients(("sse",))
LIVE_ONLY = clients(("ws", "ws-js"))
LOCATION = {"latitude": 48.85, "longitude": 2.35}
PAID_ALICE = '{"amount": 5, "currency": "USD", "recipient": "alice", "status": "sent"}'
PAID_BOB = '{"amount": 7, "currency": "USD", "recipient": "bob", "status": "sent"}'
PARIS = '{"city": "Paris", "forecast": "windy", "temperature_c": 19}'


@pytest.fixture
def demo_server(demo_server: str, model: str, request: pytest.FixtureRequest) -> str:
    """The session's demo server on the scenario's model: the scripted one, or ADK's
    ``Gemini`` on the stand-in (``gemini_demo_server``)."""
    if model == "scripted":
        return demo_server
    return str(request.getfixturevalue("gemini_demo_server"))


def run(
    server: str,
    client: tuple[str, int],
    *steps: Any,
    cut: int | None = None,
    cookie: str | None = None,
    same_history: bool = True,
    **spec: Any,
) -> dict[str, Any]:
    """Drive one chat of a fresh browser (its own identity cookie).

    The report gains ``chatId``, ``cookie`` and ``serverRuns``: how many times each server tool
    really ran for this chat (``{}`` when none did). ``cut`` is the index of a response the
    client cut short (``chat.stop()``), which is not validated as a whole stream. ``cookie``
    reuses a browser (another page of the same user). Over SSE the chat's history
    (``GET /chat/{id}/messages``) must show what the client shows, unless ``same_history`` is
    False."""
    transport, sdk = client
    cookie = cookie or f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    chat_id = spec.pop("chatId", f"chat-{secrets.token_hex(4)}")
    spec = {
        "transport": transport,
        "api": f"{server}/agent/chat",
        "wsUrl": f"{server.replace('http', 'ws', 1)}/agent/live",
        "transportJsUrl": f"{server}/agent/transport.js",
        "chatId": chat_id,
        "headers": {"cookie": cookie},
        "steps": [step if isinstance(step, dict) else {"send": step} for step in steps],
        **spec,
    }
    report = drive_chat(spec, sdk)
    assert not report.get("timeout") and not report["loop"], report
    # every response through the SDK's own parser and state machine, a continuation on top of
    # the assistant message it continues
    bodies = response_bodies(report) if transport == "sse" else live_bodies(report, cut)
    continued = []
    for request in report["requests"]:
        last = request["messages"][-1]
        continued.append(last if last["role"] == "assistant" else None)
    whole = [i for i in range(len(bodies)) if i != cut]
    results = validate_sse([bodies[i] for i in whole], sdk, messages=[continued[i] for i in whole])
    for result in results:
        assert result["ok"], result
    report.update(chatId=chat_id, cookie=cookie, serverRuns=server_runs(server, chat_id))
    if same_history:  # what a reload shows is what the client shows, in every transport
        assert shape(history(server, report)) == shape(report["messages"])
    return report


def server_runs(server: str, chat_id: str) -> dict[str, int]:
    """How many times each server tool ran for the chat (demo_under_test's counters)."""
    response = httpx.get(f"{server}/test/tool-runs/{chat_id}", timeout=10)
    assert response.status_code == 200, response.text
    runs: dict[str, int] = response.json()
    return runs


def history(server: str, report: dict[str, Any]) -> list[dict[str, Any]]:
    """``GET /chat/{id}/messages`` as the report's browser (its cookie)."""
    response = httpx.get(
        f"{server}/agent/chat/{report['chatId']}/messages",
        headers={"cookie": report["cookie"]},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()
    return messages


def response_bodies(report: dict[str, Any]) -> list[str]:
    assert all(r["status"] == 200 for r in report["responses"]), report["responses"]
    return [r["sse"] for r in report["responses"]]


def live_bodies(report: dict[str, Any], cut: int | None = None) -> list[str]:
    """The chunks of each live request, in SSE form, checked for sequence and framing (request
    ``cut``, aborted by the client, need not end)."""
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
    aborted = {report["requests"][cut]["requestId"]} if cut is not None else set()
    assert ended | aborted == set(chunks), "every live request ends with an end frame"
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
    assert report["serverRuns"] == {}


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
    assert report["serverRuns"] == {"get_weather": 1}


@SDKS
def test_model_error(demo_server: str, transport: str, sdk: int) -> None:
    # compared with the history: the text streamed before the failure and the error are kept
    report = run(demo_server, (transport, sdk), "explode")
    assert report["status"] == "error"
    assert report["error"] == "An error occurred."  # the model's own words stay in the log
    assert len(report["requests"]) == 1
    # the text streamed before the failure stays, in the message the error ended
    assert shape(report["messages"]) == [
        ("user", ["text:explode"]),
        ("assistant", ["step-start", "text:Something is about to go wrong...", "data-error"]),
    ]
    error = report["messages"][1]["parts"][-1]
    assert error["data"] == {"errorText": "An error occurred."}
    assert report["serverRuns"] == {}


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
    assert report["serverRuns"] == ({"process_payment": 1} if approved else {})


@SDKS
def test_payment_abandoned(demo_server: str, transport: str, sdk: int) -> None:
    # live mode denies what a closed connection left waiting (tests/live cover the history)
    report = run(demo_server, (transport, sdk), "pay 5 to alice", same_history=transport == "sse")
    assert (report["status"], len(report["requests"])) == ("ready", 1)
    assert shape(report["messages"])[1:] == [
        ("assistant", ["step-start", "tool-process_payment:approval-requested"])
    ]
    assert report["serverRuns"] == {}


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
    assert report["serverRuns"] == {}


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
    assert report["serverRuns"] == {}


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
    assert report["serverRuns"] == {}


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
    assert report["serverRuns"] == {}


@clients_and(
    "decisions", [(True, True), (True, False), (False, True), (False, False)], (True, False)
)
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
    assert report["serverRuns"] == ({"process_payment": sum(decisions)} if any(decisions) else {})


@clients_and("decisions", [(True, True), (False, True), (True, False)], (False, True))
def test_payment_then_payment_after_intermediate_text(
    demo_server: str, transport: str, sdk: int, decisions: tuple[bool, bool]
) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice then pay 7 to bob",
        approvals={"process_payment": list(decisions)},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 3)
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
                "step-start",
                "text:Done. Next, process_payment.",
                f"tool-process_payment:{states[1]}",
                "step-start",
                f"text:Here you go: {'; '.join(results)}.",
            ],
        )
    ]
    assert report["serverRuns"] == {"process_payment": sum(decisions)}


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
    assert report["serverRuns"] == {"get_weather": 1}


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
    assert report["serverRuns"] == {"process_payment": 1}


PAY_AND_LOCATE = [
    pytest.param(
        transport,
        sdk,
        model,
        pay,
        locate,
        id=f"{transport}-v{sdk}-{pay}-{locate}" + ("-gemini" if model == "gemini" else ""),
    )
    for pay in (True, False)
    for locate in (True, False)
    for transport, sdk, model in CLIENTS
    if model == "scripted" or (pay, locate) == (False, True)
]
"""Every decision pair on every client. Pins two fixes: over SSE the browser's answer used to
travel with the payment's confirmation in one ADK message, which ADK leaves out of the model's
context; and a denied payment next to an approved location used to stall (the stock helpers
never send a browser result whose step holds a denied part, so that denial is now shown with
the browser's result)."""


@pytest.mark.parametrize(("transport", "sdk", "model", "pay", "locate"), PAY_AND_LOCATE)
def test_payment_and_location_in_one_step(
    demo_server: str, transport: str, sdk: int, pay: bool, locate: bool
) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice and where am i",
        approvals={"process_payment": [pay], "get_location": [locate]},
        clientTools={"get_location": {"output": LOCATION}},
    )
    # an approved location needs one more request: the browser's result
    requests = 3 if locate else 2
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, requests)
    assert browser_runs(report, "get_location") == ([1] if locate else [])
    location = '{"latitude": 48.85, "longitude": 2.35}'
    paid = f"process_payment: {PAID_ALICE}" if pay else "process_payment was denied"
    located = f"get_location: {location}" if locate else "get_location was denied"
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                f"tool-process_payment:{'output-available' if pay else 'output-denied'}",
                f"tool-get_location:{'output-available' if locate else 'output-denied'}",
                "step-start",
                f"text:Here you go: {paid}; {located}.",
            ],
        )
    ]
    assert report["serverRuns"] == ({"process_payment": 1} if pay else {})


# --- the payment runs once, whatever the client sends twice ---------------------------------

PAID_ALICE_DONE = [
    "step-start",
    "tool-process_payment:output-available",
    "step-start",
    f"text:Here you go: process_payment: {PAID_ALICE}.",
]


@SSE_ONLY
def test_duplicated_approval_submission_is_refused(
    demo_server: str, transport: str, sdk: int
) -> None:
    """The approval continuation, re-posted as is (same body, same cookie) after it finished."""
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice",
        {"approve": {"tool": "process_payment", "approved": True}},
        {"resend": "last"},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    approval_id = report["approvals"][0]["approvalId"]
    [resend] = report["resends"]
    assert {k: resend[k] for k in ("request", "status", "contentType", "json")} == {
        "request": 1,
        "status": 409,
        "contentType": "application/json",
        "json": {"error": f"approval {approval_id!r} is not open in this chat"},
    }
    assert shape(report["messages"])[1:] == [("assistant", PAID_ALICE_DONE)]
    assert report["serverRuns"] == {"process_payment": 1}


@SSE_ONLY
def test_concurrent_duplicate_of_the_approval_runs_the_payment_once(
    demo_server: str, transport: str, sdk: int
) -> None:
    """The same continuation posted again while the first one streams (a double submission):
    it waits for the chat, then finds the approval answered."""
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice slowly",  # the continuation streams for half a second
        approvals={"process_payment": [True]},
        duplicateRequests=[1],
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    approval_id = report["approvals"][0]["approvalId"]
    [duplicate] = report["duplicates"]
    assert {k: v for k, v in duplicate.items() if k not in ("body", "waitedMs")} == {
        "request": 1,
        "sentWhileOriginalStreamed": True,
        "status": 409,
        "contentType": "application/json",
        "json": {"error": f"approval {approval_id!r} is not open in this chat"},
    }
    # it waited for the first one, whose answer streams for over half a second
    assert duplicate["waitedMs"] >= 300
    assert shape(report["messages"])[1:] == [("assistant", PAID_ALICE_DONE)]
    assert report["serverRuns"] == {"process_payment": 1}


@SDKS
def test_double_click_on_approve_sends_one_continuation(
    demo_server: str, transport: str, sdk: int
) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice",
        {"approve": {"tool": "process_payment", "approved": True, "clicks": 2}},
    )
    assert len(report["approvals"]) == 2
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    assert shape(report["messages"])[1:] == [("assistant", PAID_ALICE_DONE)]
    assert report["serverRuns"] == {"process_payment": 1}


# --- the client goes away ------------------------------------------------------------------

SLOW_TEXT = "tell me a long story slowly"
SLOW_REPLY = (
    f'You said: "{SLOW_TEXT}". I can try "weather in Paris", "pay 5 to alice", "play track 3" '
    'or "where am i" (join them with "and" or "then").'
)
HELLO_REPLY = (
    'You said: "hello". I can try "weather in Paris", "pay 5 to alice", "play track 3" '
    'or "where am i" (join them with "and" or "then").'
)


@SDKS
def test_stop_mid_stream_then_a_new_message(demo_server: str, transport: str, sdk: int) -> None:
    report = run(
        demo_server,
        (transport, sdk),
        {"send": SLOW_TEXT, "background": True},
        {"stop": True},
        "hello",
        cut=0,
        same_history=False,  # checked below
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    [stop] = report["stops"]
    assert (stop["status"], stop["statusAfter"]) == ("streaming", "ready")
    partial = stop["textAfter"]
    assert partial and SLOW_REPLY.startswith(partial) and len(partial) < len(SLOW_REPLY)
    assert report["finishes"] == [
        {"isAbort": True, "isDisconnect": False, "isError": False, "finishReason": None},
        {"isAbort": False, "isDisconnect": False, "isError": False, "finishReason": "stop"},
    ]
    assert shape(report["messages"]) == [
        ("user", [f"text:{SLOW_TEXT}"]),
        ("assistant", ["step-start", f"text:{partial}"]),
        ("user", ["text:hello"]),
        ("assistant", ["step-start", f"text:{HELLO_REPLY}"]),
    ]
    if transport != "sse":
        return  # live mode stores the stopped answer after the next message (reported)
    # The demo server keeps its streams resumable (streams=): the stock stop() only stopped
    # reading, so the answer went on and is in the history whole, before the next exchange,
    # with the ids the client knows.
    slow, stopped, hello, answer = report["messages"]
    assert history(demo_server, report) == [
        {"id": slow["id"], "role": "user", "parts": [{"type": "text", "text": SLOW_TEXT}]},
        {
            "id": stopped["id"],
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": SLOW_REPLY, "state": "done"},
            ],
        },
        {"id": hello["id"], "role": "user", "parts": [{"type": "text", "text": "hello"}]},
        {
            "id": answer["id"],
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": HELLO_REPLY, "state": "done"},
            ],
        },
    ]
    assert report["serverRuns"] == {}


@SSE_ONLY
def test_leave_mid_approval_then_a_new_page_approves(
    demo_server: str, transport: str, sdk: int
) -> None:
    chat_id = f"chat-{secrets.token_hex(4)}"
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice",
        {"leave": True},
        {"reload": f"{demo_server}/agent/chat/{chat_id}/messages"},
        {"approve": {"tool": "process_payment", "approved": True}},
        chatId=chat_id,
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    assert [(r["status"], r["messageCount"]) for r in report["reloads"]] == [(200, 2)]
    assert shape(report["messages"]) == [
        ("user", ["text:pay 5 to alice"]),
        ("assistant", PAID_ALICE_DONE),
    ]
    assert shape(history(demo_server, report)) == shape(report["messages"])
    assert report["serverRuns"] == {"process_payment": 1}


@LIVE_ONLY
@pytest.mark.parametrize("then", ["ws", "sse"])
def test_a_live_approval_left_open_is_approved_from_a_new_page(
    demo_server: str, transport: str, sdk: int, then: str
) -> None:
    """A payment waiting for approval outlives the live connection (docs/deployment.md): a new
    page, over live or over SSE, finds it waiting, approves it, and it runs once."""
    chat_id = f"chat-{secrets.token_hex(4)}"
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice",
        {"leave": True},
        chatId=chat_id,
        same_history=False,
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 1)
    waiting = [
        ("user", ["text:pay 5 to alice"]),
        ("assistant", ["step-start", "tool-process_payment:approval-requested"]),
    ]
    assert shape(history(demo_server, report)) == waiting
    again_transport = transport if then == "ws" else "sse"
    again = run(
        demo_server,
        (again_transport, sdk),
        {"reload": f"{demo_server}/agent/chat/{chat_id}/messages"},
        {"approve": {"tool": "process_payment", "approved": True}},
        chatId=chat_id,
        cookie=report["cookie"],
    )
    assert [(r["status"], r["messageCount"]) for r in again["reloads"]] == [(200, 2)]
    assert (again["status"], again["error"], len(again["requests"])) == ("ready", None, 1)
    paid = [
        ("user", ["text:pay 5 to alice"]),
        ("assistant", PAID_ALICE_DONE),
    ]
    assert shape(again["messages"]) == paid
    assert again["serverRuns"] == {"process_payment": 1}


@LIVE_ONLY
def test_an_approval_left_open_over_sse_is_approved_over_live(
    demo_server: str, transport: str, sdk: int
) -> None:
    """The other way round: the payment paused over SSE, the user comes back in live mode."""
    chat_id = f"chat-{secrets.token_hex(4)}"
    report = run(demo_server, ("sse", sdk), "pay 5 to alice", chatId=chat_id)
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 1)
    again = run(
        demo_server,
        (transport, sdk),
        {"reload": f"{demo_server}/agent/chat/{chat_id}/messages"},
        {"approve": {"tool": "process_payment", "approved": True}},
        chatId=chat_id,
        cookie=report["cookie"],
    )
    assert (again["status"], again["error"], len(again["requests"])) == ("ready", None, 1)
    assert shape(again["messages"]) == [
        ("user", ["text:pay 5 to alice"]),
        ("assistant", PAID_ALICE_DONE),
    ]
    assert again["serverRuns"] == {"process_payment": 1}


# --- a browser tool approved with its result in the same request, under the OR helper -------


@SDKS
def test_location_result_with_its_approval_under_the_or_helper(
    demo_server: str, transport: str, sdk: int
) -> None:
    """The stock OR helper sends as soon as every part of the step is answered, so an app that
    runs the tool on "Approve" (Pattern A) does it while another part still waits: here a
    second location. The app's result is used at once; the other call runs in the browser
    once, after its approval."""
    report = run(
        demo_server,
        (transport, sdk),
        "where am i and where am i",
        {"approve": {"tool": "get_location", "approved": True}},  # the last card first
        {"addToolOutput": {"tool": "get_location", "output": LOCATION}},
        {"approve": {"tool": "get_location", "approved": True}},
        clientTools={"get_location": {"output": {"latitude": 1, "longitude": 2}}},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 3)
    first, second = report["requests"][1]["messages"][-1]["parts"][1:]
    assert (first["state"], first["approval"]["approved"]) == ("approval-responded", True)
    assert (second["state"], second["approval"]["approved"]) == ("output-available", True)
    assert second["output"] == LOCATION
    assert [(c["toolCallId"], c["atRequest"]) for c in report["toolCalls"]] == [
        (first["toolCallId"], 1)
    ]
    assert browser_runs(report, "get_location") == [1]
    location = '{"latitude": 48.85, "longitude": 2.35}'
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                "tool-get_location:output-available",
                "tool-get_location:output-available",
                "step-start",
                'text:Here you go: get_location: {"latitude": 1, "longitude": 2}; '
                f"get_location: {location}.",
            ],
        )
    ]
    assert report["serverRuns"] == {}


@SDKS
def test_payment_and_location_result_with_its_approval_under_the_or_helper(
    demo_server: str, transport: str, sdk: int
) -> None:
    """Pattern A next to a payment: the location approved and its result added while the
    payment waits, then the payment approved; one request answers both (over SSE the
    location's result goes to ADK in an event of its own, so the model reads it)."""
    report = run(
        demo_server,
        (transport, sdk),
        "pay 5 to alice and where am i",
        {"approve": {"tool": "get_location", "approved": True}},
        {"addToolOutput": {"tool": "get_location", "output": LOCATION}},
        {"approve": {"tool": "process_payment", "approved": True}},
        clientTools={"get_location": {"output": {"latitude": 1, "longitude": 2}}},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 2)
    payment, location = report["requests"][1]["messages"][-1]["parts"][1:]
    assert (payment["state"], payment["approval"]["approved"]) == ("approval-responded", True)
    assert (location["state"], location["approval"]["approved"]) == ("output-available", True)
    assert browser_runs(report, "get_location") == []  # the app ran it itself, once
    location_text = '{"latitude": 48.85, "longitude": 2.35}'
    assert shape(report["messages"])[1:] == [
        (
            "assistant",
            [
                "step-start",
                "tool-process_payment:output-available",
                "tool-get_location:output-available",
                "step-start",
                f"text:Here you go: process_payment: {PAID_ALICE}; get_location: {location_text}.",
            ],
        )
    ]
    assert report["serverRuns"] == {"process_payment": 1}


@SDKS
def test_location_output_added_on_approve_under_the_or_helper_goes_through_the_browser(
    demo_server: str, transport: str, sdk: int
) -> None:
    """An "Approve" handler that also adds the result at once, under the OR helper: the
    approval leaves alone (nothing else in the step waits), the server hands the call to the
    browser, and ``onToolCall`` runs the tool once; the handler's own result is dropped by the
    client (docs/hitl.md, section 3)."""
    report = run(
        demo_server,
        (transport, sdk),
        "where am i",
        {"approve": {"tool": "get_location", "approved": True}, "background": True},
        {"addToolOutput": {"tool": "get_location", "output": {"latitude": 0, "longitude": 0}}},
        clientTools={"get_location": {"output": LOCATION}},
    )
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 3)
    [approval] = report["requests"][1]["messages"][-1]["parts"][1:]
    assert (approval["state"], approval["approval"]["approved"]) == ("approval-responded", True)
    assert browser_runs(report, "get_location") == [1]
    assert shape(report["messages"])[1:] == [("assistant", LOCATION_DONE)]
    assert report["serverRuns"] == {}
