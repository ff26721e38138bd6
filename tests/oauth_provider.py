"""A small OAuth 2.0 authorization server on loopback, for the credential tests.

What ADK does with a credential is only proven against a real provider: it builds the consent
URL (authlib), the browser follows it, the provider redirects back with a code, and ADK trades
the code for a token (authlib's ``requests`` client, from a worker thread) that the tool then
uses. So the provider is a real Starlette app under a real uvicorn, and it checks what a real
one checks (RFC 6749 §4.1, RFC 7636):

- ``GET /authorize``: a known ``client_id``, ``response_type=code``, a registered
  ``redirect_uri``; consents at once for :data:`USER` (no login page) and redirects to
  ``redirect_uri?code=…&state=…``;
- ``POST /token`` (``grant_type=authorization_code``): the client authenticated
  (``client_secret_basic`` or ``client_secret_post``; a public client gives only its id), the
  code known, unused and issued to that client, ``redirect_uri`` the one the code was issued
  for, the PKCE ``code_verifier`` when the code came with a challenge (S256); a code is
  redeemed once;
- ``GET /api/me``: the user of a ``Bearer`` token it issued, or of an ``x-api-key`` it was
  given (:attr:`OAuthProvider.api_keys`), else ``401``.

It runs in a thread with its own event loop, not on the test's: ADK exchanges the code with a
blocking call from the thread that runs the agent (``AuthHandler.get_auth_response``), which
would deadlock a provider served by the same loop. Everything it saw is kept on the
:class:`OAuthProvider` for the tests to check.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

USER = {"sub": "user-ada", "name": "Ada Lovelace", "email": "ada@example.test"}
"""The resource owner who consents to everything."""


@dataclass(frozen=True, slots=True)
class Client:
    """A registered OAuth client: ``secret=None`` is a public client (PKCE only)."""

    client_id: str
    secret: str | None
    redirect_uris: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Grant:
    """An authorization code and what it was issued for."""

    client_id: str
    redirect_uri: str
    scope: str
    code_challenge: str | None


@dataclass
class OAuthProvider:
    """The provider's registry and what it saw; :func:`serve` puts :attr:`app` on a port."""

    clients: dict[str, Client]
    api_keys: set[str] = field(default_factory=set)
    """The API keys ``/api/me`` takes (header ``x-api-key``)."""
    base_url: str = ""
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    """Each token request's form, with ``client_auth`` (``basic``, ``post`` or ``none``)."""
    refused: list[str] = field(default_factory=list)
    """Why each refused request was refused, in order."""
    codes: dict[str, Grant] = field(default_factory=dict)
    redeemed: set[str] = field(default_factory=set)
    tokens: dict[str, str] = field(default_factory=dict)
    """Access token → the scope it grants."""
    api_calls: list[str | None] = field(default_factory=list)
    """The bearer token or API key of each ``/api/me`` request (``None``: none given)."""

    @property
    def authorize_url(self) -> str:
        return f"{self.base_url}/authorize"

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/me"

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/authorize", self.authorize, methods=["GET"]),
                Route("/token", self.token, methods=["POST"]),
                Route("/api/me", self.me, methods=["GET"]),
            ]
        )

    def _refuse(self, status: int, error: str, reason: str) -> Response:
        self.refused.append(reason)
        return JSONResponse({"error": error, "error_description": reason}, status_code=status)

    async def authorize(self, request: Request) -> Response:
        query = dict(request.query_params)
        self.authorize_requests.append(query)
        client = self.clients.get(query.get("client_id", ""))
        if client is None:
            return self._refuse(400, "invalid_client", "unknown client_id")
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in client.redirect_uris:
            return self._refuse(400, "invalid_request", f"redirect_uri {redirect_uri!r}")
        if query.get("response_type") != "code":
            return self._refuse(400, "unsupported_response_type", "response_type")
        challenge = query.get("code_challenge")
        if challenge is not None and query.get("code_challenge_method") != "S256":
            return self._refuse(400, "invalid_request", "code_challenge_method")
        if client.secret is None and challenge is None:
            return self._refuse(400, "invalid_request", "a public client must use PKCE")
        code = secrets.token_urlsafe(16)
        self.codes[code] = Grant(client.client_id, redirect_uri, query.get("scope", ""), challenge)
        back = {"code": code} | ({"state": query["state"]} if "state" in query else {})
        return RedirectResponse(f"{redirect_uri}?{urlencode(back)}", status_code=302)

    async def token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        client_id, secret, how = _client_auth(request, form)
        self.token_requests.append(form | {"client_auth": how})
        client = self.clients.get(client_id or "")
        if client is None or secret != client.secret:
            return self._refuse(401, "invalid_client", "client authentication failed")
        if form.get("grant_type") != "authorization_code":
            return self._refuse(400, "unsupported_grant_type", "grant_type")
        code = form.get("code", "")
        grant = self.codes.get(code)
        if grant is None or code in self.redeemed or grant.client_id != client.client_id:
            return self._refuse(400, "invalid_grant", "unknown, used or foreign code")
        if form.get("redirect_uri") != grant.redirect_uri:
            return self._refuse(400, "invalid_grant", "redirect_uri differs")
        if grant.code_challenge is not None:
            verifier = form.get("code_verifier", "")
            if _s256(verifier) != grant.code_challenge:
                return self._refuse(400, "invalid_grant", "PKCE verification failed")
        self.redeemed.add(code)
        token = secrets.token_urlsafe(24)
        self.tokens[token] = grant.scope
        return JSONResponse(
            {"access_token": token, "token_type": "Bearer", "expires_in": 3600},
            headers={"cache-control": "no-store"},
        )

    async def me(self, request: Request) -> Response:
        key = request.headers.get("x-api-key")
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        bearer = token if scheme.lower() == "bearer" else None
        self.api_calls.append(key if key is not None else bearer)
        if (key is not None and key in self.api_keys) or (bearer and bearer in self.tokens):
            return JSONResponse(USER)
        return JSONResponse({"error": "invalid_token"}, status_code=401)


def _client_auth(request: Request, form: dict[str, str]) -> tuple[str | None, str | None, str]:
    """Who the token request says it is: HTTP Basic, the form's secret, or a public id."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "basic":
        client_id, _, secret = base64.b64decode(value).decode().partition(":")
        return client_id, secret, "basic"
    if "client_secret" in form:
        return form.get("client_id"), form["client_secret"], "post"
    return form.get("client_id"), None, "none"


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@contextmanager
def serve(provider: OAuthProvider) -> Iterator[OAuthProvider]:
    """Serve ``provider`` under uvicorn on a fresh loopback port, in a thread of its own."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    provider.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        provider.app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        http="h11",
        loop="asyncio",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started or not thread.is_alive():
                break
            threading.Event().wait(0.01)
        assert server.started, "the OAuth provider did not start"
        yield provider
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
