"""A refusal as the HTTP transports send it: the transport side of :class:`ClientError`.

The core raises :class:`~adk_asgi.errors.ClientError` without knowing who asked (the
exception module stays sans-I/O); the endpoints — ``POST /chat``, the chat, file and history
routes, the origin check, the live handshake's denial — answer it here, all in one shape. A
live connection already open sends the reason in an ``error`` frame instead
(:mod:`adk_asgi.live.connection`).
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket

from adk_asgi.errors import ClientError


def json_refusal(error: ClientError, headers: dict[str, str] | None = None) -> Response:
    """``error`` as a response: its status hint, and ``{"error": reason}`` as JSON."""
    return JSONResponse({"error": error.reason}, status_code=error.status_hint, headers=headers)


async def refuse_handshake(websocket: WebSocket, error: ClientError) -> None:
    """Refuse a WebSocket handshake with ``error``'s status and JSON reason where the server can
    send an HTTP response to it (the ``websocket.http.response`` extension: uvicorn, the test
    client), else with close code 1008 and the reason (the server answers the handshake 403)."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(json_refusal(error))
    else:
        await websocket.close(code=1008, reason=error.reason)
