"""The package's exceptions: one base class, and the one way a request is refused.

Every exception ``adk_asgi`` raises on purpose derives from :class:`AdkAsgiError`, so a host
application can tell the bridge's refusals from its own bugs with one ``except``. A request is
refused before anything runs with :class:`ClientError`: a 4xx with a JSON reason.
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

UNKNOWN_CHAT = "this chat does not exist"
"""The ``404`` reason for a chat the user does not have (never created, deleted, or another
user's: chats are scoped by identity, so another user's chat is simply unknown)."""

STORE_FAILED = "the chat's session could not be read or written; try again"
"""The ``503`` reason when the session service fails before anything was sent."""


class AdkAsgiError(Exception):
    """The base class of the package's exceptions."""


class ClientError(AdkAsgiError):
    """A request the bridge refuses; ``reason`` names the problem for the client."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    def response(self, headers: dict[str, str] | None = None) -> Response:
        return JSONResponse({"error": self.reason}, status_code=self.status, headers=headers)
