"""A request reads its chat's session once: the bridge's checks read it, and ADK's ``Runner``
is handed that object instead of reading every event again (adk_asgi/serving/session_handover.py).
The chats still run as before, approvals included."""

from __future__ import annotations

from typing import Any

from google.adk.agents.run_config import RunConfig
from google.adk.sessions.base_session_service import GetSessionConfig

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import ChatClient, demo_model
from demo_app import build_agent
from tests.support import CountedSessions, counter

PAID = {"status": "sent", "amount": 5, "recipient": "alice", "currency": "USD"}


def demo_app(sessions: CountedSessions, **options: Any) -> AdkApp:
    agent = build_agent(demo_model(id_factory=counter("call_"), chunk_size=200))
    return AdkApp(
        agent,
        session_service=sessions,
        messages=Messages(message_id_factory=counter("msg")),
        **options,
    )


async def test_each_request_reads_its_session_once() -> None:
    sessions = CountedSessions()
    async with ChatClient(demo_app(sessions), chat_id="chat-1") as chat:
        await chat.send("hi")
        assert sessions.reads["chat-1"] == 1  # it used to be 2: the checks', then the Runner's
        asked = await chat.send("pay 5 to alice")
        assert sessions.reads["chat-1"] == 2
        assert [c["type"] for c in asked.chunks].count("tool-approval-request") == 1
        paid = await chat.approve("process_payment")
        assert sessions.reads["chat-1"] == 3
        outputs = [c["output"] for c in paid.chunks if c["type"] == "tool-output-available"]
        assert outputs == [PAID]  # the payment ran, once, on the session it was checked on
        await chat.send("hi")
        assert sessions.reads["chat-1"] == 4
        history = await chat.history()
    assert [m["role"] for m in history] == ["user", "assistant"] * 3


async def test_a_run_config_that_reads_fewer_events_reads_its_own() -> None:
    """``get_session_config`` asks ADK for part of the session: the Runner's read is its own."""
    sessions = CountedSessions()
    run_config = RunConfig(get_session_config=GetSessionConfig(num_recent_events=10))
    async with ChatClient(demo_app(sessions, run_config=run_config), chat_id="chat-1") as chat:
        reply = await chat.send("hi")
    assert reply.text
    assert sessions.reads["chat-1"] == 2
