"""A refusal as the HTTP transports send it: the transport side of :class:`ClientError`.

The core raises :class:`~adk_asgi.errors.ClientError` without knowing who asked (the
exception module stays sans-I/O); the endpoints — ``POST /chat``, the chat, file and history
routes, the origin check, the live handshake's denial — answer it here, all in one shape.
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from .errors import ClientError


def json_refusal(error: ClientError, headers: dict[str, str] | None = None) -> Response:
    """``error`` as a response: its status hint, and ``{"error": reason}`` as JSON."""
    return JSONResponse({"error": error.reason}, status_code=error.status_hint, headers=headers)
