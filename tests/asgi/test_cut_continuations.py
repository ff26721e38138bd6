"""What ran is recorded: a client that leaves mid-answer never stops the run between a tool's
run and its stored result (adk_asgi/serving/finish_tools.py).

Through the ASGI app, with a client that reads a few pieces of the body and leaves: the
payment tool counts its runs, and after every cut the chat's history must say exactly what
ran — ``output-available`` with the tool's result — and a replay of the answer is a ``409``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types

from adk_asgi import AdkApp, Messages, Streaming
from adk_asgi.serving.finish_tools import NOT_RUN, FinishRanTools, stored
from adk_asgi.serving.pace import RunSignal, paced_by
from adk_asgi.testing import Call, ChatClient, Text, demo_model, read_ui_message
from tests.asgi.test_disconnect import http_scope
from tests.asgi.test_hitl import CLOSING_ALICE, PAY_ALICE, SENT_ALICE
from tests.servers import uvicorn_server
from tests.support import answer, counter, parse_sse, scripted_agent

PAYMENT_APP = "tests.deploy.payment_app:app"

ROUNDS = 30


async def cut_after(app: AdkApp, body: dict[str, Any], pieces: int) -> list[bytes]:
    """POST ``body`` to ``app`` as a client that leaves once it has read ``pieces`` pieces of
    the response body; returns what it read. Returns when the app is done with the request."""
    incoming = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]
    gone = asyncio.Event()
    read: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if gone.is_set():
            raise OSError("the client is gone")
        if message["type"] == "http.response.body":
            read.append(message["body"])
            if len(read) == pieces:
                gone.set()

    await asyncio.wait_for(app(http_scope(), receive, send), timeout=30)
    return read


class Payments:
    """The demo's payment agent (tests/asgi/test_hitl.py's ``Demo``), its runs counted by
    chat, on an ASGI client."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()

        def process_payment(
            amount: float, recipient: str, tool_context: Any, currency: str = "USD"
        ) -> dict[str, Any]:
            """Send money."""
            self.runs[tool_context.session.id] += 1
            return {"status": "sent", "amount": amount, "recipient": recipient}

        agent = LlmAgent(
            name="demo_agent",
            model=demo_model(id_factory=counter("call_"), chunk_size=200),
            tools=[FunctionTool(process_payment, require_confirmation=True)],
        )
        self.app = AdkApp(
            agent, identify=lambda c: "alice", streaming=Streaming(sse_write_interval=0)
        )
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://t"
        )

    async def approval_body(self, chat_id: str) -> dict[str, Any]:
        """Ask for a payment on a page; the continuation that approves it, not sent."""
        page = ChatClient(
            http=self.client, chat_id=chat_id, id_factory=counter("u"), send_automatically_when=None
        )
        asked = await page.send("pay 5 to alice")
        assert asked.status == 200, asked.error
        assert await page.approve("process_payment") is None
        return page.submit_body()

    async def history(self, chat_id: str) -> list[dict[str, Any]]:
        response = await self.client.get(f"/chat/{chat_id}/messages")
        assert response.status_code == 200, response.text
        messages: list[dict[str, Any]] = response.json()
        return messages


def paid(call_id: str, approval_id: str) -> dict[str, Any]:
    return {
        "type": "tool-process_payment",
        "toolCallId": call_id,
        "state": "output-available",
        "input": PAY_ALICE,
        "output": SENT_ALICE,
        "approval": {"id": approval_id, "approved": True},
    }


def closing_as_far_as_it_went(parts: list[dict[str, Any]]) -> bool:
    """After the payment: nothing, or the model's closing sentence as far as it was streamed
    when the run stopped (an answer cut short is kept as it was shown)."""
    if not parts:
        return True
    match parts:
        case [{"type": "step-start"}, {"type": "text", "text": str(text), "state": "done"}]:
            return bool(text) and CLOSING_ALICE.startswith(text)
    return False


