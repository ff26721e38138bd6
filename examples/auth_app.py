"""Recipe: the host's own login decides who is chatting (docs/mounting.md#authentication).

Run it from this directory, with ``pip install adk-asgi``::

    AUTH_SECRET=$(python -c 'import secrets; print(secrets.token_urlsafe(32))') \\
        uvicorn auth_app:app

``POST /login`` with ``{"username": "alice", "password": "alice-password"}`` signs the user in:
it sets an HttpOnly session cookie and also returns the same token for clients that prefer
``Authorization: Bearer``. The agent under ``/agent`` then serves that user's chats only, over
SSE and on the live socket; a request with no valid session gets ``401``.

The session is an HS256 JSON Web Token, made and checked here with the standard library (with
PyJWT: ``jwt.encode(claims, SECRET, "HS256")`` / ``jwt.decode(token, SECRET, ["HS256"])``). Any
authentication works the same way: ``identify`` reads whatever your login left on the request.

The agent is Gemini with one tool, ``get_weather``. Without ``GOOGLE_API_KEY`` a local stand-in
answers in Gemini's place: it echoes what you say, and ``call get_weather {"city": "Paris"}``
runs the tool.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from google.adk.agents import LlmAgent
from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from adk_asgi import AdkApp

SECRET = os.environ.get("AUTH_SECRET", "").encode() or secrets.token_bytes(32)
"""The signing key. Without AUTH_SECRET a random one: sessions end when the server restarts,
and several workers would not accept each other's."""
SESSION_COOKIE = "session"
SESSION_SECONDS = 8 * 3600
WEBSOCKET_TOKEN_PREFIX = "bearer."
"""Browsers cannot set headers on a WebSocket: a token-only client (no cookie) offers the
subprotocol ``bearer.<token>``, which the live route echoes on accept."""

USERS = {"alice": "alice-password", "bob": "bob-password"}
"""The demo's users. Yours live in your database, with password hashes, not passwords."""


# --- the session token: an HS256 JWT ------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_HEADER = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())


def _signature(signed: str, secret: bytes) -> str:
    return _b64(hmac.new(secret, signed.encode(), hashlib.sha256).digest())


def make_token(user: str, secret: bytes = SECRET, expires_in: float = SESSION_SECONDS) -> str:
    claims = {"sub": user, "exp": int(time.time() + expires_in)}
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    return f"{_HEADER}.{payload}.{_signature(f'{_HEADER}.{payload}', secret)}"


def user_of(token: str, secret: bytes = SECRET) -> str | None:
    """The token's user, or ``None`` for a token that is malformed, forged or expired."""
    header, _, rest = token.partition(".")
    payload, _, signature = rest.partition(".")
    if header != _HEADER:  # only what this app signs: no other algorithm, no "none"
        return None
    expected = _signature(f"{header}.{payload}", secret)
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        return None
    try:
        claims = json.loads(_unb64(payload))
    except ValueError:  # not base64 (binascii.Error), not UTF-8, not JSON
        return None
    if not isinstance(claims, dict):
        return None
    user, expires = claims.get("sub"), claims.get("exp")
    if not isinstance(user, str) or not isinstance(expires, int) or expires <= time.time():
        return None
    return user


# --- who is asking: the agent's identity hook -------------------------------------------------


def identify(conn: HTTPConnection) -> str | None:
    """The signed-in user of a request or a live socket's handshake; ``None`` → 401 (a refused
    handshake too, with the same JSON reason). Runs once per request, and once per live
    connection: a socket opened before its session expired stays open."""
    token = conn.cookies.get(SESSION_COOKIE)
    if token is None:
        scheme, _, credentials = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            token = credentials.strip()
    if token is None and conn.scope["type"] == "websocket":
        offered = conn.scope.get("subprotocols") or []
        if offered and offered[0].startswith(WEBSOCKET_TOKEN_PREFIX):
            token = offered[0].removeprefix(WEBSOCKET_TOKEN_PREFIX)
    return user_of(token) if token else None


# --- the agent: its chats are the signed-in user's -----------------------------------------


if not os.environ.get("GOOGLE_API_KEY"):  # no key: a local stand-in answers as Gemini would
    from adk_asgi.testing import offline_gemini  # (it echoes; never in a deployment)

    offline_gemini()


def get_weather(city: str) -> dict[str, str | int]:
    """The weather in a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    return {"city": city, "forecast": "sunny", "temperature_c": 21}


agent = LlmAgent(
    name="assistant",
    model="gemini-2.5-flash",
    instruction="Be brief. Ask get_weather for the weather.",
    tools=[get_weather],
)
chat = AdkApp(agent, identify=identify)


# --- the host's own routes ------------------------------------------------------------------


async def login(request: Request) -> Response:
    try:
        form = await request.json()
        username, password = str(form["username"]), str(form["password"])
    except (ValueError, KeyError, TypeError):
        return JSONResponse({"error": "send username and password"}, status_code=400)
    known = USERS.get(username)
    if known is None or not hmac.compare_digest(password.encode(), known.encode()):
        return JSONResponse({"error": "wrong username or password"}, status_code=401)
    token = make_token(username)
    response = JSONResponse({"user": username, "token": token})
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


async def logout(_: Request) -> Response:
    response = JSONResponse({"user": None})
    response.delete_cookie(SESSION_COOKIE)
    return response


async def home(request: Request) -> Response:
    user = identify(request)
    return PlainTextResponse(f"Signed in as {user}." if user else "Not signed in: POST /login.")


@asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    yield
    await chat.aclose()


app = Starlette(
    routes=[
        Route("/", home),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Mount("/agent", app=chat),
    ],
    lifespan=lifespan,
)
