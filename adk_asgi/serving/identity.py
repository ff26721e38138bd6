"""Who is asking: the identity hook and the default per-browser identity.

The user id decides which ADK sessions a request can reach (sessions are keyed by
``(app, user_id, session_id)``), so it never comes from the request body. An application with
its own authentication passes ``identify=``; without one, each browser gets an opaque random id
in an HttpOnly cookie, so two browsers never share chats.
"""

from __future__ import annotations

import inspect
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from starlette.requests import HTTPConnection

from adk_asgi.errors import ClientError

Identify = Callable[[HTTPConnection], "str | Awaitable[str | None] | None"]
"""``identify(request_or_websocket) -> user id``; ``None`` (or raising :class:`Unauthorized`)
refuses the request with 401."""

_COOKIE_VALUE: Final = re.compile(r"^[A-Za-z0-9_-]{32,64}$")
USER_ID: Final = re.compile(r"\A(?![A-Za-z]:)(?!\.\.?\Z)(?!\s*\Z)[^\x00-\x1f\x7f/\\]{1,128}\Z")
"""A user id every ADK session and artifact service takes: at most 128 characters (the SQL
services' key columns), no control character and no slash (a path segment to the file and GCS
artifact services), not ``.`` or ``..``, not a letter then ``:`` (a Windows drive to them), not
blank. ``identify`` returning another is the app's bug: a chat made with it could be created
but its files never read and the chat never deleted."""
USER_ID_RULE: Final = (
    "a user id is 1-128 characters, no control character, '/' or '\\', not blank, '.', '..' "
    "or a letter then ':'"
)


class Unauthorized(ClientError):
    """Raised by an identity hook to refuse a request (401); the message is sent to the client
    (``"authentication required"`` when there is none)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(401, reason or "authentication required")


@dataclass(frozen=True, slots=True)
class Identity:
    user_id: str
    set_cookie: str | None = None
    """A ``Set-Cookie`` header value the response must carry (a browser's first visit)."""


@dataclass(frozen=True, slots=True)
class BrowserCookieIdentity:
    """The default: an unguessable random id per browser, kept in an HttpOnly cookie."""

    cookie_name: str = "adk_asgi_uid"
    max_age: int = 400 * 24 * 3600  # the longest lifetime browsers honour

    def resolve(self, conn: HTTPConnection) -> Identity:
        value = conn.cookies.get(self.cookie_name)
        if value is not None and _COOKIE_VALUE.match(value):
            return Identity(user_id=f"browser:{value}")
        value = secrets.token_urlsafe(24)
        secure = "; Secure" if conn.url.scheme in ("https", "wss") else ""
        cookie = (
            f"{self.cookie_name}={value}; Path=/; Max-Age={self.max_age}; HttpOnly; "
            f"SameSite=Lax{secure}"
        )
        return Identity(user_id=f"browser:{value}", set_cookie=cookie)


async def resolve_identity(
    conn: HTTPConnection, identify: Identify | None, default: BrowserCookieIdentity
) -> Identity:
    """Run the hook (sync or async) or the default; raise :class:`Unauthorized` on refusal."""
    if identify is None:
        return default.resolve(conn)
    result = identify(conn)
    if inspect.isawaitable(result):
        result = await result
    if not result:
        raise Unauthorized("authentication required")
    if not isinstance(result, str):
        raise TypeError(f"identify() must return a user id string, not {type(result).__name__}")
    if not USER_ID.match(result):
        raise ValueError(f"identify() returned {result[:140]!r}: {USER_ID_RULE}")
    return Identity(user_id=result)
