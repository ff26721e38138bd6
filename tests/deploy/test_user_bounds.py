"""One browser cannot starve the others: per-user bounds (live sockets, chat requests, a chat's
files), on by default, against real uvicorn servers.

The bounds themselves are pinned on a server in this event loop (so a tool can hold a request
open until the test lets it go); what they protect, other users' chats answered while one user
holds everything a browser can hold, and idle live sockets that pin no database connection, on
a uvicorn process on PostgreSQL and on SQLite (tests/deploy/payment_app.py, the app's own
locks). The time-to-first-text figure is measured side by side in bench/starvation.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
from collections.abc import Iterator
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.genai import types
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from adk_asgi import AdkApp
from adk_asgi.serving.user_bounds import UserBounds
from adk_asgi.testing import Call, Text
from tests.deploy.test_restarts import answers_hello, live_request
from tests.servers import in_loop_uvicorn, uvicorn_server
from tests.streams import server_tool_step, text_step
from tests.support import normalize_ids, parse_sse, scripted_agent, user_body

pytestmark = pytest.mark.backing

SOCKETS_REFUSED = "too many live sockets at once: a user may have 8 open; try again later"
REQUESTS_REFUSED = "too many chat requests at once: a user may have 4 open; try again later"


def holding_agent(release: asyncio.Event) -> LlmAgent:
    """Answers "Done." once its ``hold`` tool returns, which it does when ``release`` is set:
    a request held open for as long as the test wants."""

    async def hold() -> str:
        await release.wait()
        return "released"

    def respond(contents: list[types.Content]) -> Any:
        last = (contents[-1].parts or [])[-1]
        return [Text("Done.")] if last.function_response else [Call("hold", {})]

    return scripted_agent(responder=respond, tools=[hold])


def cookie(user: str) -> dict[str, str]:
    """The default identity's cookie of the browser ``user`` (its user id: :func:`uid`)."""
    return {"cookie": f"adk_asgi_uid={user:_<32}"}


def uid(user: str) -> str:
    return f"browser:{user:_<32}"


def ws(base: str) -> str:
    return base.replace("http://", "ws://", 1) + "/live"


async def close_reason(socket: ClientConnection) -> tuple[int | None, str | None]:
    """How the server closed ``socket`` (it sends nothing first)."""
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(socket.recv(), 10)
    return socket.close_code, socket.close_reason


async def test_a_users_live_sockets_past_the_bound_are_closed_1013_with_the_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = AdkApp(scripted_agent(responder=lambda _: [Text("Hi.")]))
    async with in_loop_uvicorn(app) as base, AsyncExitStack() as stack:
        url = ws(base)
        alices = [
            await stack.enter_async_context(connect(url, additional_headers=cookie("alice")))
            for _ in range(8)
        ]

        async def refused() -> tuple[int | None, str | None]:
            async with connect(url, additional_headers=cookie("alice")) as past:
                return await close_reason(past)

        with caplog.at_level(logging.WARNING, logger="adk_asgi"):
            assert (
                await asyncio.gather(*(refused() for _ in range(3)))
                == [(1013, SOCKETS_REFUSED)] * 3
            )
        refusals = [r.getMessage() for r in caplog.records if "over a bound" in r.getMessage()]
        assert refusals == [  # one line, however many refusals follow within a minute
            "adk_asgi: refused a user over a bound (8 live sockets at once): "
            f"user {uid('alice')!r}; 0 other refusals since the last line"
        ]
        async with connect(url, additional_headers=cookie("bob")) as bob:  # another user
            assert _hi(await live_request(bob, "bob-chat", [_user("hi")]))
        await alices[0].close()
        for _ in range(200):  # the server counts the close once it has read it
            if app.services.user_load.held(uid("alice")) == (7, 0):
                break
            await asyncio.sleep(0.01)
        async with connect(url, additional_headers=cookie("alice")) as again:
            assert _hi(await live_request(again, "alice-chat", [_user("hi")]))
    assert app.services.user_load.held(uid("alice")) == (0, 0)


