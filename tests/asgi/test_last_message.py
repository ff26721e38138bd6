"""``POST /chat`` with only the last message (``{id, message, trigger?, messageId?}``, the AI
SDK persistence guide's ``prepareSendMessagesRequest``) beside the whole chat (``{messages}``):
the session is the chat's truth, so a chat goes on, regenerates and is edited without the
client sending it back — through the ASGI client, exact bodies and streams."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
from google.genai import types

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import Text
from tests.asgi.test_regenerate import user
from tests.support import counter, parse_sse, scripted_agent

pytestmark = pytest.mark.asyncio

USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}


def numbered_answers() -> tuple[AdkApp, list[list[str]]]:
    """An app whose model answers "<n>: <every user text it saw>", and what each call saw."""
    seen: list[list[str]] = []
    calls = itertools.count(1)

    def respond(contents: list[types.Content]) -> list[Text]:
        texts = [p.text for c in contents for p in c.parts or [] if p.text]
        seen.append(texts)
        return [Text(f"{next(calls)}: {' / '.join(texts)}")]

    agent = scripted_agent(responder=respond, chunk_size=100)
    return AdkApp(
        agent, messages=Messages(message_id_factory=counter("msg")), identify=lambda c: "u"
    ), seen


def answered(message_id: str, text: str) -> list[dict[str, Any]]:
    """The whole stream of a one-text answer."""
    t = f"{message_id}-txt1"
    return [
        {"type": "start", "messageId": message_id},
        {"type": "start-step"},
        {"type": "text-start", "id": t},
        {"type": "text-delta", "id": t, "delta": text},
        {"type": "text-end", "id": t},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def assistant(message_id: str, text: str) -> dict[str, Any]:
    """An answer as history shows it."""
    return {
        "id": message_id,
        "role": "assistant",
        "parts": [{"type": "step-start"}, {"type": "text", "text": text, "state": "done"}],
    }


def client_for(app: AdkApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def post(client: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.post("/chat", json={"id": "chat-1", **body})
    assert response.status_code == 200, response.text
    return parse_sse(response.content)


async def history(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get("/chat/chat-1/messages")
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()
    return messages


async def test_a_chat_sent_one_message_at_a_time_goes_on_from_the_session() -> None:
    app, seen = numbered_answers()
    async with client_for(app) as client:
        first = await post(client, {"message": user("u1", "hello")})
        second = await post(client, {"message": user("u2", "and you?")})
        shown = await history(client)
    assert first == answered("msg1", "1: hello")
    assert second == answered("msg2", "2: hello / 1: hello / and you?")
    assert seen == [["hello"], ["hello", "1: hello", "and you?"]]
    assert shown == [
        user("u1", "hello"),
        assistant("msg1", "1: hello"),
        user("u2", "and you?"),
        assistant("msg2", "2: hello / 1: hello / and you?"),
    ]


async def test_the_guides_regenerate_sends_the_stored_user_message_again() -> None:
    # the persistence guide's snippet drops trigger and messageId: regenerate() sends
    # {id, message: <the user message before the answer it drops>}, which the session holds
    app, seen = numbered_answers()
    async with client_for(app) as client:
        await post(client, {"message": user("u1", "hello")})
        again = await post(client, {"message": user("u1", "hello")})
        shown = await history(client)
    assert again == answered("msg2", "2: hello")
    assert seen[-1] == ["hello"]  # the model never saw the first answer
    assert shown == [user("u1", "hello"), assistant("msg2", "2: hello")]


async def test_an_edit_sent_alone_takes_the_chat_back_to_the_edited_message() -> None:
    app, seen = numbered_answers()
    async with client_for(app) as client:
        await post(client, {"message": user("u1", "hello")})
        await post(client, {"message": user("u2", "and you?")})
        edited = await post(client, {"message": user("u1", "bonjour")})
        shown = await history(client)
    assert edited == answered("msg3", "3: bonjour")
    assert seen[-1] == ["bonjour"]
    assert shown == [user("u1", "bonjour"), assistant("msg3", "3: bonjour")]


@pytest.mark.parametrize(
    ("named", "extra"),
    [
        ("the answer", {"messageId": "msg2"}),
        ("its user message", {"messageId": "u2"}),
        ("nothing: the last", {}),
    ],
)
async def test_a_regenerate_with_no_message_answers_the_stored_one_anew(
    named: str, extra: dict[str, Any]
) -> None:
    app, seen = numbered_answers()
    async with client_for(app) as client:
        await post(client, {"message": user("u1", "hello")})
        await post(client, {"message": user("u2", "and you?")})
        again = await post(client, {"trigger": "regenerate-message", **extra})
        shown = await history(client)
    assert again == answered("msg3", "3: hello / 1: hello / and you?"), named
    assert seen[-1] == ["hello", "1: hello", "and you?"]
    assert shown == [
        user("u1", "hello"),
        assistant("msg1", "1: hello"),
        user("u2", "and you?"),
        assistant("msg3", "3: hello / 1: hello / and you?"),
    ]


async def test_a_regenerate_of_an_earlier_answer_by_its_id_drops_what_followed() -> None:
    app, seen = numbered_answers()
    async with client_for(app) as client:
        await post(client, {"message": user("u1", "hello")})
        await post(client, {"message": user("u2", "and you?")})
        again = await post(client, {"trigger": "regenerate-message", "messageId": "msg1"})
        shown = await history(client)
    assert again == answered("msg3", "3: hello")
    assert seen[-1] == ["hello"]
    assert shown == [user("u1", "hello"), assistant("msg3", "3: hello")]


async def test_a_regenerate_with_the_message_and_its_trigger() -> None:
    # the trigger-forwarding snippet: {id, message, trigger, messageId} (messageId: the answer)
    app, _ = numbered_answers()
    async with client_for(app) as client:
        await post(client, {"message": user("u1", "hello")})
        body = {"message": user("u1", "hello"), "trigger": "regenerate-message"}
        again = await post(client, {**body, "messageId": "msg1"})
        shown = await history(client)
    assert again == answered("msg2", "2: hello")
    assert shown == [user("u1", "hello"), assistant("msg2", "2: hello")]


BAD = {"id": "u1", "role": "user", "parts": [{"type": "video"}]}
GS_FILE = {"type": "file", "mediaType": "image/png", "url": "gs://bucket/cat.png"}


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        (
            {"id": "chat-1", "messages": [USER], "message": USER},
            400,
            "the request body has both 'messages' and 'message': send one",
        ),
        (
            {"id": "chat-1"},
            400,
            "the request body has no 'messages' (or 'message', the last one)",
        ),
        (
            {"id": "chat-1", "trigger": "submit-message", "messageId": "u1"},
            400,
            "the request body has no 'messages' (or 'message', the last one)",
        ),
        ({"id": "chat-1", "message": [USER]}, 400, "message: Expected `object`, got `array`"),
        ({"id": "chat-1", "message": None}, 400, "message: Expected `object`, got `null`"),
        ({"id": "chat-1", "message": "hello"}, 400, "message: Expected `object`, got `str`"),
        (
            {"id": "chat-1", "message": {"id": "u1", "parts": []}},
            400,
            "message: Object missing required field `role`",
        ),
        ({"id": "chat-1", "message": BAD}, 400, "message.parts[0]: unknown part type 'video'"),
        (
            {"id": "chat-1", "message": {**USER, "id": "u\n1"}},
            400,
            "message.id: an id is 1-256 characters, none of them a control character",
        ),
        (
            {"id": "chat-1", "message": {**USER, "role": "system"}},
            422,
            "the last message must be a user or assistant message",
        ),
        (
            {"id": "chat-1", "message": {**USER, "parts": [GS_FILE]}},
            422,
            "message.parts[0].url: gs: URLs are refused; only data: URLs and this chat's own "
            "uploads are accepted (the app allows others with Security(allowed_file_url=...))",
        ),
        (
            {"id": "chat-1", "message": USER, "trigger": "regenerate"},
            400,
            "trigger: Invalid enum value 'regenerate'",
        ),
        (
            {"id": "chat-1", "messages": [], "trigger": "regenerate-message"},
            400,
            "messages: the chat has no messages",
        ),
        (
            {"id": "chat-1", "trigger": "regenerate-message"},
            409,
            "this chat has no message to regenerate",
        ),
        (
            {"id": "chat-1", "trigger": "regenerate-message", "messageId": "msg9"},
            409,
            "this chat has no message 'msg9' to regenerate",
        ),
        (
            {"id": "chat-1", "trigger": "regenerate-message", "messageId": 7},
            400,
            "messageId: Expected `str | null`, got `int`",
        ),
    ],
)
async def test_a_body_of_the_wrong_shape_is_refused_with_its_reason(
    body: dict[str, Any], status: int, reason: str
) -> None:
    app, seen = numbered_answers()
    async with client_for(app) as client:
        response = await client.post("/chat", json=body)
    assert (response.status_code, response.json()) == (status, {"error": reason})
    assert seen == []
