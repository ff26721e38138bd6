"""Regenerate and edit over SSE: a user message the chat already has is answered anew after the
session is rewound to before it (``Runner.rewind_async``), so the model's context and the
history show the new branch only — through the ASGI client and the real ai@6/ai@7 ``Chat``."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
from google.genai import types

from adk_asgi import AdkApp
from adk_asgi.testing import Text, demo_model, read_ui_message
from demo_app import build_agent
from tests.e2e.node_client import drive_chat_async
from tests.live.test_live_connection import open_live, serve
from tests.support import answer, counter, parse_sse, scripted_agent

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
    return AdkApp(agent, message_id_factory=counter("msg"), identify=lambda c: "u"), seen


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


class Browser:
    def __init__(self, app: AdkApp) -> None:
        transport = httpx.ASGITransport(app=app)
        self.http = httpx.AsyncClient(transport=transport, base_url="http://t")
        self.messages: list[dict[str, Any]] = []

    async def post(self, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post("/chat", json={"id": "chat-1", **body})

    async def send(self, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """``sendMessage``: ``message`` appended, or (``messageId``) put in its place."""
        edited = extra.get("messageId")
        if edited is not None:
            index = next(i for i, m in enumerate(self.messages) if m["id"] == edited)
            self.messages = self.messages[:index]
        self.messages.append(message)
        return await self._answer({"messages": self.messages, "trigger": "submit-message", **extra})

    async def regenerate(self) -> dict[str, Any]:
        """``regenerate()``: the last assistant message goes, its user message is sent again."""
        last = self.messages.pop()
        body = {"messages": self.messages, "trigger": "regenerate-message", "messageId": last["id"]}
        return await self._answer(body)

    async def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.post(body)
        assert response.status_code == 200, response.text
        answer = read_ui_message(parse_sse(response.content))
        self.messages.append(answer)
        return answer

    async def history(self) -> list[dict[str, Any]]:
        response = await self.http.get("/chat/chat-1/messages")
        assert response.status_code == 200, response.text
        messages: list[dict[str, Any]] = response.json()
        return messages

    async def title(self) -> str:
        [chat] = (await self.http.get("/chats")).json()
        title: str = chat["title"]
        return title


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["type"] == "text"]


async def test_regenerate_answers_the_last_message_anew_and_forgets_the_old_answer() -> None:
    app, seen = numbered_answers()
    browser = Browser(app)
    first = await browser.send(user("u1", "hello"))
    again = await browser.regenerate()
    assert (texts(first), texts(again)) == (["1: hello"], ["2: hello"])
    assert again["id"] != first["id"]
    assert seen[-1] == ["hello"]  # the model never saw its first answer
    assert await browser.history() == browser.messages == [user("u1", "hello"), again]


async def test_an_edited_earlier_message_takes_the_chat_back_to_it() -> None:
    app, seen = numbered_answers()
    browser = Browser(app)
    await browser.send(user("u1", "first"))
    await browser.send(user("u2", "second"))
    assert seen[-1] == ["first", "1: first", "second"]
    edited = await browser.send(user("u1", "first, edited"), messageId="u1")
    assert texts(edited) == ["3: first, edited"]
    assert seen[-1] == ["first, edited"]
    assert await browser.history() == browser.messages == [user("u1", "first, edited"), edited]
    assert await browser.title() == "first, edited"  # the chat's name went back with it


async def test_a_payment_waiting_for_approval_is_gone_with_a_regenerated_turn() -> None:
    app = AdkApp(build_agent(demo_model()), identify=lambda c: "u")
    browser = Browser(app)
    paused = await browser.send(user("u1", "pay 5 to alice"))
    assert paused["parts"][1]["state"] == "approval-requested"
    stale = [user("u1", "pay 5 to alice"), paused]
    again = await browser.regenerate()
    assert again["parts"][1]["state"] == "approval-requested"
    assert again["parts"][1]["toolCallId"] != paused["parts"][1]["toolCallId"]
    # the first card cannot be answered any more
    paused["parts"][1] = {
        **paused["parts"][1],
        "state": "approval-responded",
        "approval": {**paused["parts"][1]["approval"], "approved": True},
    }
    late = await browser.post({"messages": stale, "trigger": "submit-message"})
    assert late.status_code == 409
    assert await browser.history() == browser.messages


async def test_an_answer_that_went_on_after_an_approval_can_be_regenerated() -> None:
    """The approval's answer is stored in the invocation of the message it continues (ADK
    resumes it): it is not a second user message, as a live connection's are. Regenerating
    such an answer was a 409 "was sent live"."""
    app = AdkApp(build_agent(demo_model()), identify=lambda c: "u")
    browser = Browser(app)
    paused = await browser.send(user("u1", "pay 5 to alice"))
    call = paused["parts"][1]
    answer(paused, "process_payment", approved=True)  # addToolApprovalResponse
    response = await browser.post({"messages": browser.messages, "trigger": "submit-message"})
    assert response.status_code == 200, response.text
    paid = browser.messages[-1] = read_ui_message(parse_sse(response.content), paused)
    assert paid["parts"][1]["state"] == "output-available"
    again = await browser.regenerate()
    assert again["parts"][1]["state"] == "approval-requested"
    assert again["parts"][1]["toolCallId"] != call["toolCallId"]
    assert await browser.history() == browser.messages


async def test_a_message_sent_on_a_live_connection_with_others_cannot_be_redone_over_sse() -> None:
    """A live connection is one invocation: ADK would rewind every message of it, so
    regenerating one of them is refused with the reason, and nothing changes."""
    app = AdkApp(build_agent(demo_model()), identify=lambda c: "u")
    async with serve(app) as url:
        live, socket = await open_live(url, "chat-1")
        async with socket:
            await live.turn("hello")
            await live.turn("hello again")
        browser = Browser(app)
        before = await browser.history()
        response = await browser.post(
            {"messages": before[:1], "trigger": "regenerate-message", "messageId": "u1"}
        )
        assert (response.status_code, response.json()) == (
            409,
            {"error": "message 'u1' was sent live: it cannot be redone"},
        )
        assert await browser.history() == before


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
