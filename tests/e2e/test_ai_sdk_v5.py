"""AI SDK 5 clients: ``AdkApp(ai_sdk_version=5)`` (tests/e2e/v5_app.py) under a real uvicorn,
driven by the real ai@5 ``AbstractChat``, over SSE (``DefaultChatTransport``) and live (the
served ``transport.js`` with ``sdk: 5``).

Each test asserts the client's final messages whole (ids replaced by placeholders), the number
of requests, that every response passes ai@5's own parser and state machine, and that a reload
(``GET /chat/{id}/messages``) shows what the client showed (or pins the difference).
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import msgspec
import pytest

from adk_asgi.wire import chunks as c
from adk_asgi.wire.encoding import SSE_DONE, ChunkEncoder
from tests.chunk_samples import EVERY_CHUNK
from tests.e2e.node_client import drive_chat, validate_sse
from tests.e2e.test_agent_shapes import normalized
from tests.e2e.test_scenarios import live_bodies
from tests.e2e.v5_app import ALMOST, ANSWER, HELLO, STORY, THOUGHT
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

TRANSPORTS = pytest.mark.parametrize("transport", ["sse", "ws-js"])
WEATHER = {"city": "Paris", "forecast": "windy", "temperature_c": 19}
NO_APPROVALS = (
    "This step needs the user's approval, which an AI SDK 5 client cannot give: serve this "
    "agent with ai_sdk_version=6 or 7 (docs/ai-sdk-versions.md)."
)


@pytest.fixture(scope="session")
def v5_server() -> Iterator[str]:
    with uvicorn_server("tests.e2e.v5_app:app", ready_path="/agent/transport.js") as base:
        yield base


def run(
    server: str, transport: str, *steps: Any, cut: int | None = None, **spec: Any
) -> dict[str, Any]:
    """Drive one chat of a fresh browser with ai@5; every whole response is checked by ai@5's
    parser and state machine (but ``cut``, the index of the request the page stopped). The
    report gains ``history``: ``GET /chat/{id}/messages``."""
    cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    chat_id = spec.pop("chatId", f"chat-{secrets.token_hex(4)}")
    report = drive_chat(
        {
            "transport": transport,
            "api": f"{server}/agent/chat",
            "wsUrl": f"{server.replace('http', 'ws', 1)}/agent/live",
            "transportJsUrl": f"{server}/agent/transport.js",
            "chatId": chat_id,
            "headers": {"cookie": cookie},
            "steps": [step if isinstance(step, dict) else {"send": step} for step in steps],
            "idleMs": 100,
            **spec,
        },
        5,
    )
    assert not report["timeout"] and not report["loop"], report
    assert report["versions"]["ai"]["version"].startswith("5.")
    continued = []  # the assistant message each request continues (a resume's GET: none)
    for request in report["requests"]:
        last = (request or {}).get("messages", [None])[-1]
        continued.append(last if last is not None and last["role"] == "assistant" else None)
    if transport == "sse":  # one request and response per POST /chat or GET .../stream
        assert [r["status"] for r in report["responses"]] == [200] * len(report["requests"])
        bodies = [r["sse"] for i, r in enumerate(report["responses"]) if i != cut]
        sent = [message for i, message in enumerate(continued) if i != cut]
    else:  # transport.js was told the page's version
        sockets = [parse_qs(urlsplit(s["url"]).query)["sdk"] for s in report["sockets"]]
        assert sockets == [["5"]] * len(sockets)
        bodies = live_bodies(report, cut)
        sent = continued
        if cut is not None:
            del bodies[cut], sent[cut]
    for result in validate_sse(bodies, 5, messages=sent):
        assert result["ok"], result
    history = httpx.get(
        f"{server}/agent/chat/{chat_id}/messages", headers={"cookie": cookie}, timeout=10
    )
    assert history.status_code == 200, history.text
    report["history"] = history.json()
    return report


def outcome(report: dict[str, Any]) -> tuple[str, str | None, int]:
    return report["status"], report["error"], len(report["requests"])


def user(text: str, msg: str = "<msg1>") -> dict[str, Any]:
    return {"id": msg, "role": "user", "parts": [{"type": "text", "text": text}]}


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words, "state": "done"}


STEP = {"type": "step-start"}


@TRANSPORTS
def test_text(v5_server: str, transport: str) -> None:
    report = run(v5_server, transport, "hello")
    assert outcome(report) == ("ready", None, 1)
    expected = [
        user("hello"),
        {"id": "<msg2>", "role": "assistant", "parts": [STEP, text(HELLO)]},
    ]
    assert normalized(report["messages"]) == expected
    assert report["history"] == report["messages"]


@TRANSPORTS
def test_reasoning(v5_server: str, transport: str) -> None:
    """Live too: a text after a thought reached the client twice (each kind's end dropped
    what the other kind had streamed)."""
    report = run(v5_server, transport, "think")
    assert outcome(report) == ("ready", None, 1)
    reasoning = {"type": "reasoning", "id": "<msg2>-rsn1", "text": THOUGHT, "state": "done"}
    assert normalized(report["messages"]) == [
        user("think"),
        {"id": "<msg2>", "role": "assistant", "parts": [STEP, reasoning, text(ANSWER)]},
    ]
    assert report["history"] == report["messages"]  # the reasoning part's id included


@TRANSPORTS
def test_server_tool(v5_server: str, transport: str) -> None:
    report = run(v5_server, transport, "weather in Paris")
    assert outcome(report) == ("ready", None, 1)
    weather = {
        "type": "tool-get_weather",
        "toolCallId": "<call1>",
        "state": "output-available",
        "input": {"city": "Paris"},
        "output": WEATHER,
        "providerExecuted": True,
    }
    said = 'Done: get_weather: {"city": "Paris", "forecast": "windy", "temperature_c": 19}.'
    assert normalized(report["messages"]) == [
        user("weather in Paris"),
        {"id": "<msg2>", "role": "assistant", "parts": [STEP, weather, STEP, text(said)]},
    ]
    assert report["history"] == report["messages"]


BGM_DONE = [
    user("play track 2"),
    {
        "id": "<msg2>",
        "role": "assistant",
        "parts": [
            STEP,
            {
                "type": "tool-change_bgm",
                "toolCallId": "<call1>",
                "state": "output-available",
                "input": {"track": 2},
                "output": {"playing": 2},
            },
            STEP,
            text('Done: change_bgm: {"playing": 2}.'),
        ],
    },
]


@TRANSPORTS
def test_browser_tool_answered_in_on_tool_call(v5_server: str, transport: str) -> None:
    """The stock v5 pattern: ``onToolCall`` runs the tool and ``addToolResult`` answers it;
    ``lastAssistantMessageIsCompleteWithToolCalls`` sends the continuation."""
    report = run(
        v5_server,
        transport,
        "play track 2",
        clientTools={"change_bgm": {"output": {"playing": 2}}},
    )
    assert outcome(report) == ("ready", None, 2)
    assert [(call["toolName"], call["atRequest"]) for call in report["toolCalls"]] == [
        ("change_bgm", 0)
    ]
    assert normalized(report["messages"]) == BGM_DONE
    assert report["history"] == report["messages"]


@TRANSPORTS
def test_browser_tool_answered_by_the_page(v5_server: str, transport: str) -> None:
    """v5's human-in-the-loop pattern: the page shows the call and answers it with
    ``addToolResult`` later (here after the stream ended), then sends."""
    report = run(
        v5_server,
        transport,
        "play track 2",
        {"addToolOutput": {"tool": "change_bgm", "output": {"playing": 2}}},
        sendAutomaticallyWhen="toolCalls",
    )
    assert outcome(report) == ("ready", None, 2)
    sent = normalized(report["requests"][1]["messages"])[-1]
    assert sent == {**BGM_DONE[1], "parts": BGM_DONE[1]["parts"][:2]}
    assert normalized(report["messages"]) == BGM_DONE
    assert report["history"] == report["messages"]


@TRANSPORTS
def test_model_error(v5_server: str, transport: str) -> None:
    report = run(v5_server, transport, "explode")
    assert outcome(report) == ("error", "An error occurred.", 1)
    failed = {
        "type": "data-error",
        "id": "<msg2>-error",
        "data": {"errorText": "An error occurred."},
    }
    assert normalized(report["messages"]) == [
        user("explode"),
        {"id": "<msg2>", "role": "assistant", "parts": [STEP, text(ALMOST), failed]},
    ]
    assert report["history"] == report["messages"]


@TRANSPORTS
def test_file(v5_server: str, transport: str) -> None:
    note = {
        "type": "file",
        "mediaType": "text/plain",
        "filename": "note.txt",
        "url": "data:text/plain;base64," + base64.b64encode(b"buy milk").decode(),
    }
    report = run(v5_server, transport, {"send": {"text": "read this", "files": [note]}})
    assert outcome(report) == ("ready", None, 1)
    assert normalized(report["messages"]) == [
        {"id": "<msg1>", "role": "user", "parts": [note, {"type": "text", "text": "read this"}]},
        {
            "id": "<msg2>",
            "role": "assistant",
            "parts": [STEP, text("I got text/plain 'buy milk'.")],
        },
    ]
    assert report["history"] == report["messages"]


def test_regenerate(v5_server: str) -> None:
    # SSE only: live mode does not regenerate (docs/live.md)
    report = run(v5_server, "sse", "roll", {"regenerate": True})
    assert outcome(report) == ("ready", None, 2)
    assert report["requests"][1]["trigger"] == "regenerate-message"
    first = report["requests"][1]["messages"]
    assert normalized(first) == [user("roll")]  # the answer it replaces is gone
    [answer] = [chunk for chunk in _chunks(report, 0) if chunk["type"] == "text-delta"]
    rolled = int(answer["delta"].removeprefix("Roll ").removesuffix("."))
    assert normalized(report["messages"]) == [
        user("roll"),
        {"id": "<msg2>", "role": "assistant", "parts": [STEP, text(f"Roll {rolled + 1}.")]},
    ]
    assert report["history"] == report["messages"]


@TRANSPORTS
def test_a_page_reloaded_mid_answer_resumes_it(v5_server: str, transport: str) -> None:
    """The page goes away mid-answer (over SSE its request, live its socket), the run goes on,
    and the reloaded page's ``resumeStream()`` (``useChat({resume: true})``) replays and
    follows it."""
    chat_id = f"chat-{secrets.token_hex(4)}"
    report = run(
        v5_server,
        transport,
        {"send": "tell me a story slowly", "background": True},
        {"stop": True if transport == "sse" else "unload"},
        {"reload": {"url": f"{v5_server}/agent/chat/{chat_id}/messages", "resume": True}},
        chatId=chat_id,
        cut=0,
    )
    assert (report["status"], report["error"]) == ("ready", None)
    [stop] = report["stops"]
    assert stop["textBefore"] and stop["textBefore"] != STORY  # it really was mid-answer
    # history holds the user's message alone while the answer is under way
    assert [(r["status"], r["messageCount"]) for r in report["reloads"]] == [(200, 1)]
    if transport == "sse":
        sent = [
            (r["method"], r["url"].rsplit("/", 1)[-1], r["status"]) for r in report["responses"]
        ]
        assert sent == [("POST", "chat", 200), ("GET", "stream", 200)]
    else:  # a new page, a new socket, which resumed the answer
        assert [s["closeCode"] for s in report["sockets"]] == [1001, 1000]
        resumes = [f["frame"] for f in report["frames"] if f["frame"].get("type") == "resume"]
        assert len(resumes) == 1
    assert normalized(report["messages"]) == [
        user("tell me a story slowly"),
        {"id": "<msg2>", "role": "assistant", "parts": [STEP, text(STORY)]},
    ]
    assert report["history"] == report["messages"]


def _chunks(report: dict[str, Any], request: int) -> list[dict[str, Any]]:
    """The chunks of one request's response, as sent."""
    if report["transport"] == "sse":
        body = report["responses"][request]["sse"]
        events = [e.removeprefix("data: ") for e in body.split("\n\n") if e.startswith("data: {")]
        return [msgspec.json.decode(event) for event in events]
    request_id = report["requests"][request]["requestId"]
    return [
        entry["frame"]["chunk"]
        for entry in report["frames"]
        if entry["dir"] == "in"
        and entry["frame"].get("requestId") == request_id
        and entry["frame"]["type"] == "chunk"
    ]


