"""A payment waiting for approval survives its server: ``kill -9`` of the only worker while the
approval is pending, a new server process on the same database, and the approval completes
once — over SSE and over live — or, if the user moves on, the next message is answered and
the payment never runs. Real uvicorn processes (tests/deploy/payment_app.py) on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from adk_asgi.hitl.outcomes import INTERRUPTED
from adk_asgi.testing import read_ui_message
from tests.asgi.test_hitl import CLOSING_ALICE, PAY_ALICE
from tests.deploy.on_gemini import on_gemini
from tests.deploy.test_double_approval import APPROVED_STREAM as PAID
from tests.e2e.node_client import drive_chat
from tests.live.live_chunks import HELLO
from tests.servers import uvicorn_server
from tests.streams import approval_asked
from tests.support import answer, normalize_ids, parse_sse

pytestmark = pytest.mark.backing

APP = "tests.deploy.payment_app:app"
PAUSED = approval_asked("process_payment", PAY_ALICE)


class Deployment:
    """One server process at a time on one database; :meth:`crash` is ``kill -9``."""

    def __init__(self, db_url: str, root: Path) -> None:
        self.ledger = root / "ledger.txt"
        self.env = {
            "PAYMENT_DB_URL": db_url,
            "PAYMENT_LOCKS": "process",
            "PAYMENT_LEDGER": str(self.ledger),
        }

    @contextmanager
    def server(self, *, stall: bool = False) -> Iterator[str]:
        """A worker; with ``stall``, one whose bank never answers a payment."""
        env = self.env | {"PAYMENT_STALL": "1"} if stall else self.env
        with uvicorn_server(APP, env=env, ready_path="/ready", args=["--lifespan", "on"]) as base:
            yield base

    def crash(self, base: str) -> None:
        os.kill(int(httpx.get(f"{base}/pid").text), signal.SIGKILL)

    def payments(self, chat_id: str) -> int:
        lines = self.ledger.read_text().splitlines() if self.ledger.exists() else []
        return sum(line.split()[0] == chat_id for line in lines)


@pytest.fixture(params=["sqlite", "postgres"])
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    """``sqlite`` or ``postgres`` sessions; ``…@gemini``: the agent on ADK's own ``Gemini``
    class, against the stand-in (in this process), which outlives the server's restarts."""
    database, _, model = request.param.partition("@")
    if database == "sqlite":
        deployed = Deployment(f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}", tmp_path)
    else:
        postgres: Any = request.getfixturevalue("postgres")
        url = postgres.create_database(f"restarts_{secrets.token_hex(4)}").url
        deployed = Deployment(url, tmp_path)
    if model != "gemini":
        yield deployed
        return
    with on_gemini(deployed.env, chunk_size=200):
        yield deployed