async def test_a_users_chat_requests_past_the_bound_get_429_and_other_users_are_answered() -> None:
    release = asyncio.Event()
    app = AdkApp(holding_agent(release))
    async with in_loop_uvicorn(app) as base, httpx.AsyncClient(base_url=base) as client:

        async def send(user: str, chat_id: str) -> httpx.Response:
            body = user_body("hold", chat_id=chat_id)
            return await client.post("/chat", json=body, headers=cookie(user), timeout=30)

        held = [asyncio.create_task(send("alice", f"chat-{n}")) for n in range(4)]
        for _ in range(500):  # each one's tool holds it
            if app.services.user_load.held(uid("alice")) == (0, 4):
                break
            await asyncio.sleep(0.01)
        refused = await send("alice", "chat-5")
        assert (refused.status_code, refused.json()) == (429, {"error": REQUESTS_REFUSED})
        other = asyncio.create_task(send("bob", "chat-1"))
        for _ in range(500):
            if app.services.user_load.held(uid("bob")) == (0, 1):
                break
            await asyncio.sleep(0.01)
        release.set()
        answers = await asyncio.gather(*held, other)
        assert [r.status_code for r in answers] == [200] * 5
        assert all(_done(parse_sse(r.text)) for r in answers)
        again = await send("alice", "chat-5")  # all ended: counted no more
        assert again.status_code == 200 and _done(parse_sse(again.text))
    assert app.services.user_load.held(uid("alice")) == (0, 0)


async def test_a_chats_files_past_the_bound_get_413_and_the_chat_goes_on() -> None:
    app = AdkApp(
        scripted_agent(responder=lambda _: [Text("Got it.")]),
        user_bounds=UserBounds(chat_files=1000),
    )
    async with in_loop_uvicorn(app) as base, httpx.AsyncClient(base_url=base) as client:
        first = await client.post("/chat", json=_with_file("chat-1", "u1", 600))
        assert first.status_code == 200
        second = await client.post("/chat", json=_with_file("chat-1", "u2", 600))
        assert (second.status_code, second.json()) == (413, {"error": FILES_REFUSED})
        third = await client.post("/chat", json=user_body("and now?", "chat-1", "u3"))
        assert third.status_code == 200 and _got_it(parse_sse(third.text))
        other = await client.post("/chat", json=_with_file("chat-2", "u1", 600))
        assert other.status_code == 200  # a bound per chat

        user = {"cookie": "; ".join(f"{k}={v}" for k, v in client.cookies.items())}
        async with connect(ws(base) + "?chatId=live-1", additional_headers=user) as live:
            assert _got_it(await live_request(live, "live-1", [_file_message("u1", 600)]))
            await live.send(json.dumps(_send("r2", "live-1", [_file_message("u2", 600)])))
            assert json.loads(await live.recv()) == {
                "type": "error",
                "requestId": "r2",
                "errorText": FILES_REFUSED,
            }
            assert _got_it(await live_request(live, "live-1", [_user("and now?", "u3")]))


FILES_REFUSED = (
    "this chat holds 0.0 MiB of files and a chat may hold 0.0 MiB: send fewer or smaller "
    "files, or start a new chat"
)


# --- what the bounds protect: other users, on a uvicorn process and a real database -------

APP = "tests.deploy.payment_app:app"


@pytest.fixture(scope="module", params=["postgres", "sqlite"])
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One worker on PostgreSQL or SQLite sessions, locked by the app's own default."""
    root = tmp_path_factory.mktemp(f"bounds-{request.param}")
    if request.param == "postgres":
        postgres: Any = request.getfixturevalue("postgres")
        db_url = postgres.create_database(f"bounds_{secrets.token_hex(4)}").url
    else:
        db_url = f"sqlite-native:{root / 'sessions.db'}"
    env = {"PAYMENT_DB_URL": db_url, "PAYMENT_LOCKS": "default", "PAYMENT_LEDGER": str(root / "l")}
    with uvicorn_server(APP, env=env, ready_path="/ready", args=["--lifespan", "on"]) as base:
        yield base + "/agent"


IDLE_BATCH = 6
"""Idle sockets opened (each answered once) at a time."""


