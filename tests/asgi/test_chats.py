"""``GET /chats`` and ``DELETE /chat/{id}``: a user's chats for a history sidebar, scoped by
identity, through the ASGI client (and one chat begun over the live WebSocket)."""

from __future__ import annotations

import asyncio
import base64
import re
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
from google.adk.plugins.save_files_as_artifacts_plugin import SaveFilesAsArtifactsPlugin
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from adk_asgi import AdkApp, Stores
from adk_asgi.routes.chats import BUSY_CHAT, CHATS_PAGE, MAX_CHATS_PAGE, UNKNOWN_CHAT
from adk_asgi.routes.files import NO_FILE
from adk_asgi.stores.claims import InMemoryClaims
from adk_asgi.stores.redis_client import redis_from_url
from adk_asgi.stores.resumable import InMemoryStreamStore
from adk_asgi.stores.resumable_redis import RedisStreamStore
from adk_asgi.testing import ChatClient, Text, demo_model, read_ui_message
from tests.locks.test_claims import claim_rows
from tests.support import (
    SqliteSessionService,
    answer,
    counter,
    parse_sse,
    scripted_agent,
    user_body,
)

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


async def test_the_list_comes_a_page_at_a_time_newest_first_with_a_link_to_the_next() -> None:
    """It returned every chat of a user at once, with no bound. A page holds ``CHATS_PAGE``
    chats unless the page asks for ``limit``; ``Link`` names the next page while there is
    one, and a chat updated meanwhile does not shift the pages already read."""
    async with browser(app()) as client:
        for n in range(CHATS_PAGE + 3):
            await client.post("/chat", json=user_body(f"chat {n}", chat_id=f"c{n}"))
        first = await client.get("/chats")
        following = await client.get(next_page(first))
        assert next_page(following) is None
        assert [c["id"] for c in first.json() + following.json()] == [
            f"c{n}" for n in reversed(range(CHATS_PAGE + 3))
        ]
        assert len(first.json()) == CHATS_PAGE
        pages = [await client.get("/chats?limit=2")]
        await client.post("/chat", json=user_body("again", chat_id="c0", message_id="u2"))
        pages.append(await client.get(next_page(pages[0])))
    assert [[c["id"] for c in page.json()] for page in pages] == [
        [f"c{CHATS_PAGE + 2}", f"c{CHATS_PAGE + 1}"],
        [f"c{CHATS_PAGE}", f"c{CHATS_PAGE - 1}"],
    ]


def next_page(response: httpx.Response) -> str | None:
    assert response.status_code == 200, response.text
    link = response.headers.get("link")
    if link is None:
        return None
    found = re.fullmatch(r'<(/chats\?[^>]+)>; rel="next"', link)
    assert found is not None, link
    return found.group(1)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("limit=0", f"limit: a whole number from 1 to {MAX_CHATS_PAGE}"),
        (f"limit={MAX_CHATS_PAGE + 1}", f"limit: a whole number from 1 to {MAX_CHATS_PAGE}"),
        ("limit=-1", f"limit: a whole number from 1 to {MAX_CHATS_PAGE}"),
        ("limit=%C2%B2", f"limit: a whole number from 1 to {MAX_CHATS_PAGE}"),
        ("before=nope", "before: not a cursor this server gave"),
        ("before=%E2%9C%93", "before: not a cursor this server gave"),
        (
            "before=" + base64.urlsafe_b64encode(b'{"a": 1}').decode(),
            "before: not a cursor this server gave",
        ),
    ],
)
async def test_a_page_this_server_never_gave_is_a_400(query: str, reason: str) -> None:
    async with browser(app()) as client:
        response = await client.get(f"/chats?{query}")
    assert (response.status_code, response.json()) == (400, {"error": reason})


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
    async with ChatClient(app(), transport="live") as live:
        await live.send("Live from the kitchen")
        listed = await chats(live.http)  # (the same browser, over HTTP)
    assert [(c["id"], c["title"]) for c in listed] == [(live.id, "Live from the kitchen")]


# --- what a deleted chat leaves behind ---------------------------------------------------------

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PICTURE = {
    "type": "file",
    "mediaType": "image/png",
    "url": "data:image/png;base64," + base64.b64encode(PNG).decode(),
    "filename": "dot.png",
}


class FlakyArtifacts(InMemoryArtifactService):
    """An artifact service whose deletions fail while ``down`` is set, as a bucket that is
    briefly unreachable does."""

    down: bool = False

    async def delete_artifact(self, **where: Any) -> None:
        if self.down:
            raise ConnectionError("the artifact store went away")
        await super().delete_artifact(**where)


def uploads_app(artifacts: InMemoryArtifactService) -> AdkApp:
    return AdkApp(
        scripted_agent(responder=lambda _: [Text("A dot.")]),
        artifact_service=artifacts,
        plugins=[SaveFilesAsArtifactsPlugin()],
    )


async def send_picture(client: httpx.AsyncClient, chat_id: str) -> None:
    parts = [{"type": "text", "text": "what is this?"}, PICTURE]
    body = {"id": chat_id, "messages": [{"id": "u1", "role": "user", "parts": parts}]}
    assert (await client.post("/chat", json=body)).status_code == 200
    assert (await client.get(f"/chat/{chat_id}/files/dot.png")).content == PNG


