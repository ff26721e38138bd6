"""Regenerate and edit over SSE: a user message the chat already has is answered anew after the
session is rewound to before it (``Runner.rewind_async``), so the model's context and the
history show the new branch only — through the ASGI client and the real ai@6/ai@7 ``Chat``."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
from google.genai import types

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import ChatClient, Text, demo_model
from demo_app import build_agent
from tests.e2e.node_client import drive_chat_async
from tests.live.live_socket import serve
from tests.support import answer, counter, scripted_agent

pytestmark = pytest.mark.asyncio


def numbered_answers() -> tuple[AdkApp, list[list[str]]]:
    """An app whose model answers "<n>: <last user text>", and what each model call saw."""
    seen: list[list[str]] = []
    calls = itertools.count(1)

    def respond(contents: list[types.Content]) -> list[Text]:
        texts = [p.text for c in contents for p in c.parts or [] if p.text]
        seen.append(texts)
        return [Text(f"{next(calls)}: {texts[-1]}")]

    agent = scripted_agent(responder=respond, chunk_size=50)
    return AdkApp(
        agent, messages=Messages(message_id_factory=counter("msg")), identify=lambda c: "u"
    ), seen


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def browser(app: AdkApp) -> ChatClient:
    """The stock client on chat-1, its message ids u1, u2…"""
    return ChatClient(app, chat_id="chat-1", id_factory=counter("u"))


async def title(chat: ChatClient) -> str:
    [listed] = (await chat.http.get("/chats")).json()
    name: str = listed["title"]
    return name


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["type"] == "text"]


async def test_regenerate_answers_the_last_message_anew_and_forgets_the_old_answer() -> None:
    app, seen = numbered_answers()
    async with browser(app) as chat:
        first = (await chat.send("hello")).message
        regenerated = await chat.regenerate()
        assert regenerated.body == {
            "id": "chat-1",
            "messages": [user("u1", "hello")],
            "trigger": "regenerate-message",
        }
        again = regenerated.message
        assert first is not None and again is not None
        assert (texts(first), texts(again)) == (["1: hello"], ["2: hello"])
        assert again["id"] != first["id"]
        assert seen[-1] == ["hello"]  # the model never saw its first answer
        assert await chat.history() == chat.messages == [user("u1", "hello"), again]


async def test_an_edited_earlier_message_takes_the_chat_back_to_it() -> None:
    app, seen = numbered_answers()
    async with browser(app) as chat:
        await chat.send("first")
        await chat.send("second")
        assert seen[-1] == ["first", "1: first", "second"]
        reply = await chat.send("first, edited", message_id="u1")
        assert reply.body == {
            "id": "chat-1",
            "messages": [user("u1", "first, edited")],
            "trigger": "submit-message",
            "messageId": "u1",
        }
        edited = reply.message
        assert edited is not None and texts(edited) == ["3: first, edited"]
        assert seen[-1] == ["first, edited"]
        assert await chat.history() == chat.messages == [user("u1", "first, edited"), edited]
        assert await title(chat) == "first, edited"  # the chat's name went back with it


async def test_a_payment_waiting_for_approval_is_gone_with_a_regenerated_turn() -> None:
    app = AdkApp(build_agent(demo_model()), identify=lambda c: "u")
    async with browser(app) as chat:
        paused = (await chat.send("pay 5 to alice")).message
        assert paused is not None and paused["parts"][1]["state"] == "approval-requested"
        stale = [user("u1", "pay 5 to alice"), paused]
        again = (await chat.regenerate()).message
        assert again is not None and again["parts"][1]["state"] == "approval-requested"
        assert again["parts"][1]["toolCallId"] != paused["parts"][1]["toolCallId"]
        # the first card cannot be answered any more (a tab that still shows it, say)
        answer(paused, "process_payment", approved=True)
        late = await chat.http.post(
            "/chat", json={"id": "chat-1", "messages": stale, "trigger": "submit-message"}
        )
        assert late.status_code == 409
        assert await chat.history() == chat.messages


async def test_an_answer_that_went_on_after_an_approval_can_be_regenerated() -> None:
    """The approval's answer is stored in the invocation of the message it continues (ADK
    resumes it): it is not a second user message, as a live connection's are. Regenerating
    such an answer was a 409 "was sent live"."""
    app = AdkApp(build_agent(demo_model()), identify=lambda c: "u")
    async with browser(app) as chat:
        paused = (await chat.send("pay 5 to alice")).message
        assert paused is not None
        call = paused["parts"][1]
        approved = await chat.approve("process_payment")
        assert approved is not None and approved.status == 200, approved
        paid = approved.message
        assert paid is not None and paid["parts"][1]["state"] == "output-available"
        again = (await chat.regenerate()).message
        assert again is not None and again["parts"][1]["state"] == "approval-requested"
        assert again["parts"][1]["toolCallId"] != call["toolCallId"]
        assert await chat.history() == chat.messages


async def test_a_message_sent_on_a_live_connection_with_others_cannot_be_redone_over_sse() -> None:
    """A live connection is one invocation: ADK would rewind every message of it, so
    regenerating one of them is refused with the reason, and nothing changes."""
    app = AdkApp(build_agent(demo_model()), identify=lambda c: "u")
    async with ChatClient(app, transport="live", chat_id="chat-1", id_factory=counter("u")) as live:
        await live.send("hello")
        await live.send("hello again")
    async with browser(app) as chat:
        before = await chat.history()
        chat.messages = list(before)  # a reloaded page
        refused = await chat.regenerate("u1")
        assert (refused.status, refused.error, refused.body["messages"]) == (
            409,
            "message 'u1' was sent live: it cannot be redone",
            before[:1],
        )
        assert await chat.history() == before


@pytest.mark.e2e
@pytest.mark.parametrize("sdk", [6, 7])
async def test_the_ai_sdk_chat_regenerates_an_answer(sdk: int) -> None:
    app, seen = numbered_answers()
    async with serve(app) as url:
        base = url.replace("ws://", "http://").removesuffix("/live")
        spec = {
            "transport": "sse",
            "api": f"{base}/chat",
            "chatId": "chat-1",
            "steps": [{"send": "hello"}, {"regenerate": {}}],
        }
        report = await drive_chat_async(spec, sdk)
        async with httpx.AsyncClient() as client:
            history = (await client.get(f"{base}/chat/chat-1/messages")).json()
    assert (report["status"], report["error"]) == ("ready", None)
    assert [r["status"] for r in report["responses"]] == [200, 200]
    assert [r["trigger"] for r in report["requests"]] == ["submit-message", "regenerate-message"]
    answered = report["messages"][1]
    assert texts(answered) == ["2: hello"]
    assert seen[-1] == ["hello"]
    assert history == report["messages"]