async def test_sixty_idle_live_sockets_leave_the_next_users_message_answered_at_once(
    deployment: str,
) -> None:
    """Sixty users each keep a live socket open on a chat, idle after one answer. Each holds
    its chat's lock; on PostgreSQL that was one pooled connection each (fifty at most), so the
    next user's message waited busy_timeout (30 s) and got 409. Now a held chat pins nothing."""
    async with AsyncExitStack() as stack:

        async def idle(n: int) -> None:
            headers = {"x-user": f"user-{n}"}
            socket = await stack.enter_async_context(
                connect(ws(deployment) + f"?chatId=idle-{n}", additional_headers=headers)
            )
            answers_hello(await live_request(socket, f"idle-{n}", [_user("hello")]))

        for batch in range(0, 60, IDLE_BATCH):  # (sixty first answers at once on one SQLite
            # file wait on its write lock past ADK's 5 s busy timeout on a loaded machine)
            await asyncio.gather(*(idle(n) for n in range(batch, batch + IDLE_BATCH)))
        async with httpx.AsyncClient(base_url=deployment, timeout=60) as client:
            body = user_body("hello", chat_id="next")
            response = await client.post("/chat", json=body, headers={"x-user": "next"})
        assert response.status_code == 200, response.text
        answers_hello(parse_sse(response.text))
        headers = {"x-user": "next-live"}
        async with connect(ws(deployment) + "?chatId=c", additional_headers=headers) as live:
            answers_hello(await live_request(live, "c", [_user("hello")]))


async def test_one_user_with_a_hundred_sockets_and_a_flood_leaves_others_answered(
    deployment: str,
) -> None:
    """One user opens 100 live sockets and floods chat requests; 8 sockets stay open (the
    rest are closed 1013), every request is answered or refused 429, and another user's
    messages, SSE and live, are answered meanwhile, whole."""
    attacker = {"x-user": "mallory"}
    async with (
        AsyncExitStack() as stack,
        httpx.AsyncClient(base_url=deployment, timeout=60) as client,
    ):

        async def socket() -> tuple[int | None, str | None] | None:
            opened = await stack.enter_async_context(
                connect(ws(deployment), additional_headers=attacker)
            )
            try:
                await asyncio.wait_for(opened.recv(), 6.0)  # (a refusal waits 1-4 s)
            except TimeoutError:
                return None  # still open
            except ConnectionClosed:
                pass
            return opened.close_code, opened.close_reason

        closes = await asyncio.gather(*(socket() for _ in range(100)))
        assert sorted(closes, key=str).count(None) == 8
        assert {c for c in closes if c is not None} == {(1013, SOCKETS_REFUSED)}

        async def flood(n: int) -> int:
            body = user_body("hello", chat_id=f"flood-{n}")
            return (await client.post("/chat", json=body, headers=attacker)).status_code

        flooding = asyncio.gather(*(flood(n) for n in range(60)))
        victim = await client.post("/chat", json=user_body("hello", "v"), headers={"x-user": "v"})
        assert victim.status_code == 200
        answers_hello(parse_sse(victim.text))
        async with connect(
            ws(deployment) + "?chatId=w", additional_headers={"x-user": "w"}
        ) as live:
            answers_hello(await live_request(live, "w", [_user("hello")]))
        statuses = await flooding
        assert set(statuses) <= {200, 429} and 429 in statuses


# --- helpers -------------------------------------------------------------------------------


def _user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def _file_message(message_id: str, size: int) -> dict[str, Any]:
    data = base64.b64encode(b"x" * size).decode()
    file = {"type": "file", "mediaType": "text/plain", "url": f"data:text/plain;base64,{data}"}
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": "a file"}, file]}


def _with_file(chat_id: str, message_id: str, size: int) -> dict[str, Any]:
    return {
        "id": chat_id,
        "messages": [_file_message(message_id, size)],
        "trigger": "submit-message",
    }


def _send(request_id: str, chat_id: str, messages: list[Any]) -> dict[str, Any]:
    return {
        "type": "send",
        "requestId": request_id,
        "id": chat_id,
        "messages": messages,
        "trigger": "submit-message",
        "body": {},
    }


def _answered(chunks: list[dict[str, Any]], text: str) -> bool:
    """``chunks`` are one step's answer ``text``, whole (its deltas grouped as they came)."""
    said = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    return said == text and normalize_ids([c for c in chunks if c["type"] != "text-delta"]) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def _hi(chunks: list[dict[str, Any]]) -> bool:
    return _answered(chunks, "Hi.")


def _got_it(chunks: list[dict[str, Any]]) -> bool:
    return _answered(chunks, "Got it.")


HELD_AND_DONE = [
    {"type": "start", "messageId": "<msg1>"},
    *server_tool_step("<call1>", "hold", {}, "released"),
    *text_step("<block1>", ["Done."]),
    {"type": "finish", "finishReason": "stop"},
]


def _done(chunks: list[dict[str, Any]]) -> bool:
    return normalize_ids(chunks) == HELD_AND_DONE
