"""A user's chats, for a history sidebar: ``GET /chats`` lists them, ``DELETE /chat/{id}``
deletes one. Both are scoped by identity like every route: a chat is an ADK session of the user
who asks, so another user's chat id is simply unknown here."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import bookkeeping
from .errors import UNKNOWN_CHAT, ClientError
from .locks import ChatBusy
from .messages import CHAT_ID, CHAT_ID_RULE
from .services import Services

BUSY_CHAT = "this chat is busy (an answer is streaming, or a live connection is open on it)"
DELETE_WAIT = 1.0
"""Seconds a deletion waits for the chat's run under way to end before it is refused."""


class ChatsEndpoint:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def list(self, request: Request) -> Response:
        """``GET /chats``: ``[{id, title, updated}]``, the most recently updated first.
        ``title``: the chat's first message (``null`` until it has text); ``updated``: when
        it last changed (ISO 8601, UTC)."""
        services = self.services
        try:
            identity = await services.identity_of(request)
        except ClientError as exc:
            return exc.response()
        found = await services.session_service.list_sessions(
            app_name=services.app_name, user_id=identity.user_id
        )
        sessions = sorted(found.sessions, key=lambda s: (-s.last_update_time, s.id))
        chats = [
            {
                "id": session.id,
                "title": bookkeeping.title(session.state),
                "updated": _iso(session.last_update_time),
            }
            for session in sessions
        ]
        headers = {"set-cookie": identity.set_cookie} if identity.set_cookie else None
        return JSONResponse(chats, headers=headers)

    async def delete(self, request: Request) -> Response:
        """``DELETE /chat/{id}``: ``204``; ``404`` for a chat the user does not have; ``409``
        while it runs (an answer streaming, a live connection open on it)."""
        services = self.services
        try:
            identity = await services.identity_of(request)
            chat_id = request.path_params["chat_id"]
            if not CHAT_ID.match(chat_id):
                raise ClientError(400, CHAT_ID_RULE)
            key = services.chat_key(identity.user_id, chat_id)
            async with services.locks.hold(key, DELETE_WAIT):
                if await services.session(identity.user_id, chat_id) is None:
                    raise ClientError(404, UNKNOWN_CHAT)
                await services.session_service.delete_session(
                    app_name=services.app_name, user_id=identity.user_id, session_id=chat_id
                )
        except ChatBusy:
            return ClientError(409, BUSY_CHAT).response()
        except ClientError as exc:
            return exc.response()
        return Response(status_code=204)


def _iso(timestamp: float) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