@TRANSPORTS
def test_an_approval_no_start_up_check_saw_is_an_error_the_client_reads(
    v5_server: str, transport: str
) -> None:
    """``send_money`` asks for confirmation from its body: ai@5 is told it cannot give it, in
    an ``error`` chunk, instead of a ``tool-approval-request`` that would fail its parser."""
    report = run(v5_server, transport, "send 5")
    assert outcome(report) == ("error", NO_APPROVALS, 1)
    call = {
        "type": "tool-send_money",
        "toolCallId": "<call1>",
        "state": "input-available",
        "input": {"amount": 5},
        "providerExecuted": True,
    }
    assert normalized(report["messages"]) == [
        user("send 5"),
        {"id": "<msg2>", "role": "assistant", "parts": [STEP, call]},
    ]
    # The client stops reading at the error. History shows the call waiting for the approval
    # ai@5 cannot give, and over SSE what ADK ran on to (the tool's own answer, said).
    [(history_user, history_answer)] = [report["history"]]
    assert history_user == report["messages"][0]
    approval = history_answer["parts"][1]["approval"]
    shown = report["messages"][1]
    waiting = {**shown["parts"][1], "state": "approval-requested", "approval": approval}
    after = [STEP, text('Done: send_money: {"status": "waiting for the user"}.')]
    assert history_answer["id"] == shown["id"]
    assert history_answer["parts"][:2] == [STEP, waiting]
    assert approval["descriptor"] == {"hint": "Send 5?"}
    assert history_answer["parts"][2:] == (after if transport == "sse" else [])


