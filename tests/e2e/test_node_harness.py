"""Tests of the Node harness itself (validate-sse.mjs, chat-driver.mjs, node_client.py).

A throwaway threaded HTTP server on 127.0.0.1 serves canned SSE bodies and small scripted chat
scenarios; the real AI SDK clients (ai@6 and ai@7) validate and drive them. A throwaway
WebSocket server (``websockets``' threaded server) plays the same scenarios in live mode, with
the frames of ai@7's ``WebSocketChatTransport``, for the driver's "ws" and "ws-js" transports.
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.sync.server import ServerConnection, serve

from tests.e2e import node_client
from tests.e2e.node_client import (
    NodeHarnessError,
    drive_chat,
    drive_chat_async,
    validate_sse,
    validate_sse_async,
)

pytestmark = pytest.mark.e2e

SDKS = [6, 7]
# The live-mode combinations: the stock WebSocketChatTransport (ai@7 only), and the project's own
# transport module (played here by a stand-in) with either SDK.
LIVE = [
    pytest.param("ws", 7, id="ws-sdk7"),
    pytest.param("ws-js", 6, id="ws-js-sdk6"),
    pytest.param("ws-js", 7, id="ws-js-sdk7"),
]
STAND_IN_TRANSPORT = node_client.NODE_DIR / "lib" / "stand-in-live-transport.mjs"
COOKIE = "sid=abc123; theme=dark"

Chunk = dict[str, Any]
Body = dict[str, Any]
# A scenario maps a request body to chunks (a 200 SSE response) or to (status, text).
Reply = list[Chunk] | tuple[int, str]
Scenario = Callable[[Body], Reply]


def sse(chunks: list[Chunk], *, done: bool = True) -> str:
    events = "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks)
    return events + ("data: [DONE]\n\n" if done else "")


def text_chunks(text: str, text_id: str = "t1") -> list[Chunk]:
    return [
        {"type": "start-step"},
        {"type": "text-start", "id": text_id},
        {"type": "text-delta", "id": text_id, "delta": text},
        {"type": "text-end", "id": text_id},
        {"type": "finish-step"},
    ]


VALID_CHUNKS: list[Chunk] = [
    {"type": "start", "messageId": "m1"},
    *text_chunks("Hello world"),
    {"type": "finish", "finishReason": "stop"},
]

CANNED: dict[str, str] = {
    "valid": sse(VALID_CHUNKS),
    # Accepted by both clients: CRLF, no [DONE], unknown extra keys, null in z.unknown() fields.
    "tolerated": sse(
        [
            {"type": "start", "messageMetadata": None},
            {"type": "start-step"},
            {"type": "tool-input-available", "toolCallId": "c1", "toolName": "t", "input": None},
            {"type": "tool-output-available", "toolCallId": "c1", "output": None, "extra": 1},
            {"type": "finish-step"},
            {"type": "finish", "usage": {"inputTokens": 3}},
        ],
        done=False,
    ).replace("\n", "\r\n"),
    "null-optional": sse(
        [
            {"type": "start"},
            {"type": "start-step"},
            {"type": "tool-input-available", "toolCallId": "c1", "toolName": "t", "input": {}},
            {"type": "source-url", "sourceId": "s1", "url": "https://x.test", "title": None},
            {"type": "finish"},
        ]
    ),
    "reset-step": sse(
        [
            {"type": "start"},
            *text_chunks("draft")[:-1],
            {"type": "reset-step"},
            *text_chunks("again")[1:],
            {"type": "finish"},
        ]
    ),
    "no-trailing-blank-line": sse(VALID_CHUNKS, done=False)[:-1],
    "delta-without-start": sse(
        [
            {"type": "start"},
            {"type": "text-delta", "id": "t1", "delta": "Hi"},
            {"type": "finish"},
        ]
    ),
    "error-chunk": sse([{"type": "start"}, {"type": "error", "errorText": "boom"}]),
}


# --------------------------------------------------------------------------------------------
# The throwaway server
# --------------------------------------------------------------------------------------------


def last_message(body: Body) -> dict[str, Any]:
    messages: list[dict[str, Any]] = body["messages"]
    return messages[-1]


def tool_parts(message: dict[str, Any], tool: str) -> list[dict[str, Any]]:
    return [p for p in message["parts"] if p["type"] == f"tool-{tool}"]


TEXT_REPLY: list[Chunk] = [
    {"type": "start"},
    *text_chunks("Hello world"),
    {"type": "finish", "finishReason": "stop"},
]


def scenario_text(body: Body) -> Reply:
    return TEXT_REPLY


def scenario_server_tool(body: Body) -> Reply:
    return [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "call_w", "toolName": "get_weather"},
        {"type": "tool-input-delta", "toolCallId": "call_w", "inputTextDelta": '{"city":"Paris"}'},
        {
            "type": "tool-input-available",
            "toolCallId": "call_w",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
        },
        {"type": "tool-output-available", "toolCallId": "call_w", "output": {"temp": 21}},
        {"type": "finish-step"},
        *text_chunks("It is 21 degrees.", "t2"),
        {"type": "finish", "finishReason": "stop"},
    ]


def scenario_client_tool(body: Body) -> Reply:
    last = last_message(body)
    if last["role"] == "user":
        return [
            {"type": "start"},
            {"type": "start-step"},
            {
                "type": "tool-input-available",
                "toolCallId": "call_bgm",
                "toolName": "change_bgm",
                "input": {"track": 2},
            },
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "tool-calls"},
        ]
    (part,) = tool_parts(last, "change_bgm")
    if part["state"] == "output-available":
        answer = f"Now playing {part['output']['playing']}."
    else:
        answer = f"Could not change the music: {part['errorText']}"
    return [{"type": "start"}, *text_chunks(answer), {"type": "finish", "finishReason": "stop"}]


def payment_request(call_id: str, amount: int) -> list[Chunk]:
    return [
        {"type": "start-step"},
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": "process_payment",
            "input": {"amount": amount},
        },
        {"type": "tool-approval-request", "approvalId": f"appr_{call_id}", "toolCallId": call_id},
        {"type": "finish-step"},
    ]


def scenario_approval_chain(body: Body) -> Reply:
    """Payment 1 needs approval; after it, payment 2 needs approval; then a final text."""
    last = last_message(body)
    if last["role"] == "user":
        return [{"type": "start"}, *payment_request("call_1", 10), {"type": "finish"}]
    out: list[Chunk] = [{"type": "start"}]
    answered = [
        p for p in tool_parts(last, "process_payment") if p["state"] == "approval-responded"
    ]
    for part in answered:
        if part["approval"]["approved"]:
            out.append(
                {
                    "type": "tool-output-available",
                    "toolCallId": part["toolCallId"],
                    "output": {"paid": part["input"]["amount"]},
                }
            )
        else:
            out.append({"type": "tool-output-denied", "toolCallId": part["toolCallId"]})
    if answered and answered[-1]["toolCallId"] == "call_1":
        out += payment_request("call_2", 20)
    else:
        out += text_chunks("Done.")
    return [*out, {"type": "finish"}]


def scenario_unresolved_approval(body: Body) -> Reply:
    """Never resolves the approved call: the approvals helper re-sends forever."""
    if last_message(body)["role"] == "user":
        return [{"type": "start"}, *payment_request("call_1", 10), {"type": "finish"}]
    return [{"type": "start"}, {"type": "finish"}]


def scenario_http_500(body: Body) -> Reply:
    return (500, "internal boom")


def scenario_approval_once(body: Body) -> Reply:
    """One payment needing approval; the answer is its output (or a denial) and a final text."""
    last = last_message(body)
    if last["role"] == "user":
        return [{"type": "start"}, *payment_request("call_1", 10), {"type": "finish"}]
    (part,) = tool_parts(last, "process_payment")
    assert part["state"] == "approval-responded", part
    if part["approval"]["approved"]:
        result: Chunk = {"type": "tool-output-available", "toolCallId": "call_1", "output": "ok"}
        text = "Paid."
    else:
        result = {"type": "tool-output-denied", "toolCallId": "call_1"}
        text = "Not paid."
    return [{"type": "start"}, result, *text_chunks(text), {"type": "finish"}]


class CannedServer(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handler threads
    block_on_close = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), CannedHandler)
        self.scenarios: dict[str, Scenario] = {
            "text": scenario_text,
            "server-tool": scenario_server_tool,
            "client-tool": scenario_client_tool,
            "approval-chain": scenario_approval_chain,
            "unresolved-approval": scenario_unresolved_approval,
            "http-500": scenario_http_500,
            "approval-once": scenario_approval_once,
        }
        self.received: list[tuple[str, Body]] = []
        self.stored: dict[str, list[dict[str, Any]]] = {}
        self.stopping = threading.Event()

    @property
    def base(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class CannedHandler(BaseHTTPRequestHandler):
    server: CannedServer
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        if self.path == "/transport.js":
            self._send(200, "text/javascript", STAND_IN_TRANSPORT.read_bytes())
        elif len(parts) == 2 and parts[0] == "canned" and parts[1] in CANNED:
            self._send(200, "text/event-stream", CANNED[parts[1]].encode())
        elif len(parts) == 2 and parts[0] == "messages":
            messages = self.server.stored.get(parts[1], [])
            self._send(200, "application/json", json.dumps({"messages": messages}).encode())
        elif len(parts) == 2 and parts[0] == "hang":
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(sse([{"type": "start"}], done=False).encode())
            self.wfile.flush()
            self.server.stopping.wait(20)
        else:
            self._send(404, "text/plain", b"not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body: Body = json.loads(self.rfile.read(length))
        name = self.path.strip("/").split("/")[-1]
        self.server.received.append((name, body))
        if name == "hang":
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(sse([{"type": "start"}, *text_chunks("")[:2]], done=False).encode())
            self.wfile.flush()
            self.server.stopping.wait(20)
            return
        if name == "stored-text":
            message_id = f"srv-{len(self.server.received)}"
            chunks = [
                {"type": "start", "messageId": message_id},
                *text_chunks("Hello world"),
                {"type": "finish"},
            ]
            assistant = {
                "id": message_id,
                "role": "assistant",
                "parts": [{"type": "step-start"}, {"type": "text", "text": "Hello world"}],
            }
            self.server.stored[body["id"]] = [*body["messages"], assistant]
            self._send(200, "text/event-stream", sse(chunks).encode())
            return
        reply = self.server.scenarios[name](body)
        if isinstance(reply, tuple):
            status, text = reply
            self._send(status, "text/plain", text.encode())
        else:
            self._send(200, "text/event-stream", sse(reply).encode())

    def handle(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()


@pytest.fixture
def server() -> Iterator[CannedServer]:
    srv = CannedServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield srv
    finally:
        srv.stopping.set()
        srv.shutdown()
        srv.server_close()
        thread.join()


class LiveServer:
    """A throwaway WebSocket chat server speaking the frames of ai@7's WebSocketChatTransport.

    ``ws://127.0.0.1:PORT/live/<scenario>``: each ``send`` frame is answered by the scenario (the
    frame has the keys of an HTTP request body): chunks become ``start``, ``chunk{sequence}`` ...,
    ``end``; a ``(status, text)`` reply becomes ``start`` + ``error{errorText: text}``. A
    ``resume`` frame gets ``no-active``, except in scenario "replay" (a full replay of a text
    answer); scenario "hang" starts an answer and never ends it. Handshakes without a cookie are
    refused with 403, like a cookie-identity server.
    """

    def __init__(self) -> None:
        self.scenarios: dict[str, Scenario] = {
            "text": scenario_text,
            "client-tool": scenario_client_tool,
            "approval-once": scenario_approval_once,
            "unresolved-approval": scenario_unresolved_approval,
            "http-500": scenario_http_500,
        }
        self.handshakes: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.connections: list[ServerConnection] = []
        self.server = serve(
            self.handle, "127.0.0.1", 0, process_request=self.check_handshake, compression=None
        )
        connection_thread = self.server.handler

        def tracked(*args: Any) -> None:
            with self.lock:
                self.threads.append(threading.current_thread())
            connection_thread(*args)

        self.server.handler = tracked
        self.thread = threading.Thread(target=self.server.serve_forever)

    def url(self, scenario: str) -> str:
        host, port = self.server.socket.getsockname()[:2]
        return f"ws://{host}:{port}/live/{scenario}"

    def check_handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        headers: Headers = request.headers
        with self.lock:
            self.handshakes.append({"path": request.path, "cookie": headers.get("cookie")})
        if headers.get("cookie") is None:
            return connection.respond(HTTPStatus.FORBIDDEN, "no session cookie\n")
        return None

    def handle(self, connection: ServerConnection) -> None:
        with self.lock:
            self.connections.append(connection)
        assert connection.request is not None
        scenario = urlsplit(connection.request.path).path.rsplit("/", 1)[-1]
        with contextlib.suppress(ConnectionClosed):
            for message in connection:
                frame: dict[str, Any] = json.loads(message)
                with self.lock:
                    self.received.append(frame)
                for reply in self.answer(scenario, frame):
                    connection.send(json.dumps(reply))

    def answer(self, scenario: str, frame: dict[str, Any]) -> list[dict[str, Any]]:
        request_id = frame["requestId"]
        if frame["type"] == "abort":
            return []
        if frame["type"] == "resume":
            if scenario != "replay":
                return [{"type": "no-active", "requestId": request_id}]
            reply: Reply = [{"type": "start", "messageId": "replayed"}, *TEXT_REPLY[1:]]
        elif scenario == "hang":  # starts an answer that never ends
            return [
                {"type": "start", "requestId": request_id},
                {
                    "type": "chunk",
                    "requestId": request_id,
                    "sequence": 0,
                    "chunk": {"type": "start"},
                },
            ]
        else:
            reply = self.scenarios[scenario](frame)
        if isinstance(reply, tuple):
            return [
                {"type": "start", "requestId": request_id},
                {"type": "error", "requestId": request_id, "errorText": reply[1]},
            ]
        return [
            {"type": "start", "requestId": request_id},
            *(
                {"type": "chunk", "requestId": request_id, "sequence": i, "chunk": chunk}
                for i, chunk in enumerate(reply)
            ),
            {"type": "end", "requestId": request_id},
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join()
        with self.lock:
            connections = list(self.connections)
        for connection in connections:
            connection.close()
        for thread in self.threads:
            thread.join(10)


@pytest.fixture
def live() -> Iterator[LiveServer]:
    srv = LiveServer()
    srv.thread.start()
    try:
        yield srv
    finally:
        srv.close()


def fetch_bytes(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        data: bytes = response.read()
    return data


def spec(server: CannedServer, scenario: str, **extra: Any) -> dict[str, Any]:
    return {
        "api": f"{server.base}/chat/{scenario}",
        "chatId": f"chat-{scenario}",
        "idleMs": 200,
        "timeoutMs": 15000,
        **extra,
    }


def part_summary(message: dict[str, Any]) -> list[str]:
    out = []
    for part in message["parts"]:
        state = part.get("state")
        out.append(f"{part['type']}:{state}" if state else part["type"])
    return out


# --------------------------------------------------------------------------------------------
# node_client basics
# --------------------------------------------------------------------------------------------


def test_missing_node_modules_fails_with_npm_ci_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(node_client, "NODE_DIR", tmp_path)
    with pytest.raises(NodeHarnessError, match="npm ci"):
        validate_sse(["data: {}\n\n"], 6)


def test_node_modules_installed() -> None:
    """Fails (never skips) when `npm ci` has not been run in tests/e2e/node."""
    node_client.check_node_harness()


@pytest.mark.parametrize("sdk", [4, 8])
def test_bad_sdk_is_rejected(sdk: int) -> None:
    with pytest.raises(ValueError) as refused:
        validate_sse([""], sdk)
    assert str(refused.value) == f"sdk must be one of (5, 6, 7), got {sdk}"


# --------------------------------------------------------------------------------------------
# validate-sse.mjs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sdk", SDKS)
def test_valid_bodies_validate(server: CannedServer, sdk: int) -> None:
    names = ["valid", "tolerated", "error-chunk"]
    bodies = [fetch_bytes(f"{server.base}/canned/{name}") for name in names]
    results = validate_sse(bodies, sdk, names=names)
    assert [r["name"] for r in results] == names
    for result in results:
        assert result["ok"], result
        assert result["error"] is None
    valid, tolerated, error_chunk = results
    assert [c["type"] for c in valid["chunks"]] == [c["type"] for c in VALID_CHUNKS]
    assert valid["message"] == {
        "id": "m1",
        "role": "assistant",
        "parts": [{"type": "step-start"}, {"type": "text", "text": "Hello world", "state": "done"}],
    }
    # Unknown keys survive parsing (looseObject).
    assert tolerated["chunks"][3]["extra"] == 1
    assert tolerated["message"]["parts"][1]["state"] == "output-available"
    assert error_chunk["errorChunks"] == ["boom"]


@pytest.mark.parametrize("sdk", SDKS)
def test_invalid_bodies_are_reported(sdk: int) -> None:
    names = ["null-optional", "reset-step", "no-trailing-blank-line", "delta-without-start"]
    results = {r["name"]: r for r in validate_sse([CANNED[n] for n in names], sdk, names=names)}

    null_optional = results["null-optional"]
    assert not null_optional["ok"]
    assert "TypeValidationError" in null_optional["error"]
    assert len(null_optional["chunks"]) == 3  # parsing stops at the invalid chunk

    reset = results["reset-step"]
    if sdk == 6:
        assert not reset["ok"]
        assert "TypeValidationError" in reset["error"]
        assert "reset-step" in reset["error"]
    else:
        assert reset["ok"], reset
        assert part_summary(reset["message"]) == ["step-start", "text:done"]
        assert reset["message"]["parts"][1]["text"] == "again"

    lost = results["no-trailing-blank-line"]
    assert not lost["ok"]
    assert "unterminated final SSE event" in lost["error"]
    assert '"finish"' in lost["error"]
    assert [c["type"] for c in lost["chunks"]][-1] == "finish-step"

    delta = results["delta-without-start"]
    assert not delta["ok"]
    assert "UIMessageStreamError" in delta["error"]


@pytest.mark.parametrize("sdk", SDKS)
def test_bytes_are_passed_unchanged(sdk: int) -> None:
    body = sse([{"type": "start"}, *text_chunks("héllo ✓"), {"type": "finish"}]).encode()
    # Split a multi-byte character across the invalid/valid boundary: must still decode.
    (result,) = validate_sse([body], sdk)
    assert result["ok"], result
    assert result["message"]["parts"][1]["text"] == "héllo ✓"
    (bad,) = validate_sse([b'data: {"type":"start"\n\n'], sdk)
    assert not bad["ok"]
    assert "JSONParseError" in bad["error"]


# --------------------------------------------------------------------------------------------
# chat-driver.mjs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sdk", SDKS)
def test_plain_text_chat(server: CannedServer, sdk: int) -> None:
    result = drive_chat(spec(server, "text", steps=[{"send": "hi"}]), sdk)
    assert result["status"] == "ready", result
    assert result["error"] is None
    assert not result["loop"]
    assert not result["timeout"]
    user, assistant = result["messages"]
    assert user["role"] == "user"
    assert user["parts"] == [{"type": "text", "text": "hi"}]
    assert part_summary(assistant) == ["step-start", "text:done"]
    assert assistant["parts"][1]["text"] == "Hello world"
    (request,) = result["requests"]
    assert request["id"] == "chat-text"
    assert request["trigger"] == "submit-message"
    assert "messageId" not in request
    assert request["messages"] == [user]
    (response,) = result["responses"]
    assert response["status"] == 200
    assert response["sse"] == sse(TEXT_REPLY)
    assert result["toolCalls"] == []
    # What the client sent is what the server got.
    assert [b for _, b in server.received] == result["requests"]
    # The recorded SSE text round-trips through the validator.
    (check,) = validate_sse([response["sse"]], sdk)
    assert check["ok"]


@pytest.mark.parametrize("sdk", SDKS)
def test_server_tool_chat(server: CannedServer, sdk: int) -> None:
    result = drive_chat(spec(server, "server-tool", steps=[{"send": "weather?"}]), sdk)
    assert result["status"] == "ready", result
    assert len(result["requests"]) == 1
    assistant = result["messages"][-1]
    assert part_summary(assistant) == [
        "step-start",
        "tool-get_weather:output-available",
        "step-start",
        "text:done",
    ]
    assert assistant["parts"][1]["output"] == {"temp": 21}
    # onToolCall fires for a server tool without providerExecuted; the driver only records it.
    assert result["toolCalls"] == [
        {
            "toolName": "get_weather",
            "toolCallId": "call_w",
            "input": {"city": "Paris"},
            "atRequest": 0,
            "handled": False,
        }
    ]


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(
    ("answer", "expected_text"),
    [
        ({"output": {"playing": "track 2"}}, "Now playing track 2."),
        ({"errorText": "muted"}, "Could not change the music: muted"),
    ],
)
def test_client_tool_chat(
    server: CannedServer, sdk: int, answer: dict[str, Any], expected_text: str
) -> None:
    result = drive_chat(
        spec(
            server,
            "client-tool",
            sendAutomaticallyWhen="toolCalls",
            clientTools={"change_bgm": answer},
            steps=[{"send": "play track 2"}],
        ),
        sdk,
    )
    assert result["status"] == "ready", result
    assert not result["loop"]
    first, second = result["requests"]
    assert "messageId" not in first
    assistant = result["messages"][-1]
    assert len(result["messages"]) == 2
    # The automatic resend continues the assistant message that holds the tool result.
    assert second["trigger"] == "submit-message"
    assert second["messageId"] == assistant["id"]
    sent_part = tool_parts(second["messages"][-1], "change_bgm")[0]
    state = "output-error" if "errorText" in answer else "output-available"
    assert sent_part["state"] == state
    assert part_summary(assistant) == [
        "step-start",
        f"tool-change_bgm:{state}",
        "step-start",
        "text:done",
    ]
    assert assistant["parts"][-1]["text"] == expected_text
    (call,) = result["toolCalls"]
    assert call == {
        "toolName": "change_bgm",
        "toolCallId": "call_bgm",
        "input": {"track": 2},
        "atRequest": 0,
        "handled": True,
    }


@pytest.mark.parametrize("sdk", SDKS)
def test_approval_chain(server: CannedServer, sdk: int) -> None:
    result = drive_chat(
        spec(
            server,
            "approval-chain",
            sendAutomaticallyWhen="or",
            approvals={"process_payment": [True, {"approved": False, "reason": "too much"}]},
            steps=[{"send": "pay twice"}],
        ),
        sdk,
    )
    assert result["status"] == "ready", result
    assert not result["loop"]
    assert len(result["messages"]) == 2
    assistant = result["messages"][-1]
    assert part_summary(assistant) == [
        "step-start",
        "tool-process_payment:output-available",
        "step-start",
        "tool-process_payment:output-denied",
        "step-start",
        "text:done",
    ]
    paid, denied = assistant["parts"][1], assistant["parts"][3]
    assert paid["approval"] == {"id": "appr_call_1", "approved": True}
    assert paid["output"] == {"paid": 10}
    assert denied["approval"] == {"id": "appr_call_2", "approved": False, "reason": "too much"}

    first, second, third = result["requests"]
    assert "messageId" not in first
    for request, call_id, approved in ((second, "call_1", True), (third, "call_2", False)):
        assert request["messageId"] == assistant["id"]
        sent = [
            p
            for p in tool_parts(request["messages"][-1], "process_payment")
            if p["toolCallId"] == call_id
        ]
        assert sent[0]["state"] == "approval-responded"
        assert sent[0]["approval"]["approved"] is approved
    assert [(a["toolCallId"], a["approved"], a["afterRequest"]) for a in result["approvals"]] == [
        ("call_1", True, 0),
        ("call_2", False, 1),
    ]


@pytest.mark.parametrize("sdk", SDKS)
def test_explicit_steps(server: CannedServer, sdk: int) -> None:
    """addToolOutput as a step (auto-resend); approve + manual continuation with no helper."""
    tool = drive_chat(
        spec(
            server,
            "client-tool",
            sendAutomaticallyWhen="toolCalls",
            steps=[
                {"send": "play"},
                {"addToolOutput": {"tool": "change_bgm", "output": {"playing": "x"}}},
            ],
        ),
        sdk,
    )
    assert tool["status"] == "ready", tool
    assert len(tool["requests"]) == 2
    assert tool["toolCalls"][0]["handled"] is False
    assert tool["messages"][-1]["parts"][-1]["text"] == "Now playing x."

    manual = drive_chat(
        spec(
            server,
            "approval-chain",
            sendAutomaticallyWhen="none",
            steps=[
                {"send": "pay"},
                {"approve": {"tool": "process_payment", "approved": True}},
                {"send": None},
                {"approve": {"tool": "process_payment", "approved": False, "reason": "no"}},
                {"send": None},
            ],
        ),
        sdk,
    )
    assert manual["status"] == "ready", manual
    assert len(manual["requests"]) == 3
    assert manual["autoSendChecks"] == []
    assert [r.get("messageId") for r in manual["requests"]] == [
        None,
        manual["messages"][-1]["id"],
        manual["messages"][-1]["id"],
    ]
    assert part_summary(manual["messages"][-1])[-1] == "text:done"


@pytest.mark.parametrize("sdk", SDKS)
def test_loop_guard(server: CannedServer, sdk: int) -> None:
    result = drive_chat(
        spec(
            server,
            "unresolved-approval",
            sendAutomaticallyWhen="approvals",
            approvals={"process_payment": [True]},
            maxRequests=4,
            steps=[{"send": "pay"}],
        ),
        sdk,
    )
    assert result["loop"] is True
    assert len(result["requests"]) == 4
    assert not result["timeout"]


@pytest.mark.parametrize("sdk", SDKS)
def test_http_error_is_reported(server: CannedServer, sdk: int) -> None:
    result = drive_chat(spec(server, "http-500", steps=[{"send": "hi"}]), sdk)
    assert result["status"] == "error"
    assert result["error"] == "internal boom"
    assert result["responses"] == [
        {
            "method": "POST",
            "url": f"{server.base}/chat/http-500",
            "status": 500,
            "contentType": "text/plain",
            "body": "internal boom",
        }
    ]


@pytest.mark.parametrize("sdk", SDKS)
def test_timeout_prints_partial_result(server: CannedServer, sdk: int) -> None:
    result = drive_chat(spec(server, "hang", timeoutMs=1500, steps=[{"send": "hi"}]), sdk)
    assert result["timeout"] is True
    assert len(result["requests"]) == 1
    assert result["responses"][0]["sse"].startswith('data: {"type":"start"}')


@pytest.mark.parametrize("sdk", SDKS)
def test_reload_then_send(server: CannedServer, sdk: int) -> None:
    result = drive_chat(
        spec(
            server,
            "stored-text",
            chatId="c-reload",
            steps=[
                {"send": "first"},
                {"reload": f"{server.base}/messages/c-reload"},
                {"send": "second"},
            ],
        ),
        sdk,
    )
    assert result["status"] == "ready", result
    assert result["reloads"] == [
        {"url": f"{server.base}/messages/c-reload", "status": 200, "messageCount": 2}
    ]
    first, second = result["requests"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][1]["id"] == "srv-1"
    assert second["messages"][0] == first["messages"][0]
    assert [m["id"] for m in result["messages"]] == [
        *[m["id"] for m in second["messages"]],
        "srv-2",
    ]


@pytest.mark.parametrize("sdk", SDKS)
async def test_async_variants(server: CannedServer, sdk: int) -> None:
    """The *_async wrappers run node in a worker thread (for servers on the test's loop)."""
    result = await drive_chat_async(spec(server, "text", steps=[{"send": "hi"}]), sdk)
    assert result["status"] == "ready"
    (check,) = await validate_sse_async([result["responses"][0]["sse"]], sdk)
    assert check["ok"]


@pytest.mark.parametrize("sdk", SDKS)
def test_bad_step_raises(server: CannedServer, sdk: int) -> None:
    with pytest.raises(NodeHarnessError, match="exactly one of"):
        drive_chat(spec(server, "text", steps=[{"jump": 1}]), sdk)


# --------------------------------------------------------------------------------------------
# chat-driver.mjs in live mode (WebSocket): "ws" (stock, ai@7) and "ws-js" (a served module)
# --------------------------------------------------------------------------------------------


def live_spec(
    live: LiveServer, http: CannedServer, transport: str, scenario: str, **extra: Any
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "transport": transport,
        "wsUrl": live.url(scenario),
        "chatId": f"chat-{scenario}",
        "headers": {"Cookie": COOKIE},
        "idleMs": 200,
        "timeoutMs": 15000,
        **extra,
    }
    if transport == "ws-js":
        result["transportJsUrl"] = f"{http.base}/transport.js"
    return result


def frame_types(result: dict[str, Any]) -> list[str]:
    return [f"{f['dir']}:{f['frame']['type']}" for f in result["frames"]]


def answer_frames(chunks: list[Chunk]) -> list[str]:
    return ["in:start", *["in:chunk"] * len(chunks), "in:end"]


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
def test_live_plain_text(live: LiveServer, server: CannedServer, transport: str, sdk: int) -> None:
    result = drive_chat(
        live_spec(
            live,
            server,
            transport,
            "text",
            wsParams={"session": "s1"},
            body={"extra": 1},
            steps=[{"send": "hi"}],
        ),
        sdk,
    )
    assert result["status"] == "ready", result
    assert result["error"] is None
    assert result["transport"] == transport
    assert not result["loop"]
    assert not result["timeout"]
    user, assistant = result["messages"]
    assert user["parts"] == [{"type": "text", "text": "hi"}]
    assert part_summary(assistant) == ["step-start", "text:done"]
    assert assistant["parts"][1]["text"] == "Hello world"

    (request,) = result["requests"]
    assert request["type"] == "send"
    assert request["id"] == "chat-text"
    assert request["trigger"] == "submit-message"
    assert "messageId" not in request
    assert request["messages"] == [user]
    assert request["body"] == {"extra": 1}
    assert request["headers"] == {}  # the cookie travels in the handshake only
    assert result["responses"] == []

    # Every frame is recorded, in order; the server got exactly the frames sent.
    assert frame_types(result) == ["out:send", *answer_frames(TEXT_REPLY)]
    assert result["frames"][0]["frame"] == request
    chunks = [f["frame"] for f in result["frames"] if f["frame"]["type"] == "chunk"]
    assert [c["sequence"] for c in chunks] == list(range(len(TEXT_REPLY)))
    assert [c["chunk"] for c in chunks] == TEXT_REPLY
    assert live.received == [f["frame"] for f in result["frames"] if f["dir"] == "out"]

    # The cookie arrived in the opening handshake; params became the query.
    (handshake,) = live.handshakes
    assert handshake["cookie"] == COOKIE
    path = urlsplit(handshake["path"])
    assert path.path == "/live/text"
    assert parse_qs(path.query) == {"session": ["s1"]}
    (socket,) = result["sockets"]
    assert socket["url"] == f"{live.url('text')}?session=s1"
    assert socket["opened"] is True
    assert socket["error"] is None
    assert socket["closeCode"] == 1000  # closed by the driver at the end, cleanly
    if transport == "ws-js":
        module = result["transportModule"]
        assert module["status"] == 200
        assert module["contentType"] == "text/javascript"
        assert module["bytes"] == STAND_IN_TRANSPORT.stat().st_size
    else:
        assert result["transportModule"] is None


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
@pytest.mark.parametrize(("approved", "text"), [(True, "Paid."), (False, "Not paid.")])
def test_live_approval_round_trip(
    live: LiveServer, server: CannedServer, transport: str, sdk: int, approved: bool, text: str
) -> None:
    result = drive_chat(
        live_spec(
            live,
            server,
            transport,
            "approval-once",
            approvals={"process_payment": [approved]},
            steps=[{"send": "pay 10"}],
        ),
        sdk,
    )
    assert result["status"] == "ready", result
    assert not result["loop"]
    assert len(result["messages"]) == 2
    assistant = result["messages"][-1]
    state = "output-available" if approved else "output-denied"
    assert part_summary(assistant) == [
        "step-start",
        f"tool-process_payment:{state}",
        "step-start",
        "text:done",
    ]
    assert assistant["parts"][1]["approval"] == {"id": "appr_call_1", "approved": approved}
    assert assistant["parts"][-1]["text"] == text

    first, second = result["requests"]
    assert "messageId" not in first
    assert second["messageId"] == assistant["id"]
    (sent,) = tool_parts(second["messages"][-1], "process_payment")
    assert sent["state"] == "approval-responded"
    assert sent["approval"]["approved"] is approved
    assert [(a["toolCallId"], a["approved"], a["afterRequest"]) for a in result["approvals"]] == [
        ("call_1", approved, 0)
    ]
    first_answer = scenario_approval_once(first)
    assert isinstance(first_answer, list)
    approval_chunks = [
        f["frame"]["chunk"]["type"] for f in result["frames"] if f["frame"]["type"] == "chunk"
    ]
    assert "tool-approval-request" in approval_chunks
    expected_start = ["out:send", *answer_frames(first_answer), "out:send"]
    assert frame_types(result)[: len(expected_start)] == expected_start
    assert frame_types(result)[-1] == "in:end"
    # Both requests used the one connection.
    assert len(result["sockets"]) == 1
    assert len(live.handshakes) == 1


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
def test_live_client_tool(live: LiveServer, server: CannedServer, transport: str, sdk: int) -> None:
    result = drive_chat(
        live_spec(
            live,
            server,
            transport,
            "client-tool",
            sendAutomaticallyWhen="toolCalls",
            clientTools={"change_bgm": {"output": {"playing": "track 2"}}},
            steps=[{"send": "play track 2"}],
        ),
        sdk,
    )
    assert result["status"] == "ready", result
    assert len(result["requests"]) == 2
    assert result["messages"][-1]["parts"][-1]["text"] == "Now playing track 2."
    assert [(c["toolName"], c["atRequest"], c["handled"]) for c in result["toolCalls"]] == [
        ("change_bgm", 0, True)
    ]


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
def test_live_error_frame(live: LiveServer, server: CannedServer, transport: str, sdk: int) -> None:
    result = drive_chat(live_spec(live, server, transport, "http-500", steps=[{"send": "hi"}]), sdk)
    assert result["status"] == "error"
    assert result["error"] == "internal boom"
    assert frame_types(result) == ["out:send", "in:start", "in:error"]
    assert result["frames"][-1]["frame"]["errorText"] == "internal boom"
    assert [f["isError"] for f in result["finishes"]] == [True]
    assert result["sockets"][0]["closeCode"] == 1000  # an error frame keeps the socket


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
def test_live_resume(live: LiveServer, server: CannedServer, transport: str, sdk: int) -> None:
    nothing = drive_chat(live_spec(live, server, transport, "text", steps=[{"resume": True}]), sdk)
    assert nothing["status"] == "ready", nothing
    assert nothing["messages"] == []
    assert nothing["requests"] == []  # only send frames count as requests
    assert frame_types(nothing) == ["out:resume", "in:no-active"]
    resume = nothing["frames"][0]["frame"]
    assert resume["id"] == "chat-text"
    assert resume.get("lastSequence") is None

    replay = drive_chat(live_spec(live, server, transport, "replay", steps=[{"resume": True}]), sdk)
    assert replay["status"] == "ready", replay
    (assistant,) = replay["messages"]
    assert assistant["id"] == "replayed"
    assert part_summary(assistant) == ["step-start", "text:done"]
    assert assistant["parts"][1]["text"] == "Hello world"


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
def test_live_timeout_aborts(
    live: LiveServer, server: CannedServer, transport: str, sdk: int
) -> None:
    result = drive_chat(
        live_spec(live, server, transport, "hang", timeoutMs=1500, steps=[{"send": "hi"}]), sdk
    )
    assert result["timeout"] is True
    assert len(result["requests"]) == 1
    # chat.stop() on timeout: the transport tells the server with an abort frame.
    assert frame_types(result) == ["out:send", "in:start", "in:chunk", "out:abort"]
    abort = result["frames"][-1]["frame"]
    assert abort == {"type": "abort", "requestId": result["requests"][0]["requestId"]}
    assert result["sockets"][0]["closeCode"] == 1000


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
def test_live_loop_guard(live: LiveServer, server: CannedServer, transport: str, sdk: int) -> None:
    result = drive_chat(
        live_spec(
            live,
            server,
            transport,
            "unresolved-approval",
            sendAutomaticallyWhen="approvals",
            approvals={"process_payment": [True]},
            maxRequests=3,
            steps=[{"send": "pay"}],
        ),
        sdk,
    )
    assert result["loop"] is True
    assert not result["timeout"]
    assert len(result["requests"]) == 3
    assert frame_types(result).count("out:send") == 3
    assert len([f for f in live.received if f["type"] == "send"]) == 3


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
def test_live_reload_opens_a_new_connection(
    live: LiveServer, server: CannedServer, transport: str, sdk: int
) -> None:
    result = drive_chat(
        live_spec(
            live,
            server,
            transport,
            "text",
            steps=[
                {"send": "first"},
                {"reload": f"{server.base}/messages/unknown-chat"},
                {"send": "second"},
            ],
        ),
        sdk,
    )
    assert result["status"] == "ready", result
    assert result["reloads"][0]["messageCount"] == 0
    assert [len(r["messages"]) for r in result["requests"]] == [1, 1]
    assert [s["closeCode"] for s in result["sockets"]] == [1000, 1000]
    assert [h["cookie"] for h in live.handshakes] == [COOKIE, COOKIE]


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
def test_live_handshake_refused(
    live: LiveServer, server: CannedServer, transport: str, sdk: int
) -> None:
    spec_ = live_spec(live, server, transport, "text", steps=[{"send": "hi"}])
    spec_["headers"] = {}
    result = drive_chat(spec_, sdk)
    assert result["status"] == "error"
    assert result["requests"] == []
    (socket,) = result["sockets"]
    assert socket["opened"] is False
    assert "403" in socket["error"]
    assert live.handshakes == [{"path": "/live/text", "cookie": None}]


@pytest.mark.parametrize(("transport", "sdk"), LIVE)
async def test_live_async_variant(
    live: LiveServer, server: CannedServer, transport: str, sdk: int
) -> None:
    spec_ = live_spec(live, server, transport, "text", steps=[{"send": "hi"}])
    result = await drive_chat_async(spec_, sdk)
    assert result["status"] == "ready", result


def test_ws_transport_needs_sdk7(live: LiveServer, server: CannedServer) -> None:
    with pytest.raises(NodeHarnessError, match="needs ai@7"):
        drive_chat(live_spec(live, server, "ws", "text", steps=[{"send": "hi"}]), 6)


@pytest.mark.parametrize("sdk", SDKS)
def test_ws_js_missing_module(live: LiveServer, server: CannedServer, sdk: int) -> None:
    spec_ = live_spec(live, server, "ws-js", "text", steps=[{"send": "hi"}])
    spec_["transportJsUrl"] = f"{server.base}/missing.js"
    with pytest.raises(NodeHarnessError, match=r"cannot load the transport module.*404"):
        drive_chat(spec_, sdk)


def test_live_spec_is_checked(live: LiveServer, server: CannedServer) -> None:
    with pytest.raises(NodeHarnessError, match="wsUrl is required"):
        drive_chat({"transport": "ws", "steps": []}, 7)
    with pytest.raises(NodeHarnessError, match="transportJsUrl is required"):
        drive_chat({"transport": "ws-js", "wsUrl": live.url("text")}, 7)
    with pytest.raises(NodeHarnessError, match=r"spec\.transport must be"):
        drive_chat({"transport": "carrier-pigeon", "api": f"{server.base}/chat/text"}, 7)