async def test_deleting_a_chat_removes_its_uploads_so_a_new_chat_of_that_id_has_none() -> None:
    """The uploads outlived the chat: a new chat under the client's old id served them."""
    artifacts = InMemoryArtifactService()
    await artifacts.save_artifact(  # the user's own file, not the chat's: it stays
        app_name="test_agent",
        user_id="alice",
        filename="user:avatar.png",
        artifact=types.Part.from_bytes(data=PNG, mime_type="image/png"),
    )
    chat = uploads_app(artifacts)
    async with browser(chat) as client:
        await send_picture(client, "pics")
        assert (await client.delete("/chat/pics")).status_code == 204
        await client.post("/chat", json=user_body("hello again", chat_id="pics"))
        served = await client.get("/chat/pics/files/dot.png")
        history = (await client.get("/chat/pics/messages")).json()
    assert (served.status_code, served.json()) == (404, {"error": NO_FILE})
    assert [(m["role"], m["parts"]) for m in history] == [
        ("user", [{"type": "text", "text": "hello again"}]),
        (
            "assistant",
            [{"type": "step-start"}, {"type": "text", "text": "A dot.", "state": "done"}],
        ),
    ]
    assert artifacts.artifacts.keys() == {"test_agent/alice/user/user:avatar.png"}


async def test_a_deletion_that_fails_part_way_leaves_the_chat_to_delete_again() -> None:
    """Files go before the session: a failure leaves the chat listed, and deleting it again
    finishes the job; it never leaves files without a chat to delete them with."""
    artifacts = FlakyArtifacts()
    chat = uploads_app(artifacts)
    async with browser(chat) as client:
        await send_picture(client, "pics")
        artifacts.down = True
        failed = await client.delete("/chat/pics")
        assert (failed.status_code, failed.json()) == (
            503,
            {"error": "the chat could not be deleted completely (its uploads failed): try again"},
        )
        assert [c["id"] for c in await chats(client)] == ["pics"]
        artifacts.down = False
        assert (await client.delete("/chat/pics")).status_code == 204
        assert await chats(client) == []
    assert artifacts.artifacts == {}


async def approve_a_payment(client: httpx.AsyncClient, chat_id: str) -> None:
    """A chat whose payment the user approved: an answer claimed, and kept for resuming."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "pay 5 to alice"}]}
    asked = await client.post("/chat", json={"id": chat_id, "messages": [user]})
    assistant = answer(
        read_ui_message(parse_sse(asked.content)),
        "process_payment",
        approved=True,
    )
    body = {"id": chat_id, "messages": [user, assistant], "messageId": assistant["id"]}
    assert (await client.post("/chat", json=body)).status_code == 200


def payments_app(**options: Any) -> AdkApp:
    agent = LlmAgent(
        name="demo_agent",
        model=demo_model(id_factory=counter("call_"), chunk_size=200),
        tools=[FunctionTool(process_payment, require_confirmation=True)],
    )
    return AdkApp(agent, identify=lambda _: "alice", **options)


def process_payment(amount: float, recipient: str, currency: str = "USD") -> dict[str, Any]:
    """Send money."""
    return {"status": "sent", "amount": amount, "recipient": recipient}


async def test_deleting_a_chat_forgets_its_claims_and_its_kept_answers() -> None:
    store = InMemoryStreamStore()
    chat = payments_app(stores=Stores(streams=store))
    claims = chat.claims
    assert isinstance(claims, InMemoryClaims)
    async with browser(chat) as client:
        await approve_a_payment(client, "paid")
        await approve_a_payment(client, "other")
        assert (len(claims), len(store)) == (2, 4)
        assert (await client.delete("/chat/paid")).status_code == 204
        assert (len(claims), len(store)) == (1, 2)


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
async def test_deleting_a_chat_deletes_its_claim_rows(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The rows were kept: a new chat under the id found its answers taken already."""
    sessions: Any
    if database == "sqlite":
        sessions = SqliteSessionService(str(tmp_path / "sessions.db"))
    else:
        url = request.getfixturevalue("postgres").create_database(f"del_{secrets.token_hex(4)}")
        sessions = DatabaseSessionService(db_url=url.url)
    chat = payments_app(session_service=sessions)
    try:
        async with browser(chat) as client:
            await approve_a_payment(client, "paid")
            await approve_a_payment(client, "other")
            assert [row[2] for row in await claim_rows(chat.claims)] == ["other", "paid"]
            assert (await client.delete("/chat/paid")).status_code == 204
            assert [row[2] for row in await claim_rows(chat.claims)] == ["other"]
    finally:
        await chat.aclose()
        if isinstance(sessions, DatabaseSessionService):
            await sessions.close()


async def test_deleting_a_chat_deletes_its_answers_kept_in_redis(redis_url: str) -> None:
    prefix = f"test:{secrets.token_hex(4)}:"
    chat = AdkApp(
        scripted_agent(responder=lambda _: [Text("Hi.")]),
        stores=Stores(streams=RedisStreamStore(redis_url, prefix=prefix)),
        identify=lambda _: "alice",
    )
    redis = redis_from_url(redis_url)
    try:
        async with browser(chat) as client:
            await client.post("/chat", json=user_body("hi", chat_id="gone"))
            await client.post("/chat", json=user_body("hi", chat_id="kept"))
            assert len([name async for name in redis.scan_iter(f"{prefix}*")]) == 4
            assert (await client.delete("/chat/gone")).status_code == 204
            names = sorted([name.decode() async for name in redis.scan_iter(f"{prefix}*")])
    finally:
        await chat.aclose()
        await redis.aclose()
    assert [name.removeprefix(prefix).split(":")[0] for name in names] == ["chat", "data"]
    assert names[0] == f"{prefix}chat:test_agent\x1falice\x1fkept"
