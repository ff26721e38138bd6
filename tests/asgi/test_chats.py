"""``GET /chats`` and ``DELETE /chat/{id}``: a user's chats for a history sidebar, scoped by
identity, through the ASGI client (and one live turn through a real server)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx

from adk_asgi import AdkApp
from adk_asgi.chats import BUSY_CHAT, UNKNOWN_CHAT
from adk_asgi.testing import Text
from tests.live.test_live_connection import open_live, serve
from tests.support import scripted_agent, user_body

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def app(delay: float = 0.0) -> AdkApp:
    answer = [Text("Sure, here it is.")]  # four deltas
    return AdkApp(scripted_agent(responder=lambda _: answer, delay=delay))


def browser(chat: AdkApp) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=chat)
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def chats(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get("/chats")
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()
    assert all(ISO.match(chat["updated"]) for chat in listed), listed
    return listed


async def test_a_users_chats_are_listed_newest_first_with_their_first_message_as_title() -> None:
    chat = app()
    async with browser(chat) as alice, browser(chat) as bob:
        await alice.post("/chat", json=user_body("Plan a trip to Lisbon", chat_id="trip"))
        await alice.post("/chat", json=user_body("  What's   for\ndinner? ", chat_id="food"))
        await bob.post("/chat", json=user_body("Bob's secret", chat_id="bobs"))
        second = user_body("And a hotel?", chat_id="trip", message_id="u2")
        await alice.post("/chat", json=second)  # the trip is the newest again; its title stays
        assert [(c["id"], c["title"]) for c in await chats(alice)] == [
            ("trip", "Plan a trip to Lisbon"),
            ("food", "What's for dinner?"),
        ]
        assert [(c["id"], c["title"]) for c in await chats(bob)] == [("bobs", "Bob's secret")]


async def test_a_long_first_message_is_cut_into_a_title() -> None:
    async with browser(app()) as client:
        await client.post("/chat", json=user_body("word " * 40, chat_id="long"))
        [listed] = await chats(client)
    assert listed["title"] == ("word " * 16).strip() + "…"
    assert len(listed["title"]) == 80


async def test_a_new_browser_has_no_chats() -> None:
    async with browser(app()) as client:
        assert await chats(client) == []


async def test_deleting_a_chat_removes_it_and_only_its_owner_can() -> None:
    chat = app()
    async with browser(chat) as alice, browser(chat) as bob:
        await alice.post("/chat", json=user_body("hi", chat_id="mine"))
        refused = await bob.delete("/chat/mine")
        assert (refused.status_code, refused.json()) == (404, {"error": UNKNOWN_CHAT})
        assert [c["id"] for c in await chats(alice)] == ["mine"]
        deleted = await alice.delete("/chat/mine")
        assert (deleted.status_code, deleted.content) == (204, b"")
        assert await chats(alice) == []
        again = await alice.delete("/chat/mine")
        assert (again.status_code, again.json()) == (404, {"error": UNKNOWN_CHAT})
        bad = await alice.delete("/chat/not%20an%20id")
        assert bad.status_code == 400


async def test_a_chat_that_is_answering_cannot_be_deleted() -> None:
    chat = app(delay=0.5)  # the answer takes 2 s: longer than a deletion waits
    async with browser(chat) as client:
        await chats(client)  # the browser has its identity cookie
        answering = asyncio.create_task(client.post("/chat", json=user_body("hi", "busy")))
        while not len(chat.locks):  # noqa: ASYNC110 (the run has taken the chat's lock)
            await asyncio.sleep(0.005)
        refused = await client.delete("/chat/busy")
        assert (refused.status_code, refused.json()) == (409, {"error": BUSY_CHAT})
        assert (await answering).status_code == 200
        assert (await client.delete("/chat/busy")).status_code == 204


async def test_a_chat_begun_over_live_is_titled_too() -> None:
    chat = app()
    async with serve(chat) as url:
        live, socket = await open_live(url)
        async with socket:
            await live.turn("Live from the kitchen")
            cookie = socket.request.headers["cookie"] if socket.request else ""
        base = url.replace("ws://", "http://").removesuffix("/live")
        async with httpx.AsyncClient() as client:
            listed = (await client.get(f"{base}/chats", headers={"cookie": cookie})).json()
    assert [(c["id"], c["title"]) for c in listed] == [(live.chat_id, "Live from the kitchen")]