ON_BOTH_MODELS = pytest.mark.parametrize(
    "deployment", ["sqlite", "postgres", "postgres@gemini"], indirect=True
)
"""The approvals across a kill -9, on the scripted model and on the stand-in."""


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def history(base: str, chat_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{base}/agent/chat/{chat_id}/messages")
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()
    return messages


def tool_states(messages: list[dict[str, Any]]) -> list[str]:
    return [p["state"] for m in messages for p in m["parts"] if p["type"].startswith("tool-")]


async def live_request(socket: ClientConnection, chat_id: str, messages: list[Any]) -> list[Any]:
    """One ``send`` of the WebSocketChatTransport and the chunks of its response."""
    request_id = secrets.token_hex(4)
    frame = {"type": "send", "requestId": request_id, "id": chat_id, "messages": messages}
    await socket.send(json.dumps(frame | {"trigger": "submit-message", "body": {}}))
    chunks: list[dict[str, Any]] = []
    while True:
        message = json.loads(await socket.recv(decode=True))
        if message.get("requestId") != request_id:
            continue
        if message["type"] == "chunk":
            chunks.append(message["chunk"])
        elif message["type"] == "end":
            return chunks
        elif message["type"] != "start":
            raise AssertionError(message)


def answers_hello(chunks: list[dict[str, Any]]) -> None:
    """``chunks`` are the demo agent's whole answer to "hello", in one step."""
    deltas = [c["delta"] for c in chunks if c["type"] == "text-delta"]
    assert "".join(deltas) == HELLO
    assert normalize_ids([c for c in chunks if c["type"] != "text-delta"]) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def live_url(base: str, chat_id: str) -> str:
    return f"{base.replace('http', 'ws', 1)}/agent/live?chatId={chat_id}"


@ON_BOTH_MODELS
def test_an_sse_approval_pending_across_kill_9_completes_once(
    deployment: Deployment,
) -> None:
    chat_id = f"chat-{secrets.token_hex(4)}"
    with deployment.server() as base:
        body = {"id": chat_id, "messages": [user("pay 5 to alice")]}
        paused = parse_sse(httpx.post(f"{base}/agent/chat", json=body).content)
        assert normalize_ids(paused) == PAUSED
        deployment.crash(base)
    assistant = read_ui_message(paused)
    answer(assistant, "process_payment", approved=True)
    with deployment.server() as base:
        body = {"id": chat_id, "messages": [user("pay 5 to alice"), assistant]}
        response = httpx.post(f"{base}/agent/chat", json=body)
        assert response.status_code == 200, response.text
        assert normalize_ids(parse_sse(response.content)) == PAID
        again = httpx.post(f"{base}/agent/chat", json=body)  # a retry is refused
        assert again.status_code == 409
        assert tool_states(history(base, chat_id)) == ["output-available"]
    assert deployment.payments(chat_id) == 1


@ON_BOTH_MODELS
async def test_a_live_approval_pending_across_kill_9_completes_once(
    deployment: Deployment,
) -> None:
    chat_id = f"chat-{secrets.token_hex(4)}"
    with deployment.server() as base:
        async with connect(live_url(base, chat_id)) as socket:
            paused = await live_request(socket, chat_id, [user("pay 5 to alice")])
            assert normalize_ids(paused) == PAUSED
            deployment.crash(base)
    assistant = read_ui_message(paused)
    answer(assistant, "process_payment", approved=True)
    with deployment.server() as base:
        assert tool_states(history(base, chat_id)) == ["approval-requested"]
        async with connect(live_url(base, chat_id)) as socket:
            paid = await live_request(socket, chat_id, [user("pay 5 to alice"), assistant])
        assert normalize_ids(paid) == PAID
        assert paid[0]["messageId"] == assistant["id"]
        assert tool_states(history(base, chat_id)) == ["output-available"]
    assert deployment.payments(chat_id) == 1


async def test_after_kill_9_mid_approval_the_next_message_is_answered(
    deployment: Deployment,
) -> None:
    """The user moves on instead: the payment is closed unanswered (a denial for the model)
    before the model sees the history, so the model answers the new message and issues no
    payment of its own."""
    chat_id = f"chat-{secrets.token_hex(4)}"
    with deployment.server() as base:
        async with connect(live_url(base, chat_id)) as socket:
            await live_request(socket, chat_id, [user("pay 5 to alice")])
            deployment.crash(base)
    with deployment.server() as base:
        async with connect(live_url(base, chat_id)) as socket:
            hello = await live_request(socket, chat_id, [user("hello", "u2")])
        answers_hello(hello)
        assert tool_states(history(base, chat_id)) == ["output-error"]
    assert deployment.payments(chat_id) == 0


@pytest.mark.parametrize("mode", ["sse", "live"])
async def test_a_payment_cut_by_kill_9_while_it_ran_is_never_run_again(
    deployment: Deployment, mode: str
) -> None:
    """Approved, and the worker killed while the bank had the payment: its result was never
    stored. The next worker must not run it again (ADK's live flow ran every confirmed call
    it found without a result as ``run_live`` started: the payment ran twice). The user's
    next message is answered, and the payment is shown as interrupted."""
    chat_id = f"chat-{secrets.token_hex(4)}"
    asked = {"id": chat_id, "messages": [user("pay 5 to alice")]}
    async with httpx.AsyncClient(timeout=30) as client:
        with deployment.server(stall=True) as base:
            paused = parse_sse((await client.post(f"{base}/agent/chat", json=asked)).content)
            assistant = answer(read_ui_message(paused), "process_payment", approved=True)
            body = {"id": chat_id, "messages": [user("pay 5 to alice"), assistant]}
            approving = asyncio.create_task(client.post(f"{base}/agent/chat", json=body))
            for _ in range(1000):  # until the bank has the payment (10 s at most)
                if deployment.payments(chat_id) or approving.done():
                    break
                await asyncio.sleep(0.01)
            assert deployment.payments(chat_id) == 1
            deployment.crash(base)
            with pytest.raises(httpx.HTTPError):
                await approving
        with deployment.server() as base:
            hello = user("hello", "u2")
            if mode == "live":
                async with connect(live_url(base, chat_id)) as socket:
                    said = await live_request(socket, chat_id, [hello])
            else:
                body = {"id": chat_id, "messages": [user("pay 5 to alice"), assistant, hello]}
                said = parse_sse((await client.post(f"{base}/agent/chat", json=body)).content)
            answers_hello(said)
            messages = (await client.get(f"{base}/agent/chat/{chat_id}/messages")).json()
    payment = messages[1]["parts"][1]
    assert (payment["state"], payment["errorText"]) == ("output-error", INTERRUPTED["error"])
    assert deployment.payments(chat_id) == 1


CLIENTS = [("sse", 6), ("sse", 7), ("ws", 7), ("ws-js", 6)]


@pytest.mark.e2e
@pytest.mark.parametrize(("transport", "sdk"), CLIENTS, ids=[f"{t}-v{v}" for t, v in CLIENTS])
def test_the_ai_sdk_chat_approves_a_payment_its_server_died_with(
    tmp_path: Path, transport: str, sdk: int
) -> None:
    """The real ``Chat`` of ai@6 / ai@7: asked, the server killed (``kill -9``) and started
    again, the page reloaded, the payment approved with ``addToolApprovalResponse``: it runs
    once and the chat ends as if nothing had happened."""
    deployment = Deployment(f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}", tmp_path)
    chat_id = f"chat-{secrets.token_hex(4)}"

    def spec(base: str, *steps: Any) -> dict[str, Any]:
        return {
            "transport": transport,
            "api": f"{base}/agent/chat",
            "wsUrl": f"{base.replace('http', 'ws', 1)}/agent/live",
            "transportJsUrl": f"{base}/agent/transport.js",
            "chatId": chat_id,
            "headers": {},
            "steps": list(steps),
        }

    with deployment.server() as base:
        asked = drive_chat(spec(base, {"send": "pay 5 to alice"}), sdk)
        assert (asked["status"], asked["error"]) == ("ready", None)
        deployment.crash(base)
    with deployment.server() as base:
        reload = {"reload": f"{base}/agent/chat/{chat_id}/messages"}
        approve = {"approve": {"tool": "process_payment", "approved": True}}
        paid = drive_chat(spec(base, reload, approve), sdk)
        stored = history(base, chat_id)
    assert (paid["status"], paid["error"], len(paid["requests"])) == ("ready", None, 1)
    parts = [p["type"] for p in paid["messages"][1]["parts"]]
    assert parts == ["step-start", "tool-process_payment", "step-start", "text"]
    assert paid["messages"][1]["parts"][3]["text"] == CLOSING_ALICE
    assert tool_states(paid["messages"]) == tool_states(stored) == ["output-available"]
    assert deployment.payments(chat_id) == 1
