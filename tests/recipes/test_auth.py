"""The authentication recipe (``examples/auth_app.py``, docs/mounting.md) under a real uvicorn, run
as a user runs it (tests/recipes/conftest.py).

The host's login gives the user; the agent's ``identify`` reads the session (a signed cookie, or
the same token as a bearer header or WebSocket subprotocol), so chats belong to the signed-in
user over SSE and the live socket alike, and nobody else can read or continue them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from tests.recipes.conftest import example_server
from tests.recipes.test_mounting import HELLO_TEXT, live_send, merge_deltas
from tests.support import parse_sse, user_body

pytestmark = pytest.mark.e2e

SECRET = "the-test-secret"
SESSION_SECONDS = 8 * 3600
REFUSED = {"error": "authentication required"}


def make_token(user: str, secret: bytes, expires_in: float = SESSION_SECONDS) -> str:
    """An HS256 JSON Web Token for ``user`` (RFC 7519, written here, not the recipe's own)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(b'{"alg":"HS256","typ":"JWT"}')
    claims = b64(json.dumps({"sub": user, "exp": int(time.time() + expires_in)}).encode())
    signature = hmac.new(secret, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64(signature)}"


@pytest.fixture(scope="module")
def base(wheel_python: Path, examples_copy: Path) -> Iterator[str]:
    with example_server(
        wheel_python, examples_copy, "auth_app:app", env={"AUTH_SECRET": SECRET}
    ) as url:
        yield url


@contextmanager
def login(base: str, username: str) -> Iterator[httpx.Client]:
    """A browser signed in as ``username`` (its cookie jar holds the session)."""
    with httpx.Client(base_url=base, timeout=30) as client:
        response = client.post(
            "/login", json={"username": username, "password": f"{username}-password"}
        )
        assert response.status_code == 200, response.text
        yield client


def texts(history: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    return [(m["role"], [p["text"] for p in m["parts"] if p["type"] == "text"]) for m in history]


def say(client: httpx.Client, chat_id: str, text: str = "hello", **kwargs: Any) -> str:
    """Send one user message; the answer's text."""
    response = client.post("/agent/chat", json=user_body(text, chat_id=chat_id), **kwargs)
    assert response.status_code == 200, response.text
    assert "set-cookie" not in response.headers  # no default identity cookie: the host's user
    chunks = merge_deltas(parse_sse(response.content))
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def live_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/agent/live"


def live_hello(ws: ClientConnection, chat_id: str) -> str:
    ws.send(live_send("r1", chat_id, "hello"))
    frames = [json.loads(ws.recv(timeout=10))]
    while frames[-1]["type"] not in ("end", "error"):
        frames.append(json.loads(ws.recv(timeout=10)))
    assert (frames[0]["type"], frames[-1]["type"]) == ("start", "end"), frames
    chunks = merge_deltas([f["chunk"] for f in frames[1:-1]])
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def new_chat() -> str:
    return f"auth-{uuid.uuid4().hex[:8]}"


def test_login_sets_the_session_cookie(base: str) -> None:
    response = httpx.post(
        f"{base}/login", json={"username": "alice", "password": "alice-password"}, timeout=10
    )
    assert response.status_code == 200
    token = response.json()["token"]
    assert response.json() == {"user": "alice", "token": token}
    assert response.headers["set-cookie"] == (
        f"session={token}; HttpOnly; Max-Age={SESSION_SECONDS}; Path=/; SameSite=lax"
    )


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"username": "alice", "password": "bob-password"}, 401),
        ({"username": "mallory", "password": "mallory-password"}, 401),
        ({"username": "alice"}, 400),
    ],
)
def test_a_failed_login_sets_no_session(base: str, body: dict[str, str], status: int) -> None:
    response = httpx.post(f"{base}/login", json=body, timeout=10)
    assert response.status_code == status
    assert "set-cookie" not in response.headers


def test_an_anonymous_request_is_refused(base: str) -> None:
    chat_id = new_chat()
    with httpx.Client(base_url=base, timeout=10) as anonymous:
        for response in [
            anonymous.post("/agent/chat", json=user_body("hello", chat_id=chat_id)),
            anonymous.get(f"/agent/chat/{chat_id}/messages"),
            anonymous.get(f"/agent/chat/{chat_id}/stream"),
            anonymous.delete(f"/agent/chat/{chat_id}/stream"),
        ]:
            assert (response.status_code, response.json()) == (401, REFUSED)
            assert "set-cookie" not in response.headers  # no per-browser identity either
    with pytest.raises(InvalidStatus) as refused:
        connect(live_url(base), open_timeout=10)
    assert refused.value.response.status_code == 401  # with its reason, as over HTTP
    assert json.loads(refused.value.response.body) == REFUSED


