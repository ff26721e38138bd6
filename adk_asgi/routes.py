"""The read-only routes: a chat's history, its resumable stream, and the live transport."""

from __future__ import annotations

from importlib import resources
from typing import Final

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from .errors import ClientError
from .history import rebuild_messages
from .messages import CHAT_ID, CHAT_ID_RULE
from .services import Services


class MessagesEndpoint:
    """``GET /chat/{chat_id}/messages``: the chat as ``UIMessage[]`` (``[]`` for a chat that
    does not exist yet)."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def respond(self, request: Request) -> Response:
        try:
            identity = await self.services.identity_of(request)
        except ClientError as exc:
            return exc.response()
        chat_id = request.path_params["chat_id"]
        if not CHAT_ID.match(chat_id):
            return ClientError(400, CHAT_ID_RULE).response()
        session = await self.services.session(identity.user_id, chat_id)
        messages = rebuild_messages(session.events, self.services.tools) if session else []
        headers = {"set-cookie": identity.set_cookie} if identity.set_cookie else None
        return Response(
            msgspec.json.encode(messages), media_type="application/json", headers=headers
        )


class ResumeEndpoint:
    """``GET /chat/{chat_id}/stream``: the stock ``useChat({ resume: true })`` asks here on
    mount; ``204`` says nothing is streaming."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def respond(self, request: Request) -> Response:
        try:
            await self.services.identity_of(request)
        except ClientError as exc:
            return exc.response()
        # Streams are not kept for replay yet: nothing is ever resumable.
        return Response(status_code=204)


_TRANSPORT_JS: Final = (resources.files("adk_asgi") / "static" / "transport.js").read_bytes()


async def transport_js(request: Request) -> Response:
    """The live ``ChatTransport`` (AI SDK v6 and v7) with the microphone and playback helpers."""
    return Response(
        _TRANSPORT_JS,
        media_type="text/javascript",
        headers={"cache-control": "public, max-age=3600"},
    )
