"""Which web origins may drive the app: the ``Origin`` check of ``WS /live`` and the writes.

A browser sends its cookies with a WebSocket handshake whatever page opens it: the same-origin
policy does not cover WebSockets, and ``SameSite=Lax`` stops nothing from a same-site
subdomain (or for an app whose own auth cookie is ``SameSite=None``). A page of another origin
could then talk live as the user. The handshake's ``Origin`` header is the one thing the
browser vouches for, so it is compared with the origins the app serves: the request's own
(scheme and host, as the browser addressed it) and those the app lists
(``Security(allowed_origins=...)``). The writes (``POST``, ``DELETE``) are checked the same way:
the JSON content type already needs a CORS preflight there, but a host whose CORS allows an
origin with credentials would let it in, and one rule for every route is easier to reason
about. Reads are not checked: a page of another origin cannot read their answers without CORS.

No ``Origin`` means no browser sent it (curl, a server, a test client): let through, since the
check exists to stop a browser acting for its user. ``Origin: null`` (a sandboxed or ``file:``
page) is refused like any other foreign origin.

Behind a proxy the request's own origin is what the browser addressed, not what the proxy
asked. uvicorn's ``--proxy-headers`` (on by default for ``127.0.0.1``) already rewrites the
scheme from ``X-Forwarded-Proto``, but not the host; a proxy that passes ``Host`` through
(nginx ``proxy_set_header Host $host``) needs nothing more. Otherwise ``trust_forwarded=True``
reads ``Forwarded`` (RFC 7239) or ``X-Forwarded-Host``/``X-Forwarded-Proto``, the first value
of each: the one the proxy nearest the browser wrote. Off by default: a client that reaches the
app directly could name any host there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from adk_asgi.errors import ClientError
from adk_asgi.serving.refusals import json_refusal, refuse_handshake

ANY: Final = "*"
"""In ``allowed_origins``: every origin (an app that authenticates with tokens, not cookies)."""

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def normalize(origin: str) -> str | None:
    """``scheme://host[:port]`` in the form browsers send it (lower case, no default port), or
    ``None`` for anything that is not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _http(scheme: str) -> str:
    """A WebSocket's scheme as the scheme of the page's origin."""
    return {"ws": "http", "wss": "https"}.get(scheme.lower(), scheme.lower())


def _first(value: str | None) -> str | None:
    if value is None:
        return None
    first = value.split(",", 1)[0].strip()
    return first or None


def _forwarded(headers: Headers) -> tuple[str | None, str | None]:
    """``(proto, host)`` of the first element of RFC 7239 ``Forwarded``."""
    element = _first(headers.get("forwarded"))
    proto = host = None
    for pair in (element or "").split(";"):
        name, _, value = pair.partition("=")
        value = value.strip().strip('"')
        if name.strip().lower() == "proto":
            proto = value
        elif name.strip().lower() == "host":
            host = value
    return proto, host


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The origins allowed besides the request's own, and whether proxy headers name it."""

    allowed: frozenset[str] = frozenset()
    trust_forwarded: bool = False

    @classmethod
    def of(
        cls, allowed_origins: Iterable[str] = (), *, trust_forwarded: bool = False
    ) -> OriginPolicy:
        """Check each listed origin now, so a typo fails at startup, not as refused users."""
        if isinstance(allowed_origins, str):
            raise TypeError("allowed_origins must be a list of origins, not one string")
        allowed: set[str] = set()
        for origin in allowed_origins:
            normal = ANY if origin == ANY else normalize(origin)
            if normal is None:
                raise ValueError(
                    f"allowed_origins: {origin!r} is not an origin (scheme://host[:port])"
                )
            allowed.add(normal)
        return cls(frozenset(allowed), trust_forwarded)

    def own_origin(self, scope: Scope) -> str | None:
        """The origin the browser addressed this request to."""
        headers = Headers(scope=scope)
        scheme = _http(scope.get("scheme", "http"))
        host = headers.get("host")
        if self.trust_forwarded:
            proto, forwarded_host = _forwarded(headers)
            proto = proto or _first(headers.get("x-forwarded-proto"))
            forwarded_host = forwarded_host or _first(headers.get("x-forwarded-host"))
            scheme = _http(proto or scheme)
            host = forwarded_host or host
        if host is None:
            return None
        return normalize(f"{scheme}://{host}")

    def refusal(self, scope: Scope) -> ClientError | None:
        """Why this request may not go on (a 403), or ``None``."""
        if scope["type"] == "http" and scope.get("method", "GET") in _SAFE_METHODS:
            return None
        if scope["type"] not in ("http", "websocket"):
            return None
        origin = Headers(scope=scope).get("origin")
        if origin is None:
            return None  # not a browser
        normal = normalize(origin)
        if ANY in self.allowed or (normal is not None and normal in self.allowed):
            return None
        if normal is not None and normal == self.own_origin(scope):
            return None
        return ClientError(
            403,
            f"origin {origin!r} is not allowed: this app serves its own origin only"
            " (Security(allowed_origins=...) lists others)",
        )


class OriginGuard:
    """The ASGI app in front of the routes: a request :class:`OriginPolicy` refuses gets 403."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = self.policy.refusal(scope)
        if error is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await refuse_handshake(WebSocket(scope, receive, send), error)
        else:
            await json_refusal(error)(scope, receive, send)