def test_a_json_web_token_signed_with_the_secret_is_a_session(base: str) -> None:
    """The session is a standard HS256 JWT: one made by any other JWT library with the secret is
    accepted (so the refusals below are for what is wrong with each token, not its format)."""
    bearer = {"authorization": f"Bearer {make_token('alice', SECRET.encode())}"}
    with httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/", headers=bearer).text == "Signed in as alice."
        assert say(client, new_chat(), headers=bearer) == HELLO_TEXT


@pytest.mark.parametrize(
    "token",
    [
        make_token("alice", SECRET.encode(), expires_in=-1),  # expired
        make_token("alice", b"another secret"),  # forged
        "not-a-token",
    ],
    ids=["expired", "forged", "garbage"],
)
def test_an_invalid_session_is_refused(base: str, token: str) -> None:
    chat_id = new_chat()
    for headers in ({"cookie": f"session={token}"}, {"authorization": f"Bearer {token}"}):
        response = httpx.post(
            f"{base}/agent/chat", json=user_body("hello", chat_id=chat_id), headers=headers
        )
        assert (response.status_code, response.json()) == (401, REFUSED)
    with pytest.raises(InvalidStatus) as refused:
        connect(
            live_url(base),
            subprotocols=[Subprotocol(f"bearer.{token}")],
            additional_headers={"cookie": f"session={token}"},
            open_timeout=10,
        )
    assert refused.value.response.status_code == 401  # with its reason, as over HTTP
    assert json.loads(refused.value.response.body) == REFUSED


def test_the_signed_in_user_chats_over_sse_and_live(base: str) -> None:
    sse_chat, live_chat = new_chat(), new_chat()
    with login(base, "alice") as alice:
        assert alice.get("/").text == "Signed in as alice."
        assert say(alice, sse_chat) == HELLO_TEXT
        history = alice.get(f"/agent/chat/{sse_chat}/messages")
        assert texts(history.json()) == [("user", ["hello"]), ("assistant", [HELLO_TEXT])]

        # The live socket sends the same cookie with its handshake: the same user.
        session = alice.cookies["session"]
        with connect(
            live_url(base), additional_headers={"cookie": f"session={session}"}, open_timeout=10
        ) as ws:
            assert live_hello(ws, live_chat) == HELLO_TEXT
        history = alice.get(f"/agent/chat/{live_chat}/messages")
        assert texts(history.json()) == [("user", ["hello"]), ("assistant", [HELLO_TEXT])]


def test_a_bearer_token_is_the_same_user_as_the_cookie(base: str) -> None:
    chat_id = new_chat()
    token = httpx.post(
        f"{base}/login", json={"username": "alice", "password": "alice-password"}, timeout=10
    ).json()["token"]
    bearer = {"authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=30) as client:  # no cookie jar of a browser
        assert say(client, chat_id, headers=bearer) == HELLO_TEXT
    # A browser's socket cannot send headers: the token travels as the offered subprotocol.
    with connect(
        live_url(base), subprotocols=[Subprotocol(f"bearer.{token}")], open_timeout=10
    ) as ws:
        assert ws.subprotocol == f"bearer.{token}"
        assert live_hello(ws, chat_id) == HELLO_TEXT
    with login(base, "alice") as alice:
        history = alice.get(f"/agent/chat/{chat_id}/messages")
    assert texts(history.json()) == [
        ("user", ["hello"]),
        ("assistant", [HELLO_TEXT]),
        ("user", ["hello"]),
        ("assistant", [HELLO_TEXT]),
    ]


def test_a_user_cannot_reach_another_users_chat(base: str) -> None:
    chat_id = new_chat()
    with login(base, "alice") as alice, login(base, "bob") as bob:
        assert say(alice, chat_id) == HELLO_TEXT

        # Bob asks for Alice's chat by its id: he has no such chat.
        messages = bob.get(f"/agent/chat/{chat_id}/messages")
        assert (messages.status_code, messages.json()) == (
            404,
            {"error": "this chat does not exist"},
        )
        assert bob.get(f"/agent/chat/{chat_id}/stream").status_code == 204
        stop = bob.delete(f"/agent/chat/{chat_id}/stream")
        assert (stop.status_code, stop.json()) == (200, {"stopped": False})

        # Writing to that id makes a chat of his own; Alice's is untouched.
        echoed = 'You said: "weather in Paris".'
        assert say(bob, chat_id, "weather in Paris") == echoed
        mine = texts(bob.get(f"/agent/chat/{chat_id}/messages").json())
        theirs = texts(alice.get(f"/agent/chat/{chat_id}/messages").json())
    assert mine == [("user", ["weather in Paris"]), ("assistant", [echoed])]
    assert theirs == [("user", ["hello"]), ("assistant", [HELLO_TEXT])]


def test_logout_ends_the_session(base: str) -> None:
    with login(base, "bob") as bob:
        assert bob.post("/logout").status_code == 200
        assert "session" not in bob.cookies
        response = bob.get(f"/agent/chat/{new_chat()}/messages")
    assert (response.status_code, response.json()) == (401, REFUSED)