@pytest.mark.parametrize("pieces", [1, 2, 3])
async def test_an_approval_cut_after_1_2_or_3_pieces_runs_the_payment_once_and_stores_it(
    pieces: int,
) -> None:
    payments = Payments()
    async with payments.client:
        problems = []
        for round_ in range(ROUNDS):
            chat_id = f"chat-{round_}"
            body = await payments.approval_body(chat_id)
            card = body["messages"][1]["parts"][1]
            call_id, approval_id = card["toolCallId"], card["approval"]["id"]
            read = await cut_after(payments.app, body, pieces)
            replay = await payments.client.post("/chat", json=body)
            history = await payments.history(chat_id)
            tool_and_rest = history[1]["parts"][:2], history[1]["parts"][2:]
            outcome = (
                payments.runs[chat_id],
                tool_and_rest[0],
                closing_as_far_as_it_went(tool_and_rest[1]),
                replay.status_code,
                replay.json(),
                len(read) == pieces,
            )
            expected = (
                1,
                [{"type": "step-start"}, paid(call_id, approval_id)],
                True,
                409,
                {"error": f"approval {approval_id!r} is not open in this chat"},
                True,
            )
            if outcome != expected:
                problems.append((round_, outcome))
        assert problems == []


async def test_a_client_that_leaves_while_a_tool_runs_finds_its_result_stored() -> None:
    """The disconnect arrives while the tool runs (as it does on a real server when the tool
    takes a while): ADK would stop taking events at once, and drop the tool's result."""
    left = asyncio.Event()
    runs: list[str] = []

    async def get_weather(city: str) -> dict[str, Any]:
        """The weather."""
        runs.append(city)
        left.set()  # the client leaves now; the tool goes on
        for _ in range(5):
            await asyncio.sleep(0)
        return {"city": city, "forecast": "sunny"}

    agent = scripted_agent(
        [[Call("get_weather", {"city": "Paris"})], [Text("It is sunny in Paris.")]],
        tools=[get_weather],
    )
    app = AdkApp(
        agent, identify=lambda c: "u", messages=Messages(message_id_factory=counter("msg"))
    )
    body = {
        "id": "chat-1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather?"}]}],
    }
    incoming = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if left.is_set():
            raise OSError("the client is gone")

    await asyncio.wait_for(app(http_scope(), receive, send), timeout=30)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        history = (await c.get("/chat/chat-1/messages")).json()
    assert runs == ["Paris"]
    assert history[1] == {
        "id": "msg1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-get_weather",
                "toolCallId": "call_1",
                "state": "output-available",
                "input": {"city": "Paris"},
                "output": {"city": "Paris", "forecast": "sunny"},
                "providerExecuted": True,
            },
        ],
    }


# --- against a real server --------------------------------------------------------------------


@pytest.fixture(scope="module")
def payment_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """tests/deploy/payment_app.py under uvicorn, on SQLite, its model streaming slowly: the
    disconnect reaches the server when it does on a real network, not when a test says."""
    root = tmp_path_factory.mktemp("cut")
    ledger = root / "ledger.txt"
    env = {
        "PAYMENT_DB_URL": f"sqlite+aiosqlite:///{root / 'sessions.db'}",
        "PAYMENT_LEDGER": str(ledger),
        "PAYMENT_SLOW": "1",
    }
    with uvicorn_server(PAYMENT_APP, env=env, ready_path="/ready") as base:
        yield base + "/agent", ledger


async def read_and_leave(client: httpx.AsyncClient, url: str, body: Any, events: int) -> int:
    """POST ``body`` and close the connection once ``events`` SSE events were read."""
    read = 0
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                read += 1
                if read == events:
                    break
    return read