def test_every_chunk_type_as_ai5_receives_it() -> None:
    """Every chunk type, with every field set, through the ai@5 encoder: ai@5's parser takes
    all of it; the same stream encoded for ai@6 fails at the approval request."""
    assert {type(chunk) for chunk in EVERY_CHUNK} == set(c.UIMessageChunk.__args__)  # type: ignore[attr-defined]
    v5 = ChunkEncoder(5)
    body = b"".join(v5.sse(chunk) for chunk in EVERY_CHUNK) + SSE_DONE
    as_v6 = b"".join(ChunkEncoder(6).sse(chunk) for chunk in EVERY_CHUNK) + SSE_DONE
    result, refused = validate_sse([body, as_v6], 5)
    assert (result["ok"], result["error"], result["errorChunks"]) == (
        True,
        None,
        [NO_APPROVALS, "oops"],
    )
    assert [chunk["type"] for chunk in result["chunks"]] == [
        "start",
        "start-step",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-end",
        "source-url",
        "source-document",
        "file",
        "data-weather",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "error",
        "tool-output-error",
        "tool-input-start",
        "tool-input-error",
        "tool-input-available",
        "tool-output-available",
        "tool-output-available",
        "tool-input-available",
        "tool-output-error",
        "error",
        "message-metadata",
        "finish-step",
        "abort",
        "finish",
    ]
    assert result["message"] == {
        "id": "m1",
        "role": "assistant",
        "metadata": {"k": 2},
        "parts": [
            STEP,
            {
                "type": "reasoning",
                "id": "r1",
                "text": "hm",
                "providerMetadata": {"adk": {"author": "a"}},
                "state": "done",
            },
            text("hi"),
            {"type": "source-url", "sourceId": "s1", "url": "https://x", "title": "X"},
            {
                "type": "source-document",
                "sourceId": "s2",
                "mediaType": "text/plain",
                "title": "D",
                "filename": "d.txt",
            },
            {"type": "file", "mediaType": "text/plain", "url": "data:text/plain;base64,eA=="},
            {"type": "data-weather", "id": "d1", "data": {"t": 1}},
            {
                "type": "tool-f",
                "toolCallId": "a",
                "state": "output-error",
                "input": {},
                "errorText": "The user denied this call.",
            },
            {
                "type": "tool-g",
                "toolCallId": "b",
                "state": "output-error",
                "rawInput": None,
                "errorText": "bad input",
                "providerExecuted": True,
            },
            {
                "type": "dynamic-tool",
                "toolName": "g",
                "toolCallId": "e",
                "state": "output-available",
                "input": {"x": 1},
                "output": 2,
            },
            {
                "type": "tool-g",
                "toolCallId": "h",
                "state": "output-error",
                "input": {},
                "errorText": "failed",
            },
        ],
    }
    assert not refused["ok"]
    assert refused["chunks"][-1]["type"] == "tool-input-available"  # then the approval request
    assert "tool-approval-request" in refused["error"]
