"""A user's chats, for a history sidebar: ``GET /chats`` lists them, ``DELETE /chat/{id}``
deletes one. Both are scoped by identity like every route: a chat is an ADK session of the user
who asks, so another user's chat id is simply unknown here.

Deleting a chat deletes all it left behind, not only its session: its answers kept for resuming
(the stream store), its uploads (the artifact service) and its claims. Chat ids come from the
client, so whatever is left would be found again by a new chat under the same id: its files
served and shown, its old stream resumed, its answers refused as taken. The order is chosen so
that a failure part-way leaves nothing a later chat could find:

1. the streams, then the uploads: the user's data, gone while the chat still exists;
2. the session: from here on the chat is unknown (``404``) and none of its calls can be
   answered any more;
3. the claims, last: while the session holds calls, their claims must stand (a call claimed
   by a request that died before recording its answer would otherwise be answerable twice).

A store that fails stops the deletion with a ``503``, and trying again finishes it: the
stores are cleaned for a chat id the user asks to delete even when its session is gone already
(the answer is a ``404`` then).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Final

from google.adk.sessions.session import Session
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from adk_asgi.errors import UNKNOWN_CHAT, ClientError, log_failure
from adk_asgi.hitl import bookkeeping
from adk_asgi.serving.refusals import json_refusal
from adk_asgi.serving.services import Services
from adk_asgi.stores.locks import ChatBusy
from adk_asgi.wire.values import CHAT_ID, CHAT_ID_RULE

BUSY_CHAT = "this chat is busy (an answer is streaming, or a live connection is open on it)"
DELETE_WAIT = 1.0
"""Seconds a deletion waits for the chat's run under way to end before it is refused."""


CHATS_PAGE: Final = 50
"""The chats ``GET /chats`` lists at once unless asked for fewer or more (at most
:data:`MAX_CHATS_PAGE`): a user with thousands of chats got all of them in one answer."""
MAX_CHATS_PAGE: Final = 200
_Place = tuple[float, str]
"""A chat's place in the list: minus its last update, then its id."""


def _newest_first(session: Session) -> _Place:
    return (-session.last_update_time, session.id)


def _cursor(place: _Place) -> str:
    return base64.urlsafe_b64encode(json.dumps(place).encode()).decode().rstrip("=")


def _page_of(request: Request) -> tuple[int, _Place | None]:
    """``?limit=`` and ``?before=`` of a ``GET /chats``; a :class:`ClientError` (400) when
    either is not what this server gives."""
    query = request.query_params
    raw = query.get("limit", str(CHATS_PAGE))
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_CHATS_PAGE):  # ("²")
        raise ClientError(400, f"limit: a whole number from 1 to {MAX_CHATS_PAGE}")
    before = query.get("before")
    if before is None:
        return int(raw), None
    try:
        place = json.loads(base64.urlsafe_b64decode(before + "=" * (-len(before) % 4)))
        when, chat_id = place
        if not (isinstance(when, float | int) and isinstance(chat_id, str)):
            raise ValueError(place)
    except (ValueError, TypeError, binascii.Error):
        raise ClientError(400, "before: not a cursor this server gave") from None
    return int(raw), (float(when), chat_id)


class ChatsEndpoint:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def list(self, request: Request) -> Response:
        """``GET /chats``: ``[{id, title, updated}]``, the most recently updated first, a page
        at a time (``?limit=``, :data:`CHATS_PAGE` by default); a ``Link: <…>; rel="next"``
        header names the next page (``?before=``, an opaque cursor), as long as there is one.
        ``title``: the chat's first message (``null`` until it has text); ``updated``: when
        it last changed (ISO 8601, UTC)."""
        services = self.services
        try:
            identity = await services.identity_of(request)
            limit, after = _page_of(request)
        except ClientError as exc:
            return json_refusal(exc)
        found = await services.session_service.list_sessions(
            app_name=services.app_name, user_id=identity.user_id
        )
        sessions = sorted(found.sessions, key=_newest_first)
        if after is not None:
            sessions = [s for s in sessions if _newest_first(s) > after]
        sessions, rest = sessions[:limit], sessions[limit:]
        chats = [
            {
                "id": session.id,
                "title": bookkeeping.title(session.state),
                "updated": _iso(session.last_update_time),
            }
            for session in sessions
        ]
        headers = {"set-cookie": identity.set_cookie} if identity.set_cookie else {}
        if rest:
            cursor = _cursor(_newest_first(sessions[-1]))
            headers["link"] = f'<{request.url.path}?limit={limit}&before={cursor}>; rel="next"'
        return JSONResponse(chats, headers=headers)

    async def delete(self, request: Request) -> Response:
        """``DELETE /chat/{id}``: ``204``; ``404`` for a chat the user does not have; ``409``
        while it runs (an answer streaming, a live connection open on it); ``503`` when a store
        failed part-way (the module's docstring)."""
        services = self.services
        try:
            identity = await services.identity_of(request)
            chat_id = request.path_params["chat_id"]
            if not CHAT_ID.match(chat_id):
                raise ClientError(400, CHAT_ID_RULE)
            key = services.chat_key(identity.user_id, chat_id)
            async with services.locks.hold(key, DELETE_WAIT):
                if not await delete_chat(services, identity.user_id, chat_id):
                    raise ClientError(404, UNKNOWN_CHAT)
        except ChatBusy:
            return json_refusal(ClientError(409, BUSY_CHAT))
        except ClientError as exc:
            return json_refusal(exc)
        except DeletionFailed as exc:
            return JSONResponse({"error": str(exc)}, status_code=503)
        return Response(status_code=204)


class DeletionFailed(Exception):
    """A store failed while a chat was deleted; trying again finishes the deletion."""


async def delete_chat(services: Services, user_id: str, chat_id: str) -> bool:
    """Delete the chat and all it left, in the module docstring's order (the caller holds the
    chat's lock); whether its session existed. Raises :class:`DeletionFailed`."""
    key = services.chat_key(user_id, chat_id)
    app_name = services.app_name
    async with _step("its kept answers"):
        if services.streams is not None:
            await services.streams.forget(key)
    artifacts = services.artifact_service
    async with _step("its uploads"):
        if artifacts is not None:
            names = await artifacts.list_artifact_keys(
                app_name=app_name, user_id=user_id, session_id=chat_id
            )
            for name in names:
                if not name.startswith("user:"):  # the user's own, kept across chats
                    await artifacts.delete_artifact(
                        app_name=app_name, user_id=user_id, filename=name, session_id=chat_id
                    )
    async with _step("its session"):
        found = await services.session(user_id, chat_id) is not None
        if found:
            await services.session_service.delete_session(
                app_name=app_name, user_id=user_id, session_id=chat_id
            )
    async with _step("its claims"):
        await services.claims.forget(key)
    return found


@asynccontextmanager
async def _step(what: str) -> AsyncIterator[None]:
    try:
        yield
    except Exception as exc:
        log_failure(f"deleting a chat failed at {what}", exc)
        raise DeletionFailed(
            f"the chat could not be deleted completely ({what} failed): try again"
        ) from exc


def _iso(timestamp: float) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
