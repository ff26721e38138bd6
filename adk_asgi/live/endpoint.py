"""The live transport's endpoint: ``WS /live`` runs ``Runner.run_live`` for one chat per connection.

It speaks the AI SDK v7 ``WebSocketChatTransport`` protocol (client ``send``/``resume``/``abort``,
server ``start``/``chunk``/``end``/``error``/``no-active``), so a v7 frontend uses the stock
transport; ``transport.js`` speaks the same frames for v5 and v6 (its ``sdk`` option). Our
extension, for clients that ask for it (``?audio=1``): binary frames of PCM16 mono audio
(16 kHz up, 24 kHz down) and the text frames ``activity-start``, ``activity-end``,
``audio-end`` (up) and ``interrupted`` (down).

This module is the handshake: a refusal (live mode off, identity, a bad ``chatId``) before
accepting, as the HTTP denial when the server can send one; the file-URL rule bound for the
connection; the first offered subprotocol echoed and the identity cookie set on accept; the
user's bound on open sockets. The accepted socket is then one :class:`~.connection.Connection`.
"""

from __future__ import annotations

from typing import Any

from starlette.websockets import WebSocket

from adk_asgi.errors import ClientError
from adk_asgi.live.connection import Connection
from adk_asgi.live.protocol import BUSY
from adk_asgi.serving import file_urls
from adk_asgi.serving.refusals import json_refusal
from adk_asgi.serving.services import Services
from adk_asgi.serving.user_bounds import OverBound
from adk_asgi.wire.values import CHAT_ID, CHAT_ID_RULE


class LiveEndpoint:
    """The ASGI endpoint of ``WS /live``."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        websocket = WebSocket(scope, receive, send)
        try:
            if self.services.live_refusal is not None:
                raise ClientError(400, self.services.live_refusal)
            identity = await self.services.identity_of(websocket)
            chat_id = websocket.query_params.get("chatId")
            if chat_id is not None and not CHAT_ID.match(chat_id):
                raise ClientError(400, f"chatId: {CHAT_ID_RULE}")
            # The connection's tasks inherit it: the protocol checks send frames with it.
            file_urls.bind(self.services.file_url_rule(identity.user_id, scope))
        except ClientError as exc:
            if "websocket.http.response" in scope.get("extensions", {}):
                await websocket.send_denial_response(json_refusal(exc))  # the status and reason
            else:  # the server can only refuse the handshake (403) with no reason
                await websocket.close(code=1008, reason=exc.reason)
            return
        # Browsers cannot set headers on a WebSocket, so a token may travel as a subprotocol;
        # the handshake fails unless the server echoes one of the offered protocols.
        offered = websocket.scope.get("subprotocols") or []
        # A browser whose first request is this handshake gets its identity cookie here, or
        # its next HTTP request (history after a reload) would be a stranger's.
        cookie = [(b"set-cookie", identity.set_cookie.encode())] if identity.set_cookie else []
        await websocket.accept(subprotocol=offered[0] if offered else None, headers=cookie)
        try:  # counted while it stays open (serving/user_bounds.py)
            with self.services.user_load.live_socket(identity.user_id):
                await Connection(self.services, websocket, identity.user_id).run()
        except OverBound as exc:  # (only the count raises it) try again later, and why
            # (a client that reconnects at once is slowed)
            await self.services.user_load.pause(identity.user_id)
            await websocket.close(code=BUSY, reason=exc.reason)