@pytest.mark.e2e
@pytest.mark.parametrize("events", [1, 2, 3])
async def test_an_approval_cut_after_1_2_or_3_events_on_uvicorn_stores_the_payment_it_ran(
    payment_server: tuple[str, Path], events: int
) -> None:
    base, ledger = payment_server
    problems = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(40.0)) as client:
        for round_ in range(ROUNDS):
            chat_id = f"cut{events}-{round_}-{secrets.token_hex(3)}"
            user = {
                "id": "u1",
                "role": "user",
                "parts": [{"type": "text", "text": "pay 5 to alice"}],
            }
            first = await client.post(f"{base}/chat", json={"id": chat_id, "messages": [user]})
            assistant = read_ui_message(parse_sse(first.content))
            card = assistant["parts"][1]
            answer(assistant, "process_payment", approved=True)
            body = {
                "id": chat_id,
                "messages": [user, assistant],
                "trigger": "submit-message",
                "messageId": assistant["id"],
            }
            read = await read_and_leave(client, f"{base}/chat", body, events)
            replay = await client.post(f"{base}/chat", json=body)  # (waits for the run's lock)
            history = (await client.get(f"{base}/chat/{chat_id}/messages")).json()
            lines = ledger.read_text().splitlines() if ledger.exists() else []
            runs = [line for line in lines if line.split(" ", 1)[0] == chat_id]
            outcome = (
                read,
                len(runs),
                history[1]["parts"][:2],
                closing_as_far_as_it_went(history[1]["parts"][2:]),
                replay.status_code,
            )
            expected = (
                events,
                1,
                [{"type": "step-start"}, paid(card["toolCallId"], card["approval"]["id"])],
                True,
                409,
            )
            if outcome != expected:
                problems.append((round_, outcome))
    assert problems == []


async def test_an_abort_held_for_a_tool_takes_effect_when_its_result_is_stored() -> None:
    signal = RunSignal()
    signal.hold("call_1", "call_2")
    signal.set()  # the client left
    assert (signal.stop_asked, signal.is_set(), signal.reader_ready.is_set()) == (True, False, True)
    with paced_by(signal):
        stored(Event(author="a", content=types.Content(parts=[answered("call_1")])))
        assert not signal.is_set()  # call_2's result is not stored yet
        stored(Event(author="a", content=types.Content(parts=[answered("call_2")])))
    assert signal.is_set()
    signal.hold("call_3")  # too late: ADK already stops
    assert signal.is_set()


async def test_a_tool_that_would_start_after_the_run_stopped_is_not_run() -> None:
    signal = RunSignal()
    signal.set()
    with paced_by(signal):
        refused = await FinishRanTools().before_tool_callback(
            tool=None,  # type: ignore[arg-type]  # (the plugin does not read it)
            tool_args={},
            tool_context=SimpleNamespace(function_call_id="call_1"),  # type: ignore[arg-type]
        )
    assert refused == {"error": NOT_RUN}


@pytest.mark.parametrize(("result", "holds"), [(None, False), ({}, False), ({"id": 7}, True)])
async def test_a_long_running_tool_that_returns_nothing_holds_no_abort(
    result: dict[str, Any] | None, holds: bool
) -> None:
    """Its call stays open for the app (``AdkApp.answer_call``): no result will be stored to
    release it, so a client that leaves must not wait for one (a closed live socket kept its
    session for ``live_detached_timeout`` before). A value it returns is stored, and holds."""
    plugin = FinishRanTools()
    context: Any = SimpleNamespace(function_call_id="call_1")
    back_office = LongRunningFunctionTool(func=lambda: None)
    signal = RunSignal()
    with paced_by(signal):
        await plugin.before_tool_callback(tool=back_office, tool_args={}, tool_context=context)
        await plugin.after_tool_callback(
            tool=back_office,
            tool_args={},
            tool_context=context,
            result=result,  # type: ignore[arg-type]  # (ADK passes what the tool returned)
        )
    signal.set()  # the client left
    assert signal.is_set() is not holds


def answered(call_id: str) -> types.Part:
    return types.Part(function_response=types.FunctionResponse(id=call_id, name="t", response={}))
