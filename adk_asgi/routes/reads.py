"""The read-only routes: a chat's history, its resumable stream, and the live transport."""

from __future__ import annotations

import asyncio
from importlib import resources
from typing import Final

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from adk_asgi.convert.history import rebuild_messages
from adk_asgi.convert.user_parts import uploaded_names
from adk_asgi.errors import STORE_FAILED, UNKNOWN_CHAT, ClientError, log_failure
from adk_asgi.routes.files import uploaded_files
from adk_asgi.serving.refusals import json_refusal
from adk_asgi.serving.services import Services
from adk_asgi.sse.response import SSEResponse
from adk_asgi.stores.locks import ChatKey
from adk_asgi.stores.resumable import StreamStore
from adk_asgi.stores.stops import STOP_WAIT, StoreUnavailable, stop_answer
from adk_asgi.wire.encoding import admit_messages
from adk_asgi.wire.values import CHAT_ID, CHAT_ID_RULE


class MessagesEndpoint:
    """``GET /chat/{chat_id}/messages``: the chat as ``UIMessage[]``; ``404`` for a chat this
    user does not have (never created, deleted, or another user's), so a page can tell a chat
    that is gone from one with no messages yet (``[]``)."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def respond(self, request: Request) -> Response:
        try:
            identity = await self.services.identity_of(request)
        except ClientError as exc:
            return json_refusal(exc)
        chat_id = request.path_params["chat_id"]
        if not CHAT_ID.match(chat_id):
            return json_refusal(ClientError(400, CHAT_ID_RULE))
        headers = {"set-cookie": identity.set_cookie} if identity.set_cookie else None
        try:
            session = await self.services.session(identity.user_id, chat_id)
            if session is None:
                return json_refusal(ClientError(404, UNKNOWN_CHAT), headers)
            names = uploaded_names(session.events)
            chat_path = request.url.path.removesuffix("/messages")
            files = await uploaded_files(self.services, identity.user_id, chat_id, names, chat_path)
        except Exception as exc:
            # The session service or the artifact service failed (a database down, a row it
            # cannot decode): a JSON 503 the page can show, not the server's plain 500 page.
            log_failure("the chat's history could not be read", exc, chat_id=chat_id)
            return json_refusal(ClientError(503, STORE_FAILED), headers)
        services = self.services
        messages = rebuild_messages(
            session.events,
            services.tools,
            files,
            speakers=services.converting.speakers,
            metadata=services.converting.message_metadata,
            send_usage=services.converting.send_usage,
            v7=services.ai_sdk_version == 7,
            files_at=chat_path,
            model=services.converting.model,
        )
        admit_messages(messages, v7=services.ai_sdk_version == 7)
        return Response(
            msgspec.json.encode(messages), media_type="application/json", headers=headers
        )


class ResumeEndpoint:
    """``GET /chat/{chat_id}/stream``: the stock ``useChat({ resume: true })`` asks here on
    mount. With a stream store (:mod:`adk_asgi.stores.resumable`) the chat's answer under way is
    sent from its first chunk and followed to its end; ``204`` says nothing is streaming (always,
    without a store). ``DELETE`` stops the answer under way (the user's stop button: the AI SDK's
    ``stop()`` only stops reading a resumable stream) and says so only once it ended
    (:mod:`adk_asgi.stores.stops`)."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def respond(self, request: Request) -> Response | SSEResponse:
        services = self.services
        try:
            identity = await services.identity_of(request)
        except ClientError as exc:
            return json_refusal(exc)
        chat_id = request.path_params["chat_id"]
        if not CHAT_ID.match(chat_id):
            return json_refusal(ClientError(400, CHAT_ID_RULE))
        store = services.streams
        headers = {"set-cookie": identity.set_cookie} if identity.set_cookie else None
        key = services.chat_key(identity.user_id, chat_id)
        if request.method == "DELETE":
            return await _stop(store, key, headers)
        stream_id = None if store is None else await store.active(key)
        if store is None or stream_id is None:
            return Response(status_code=204, headers=headers)
        replay = store.replay(key, stream_id)
        return SSEResponse(
            replay,
            abort=asyncio.Event(),
            headers=headers,
            write_interval=services.streaming.sse_write_interval,
            keep_alive=services.streaming.sse_keep_alive,
        )


async def _stop(
    store: StreamStore | None, key: ChatKey, headers: dict[str, str] | None
) -> Response:
    """``DELETE .../stream``: ``200 {"stopped": true}`` only once the answer ended, ``false``
    when nothing streamed; ``202`` when it still ran after :data:`~adk_asgi.stores.stops.STOP_WAIT`
    seconds; ``503`` when the stream store could not be reached (:mod:`adk_asgi.stores.stops`)."""
    try:
        found = "nothing" if store is None else await stop_answer(store, key)
    except StoreUnavailable as exc:
        return JSONResponse({"error": exc.reason}, status_code=503, headers=headers)
    if found == "running":
        return JSONResponse(
            {"stopped": False, "reason": STILL_RUNNING}, status_code=202, headers=headers
        )
    return JSONResponse({"stopped": found == "stopped"}, headers=headers)


STILL_RUNNING: Final = (
    f"the stop was asked, but the answer had not ended {STOP_WAIT:g} s later "
    "(a live answer cannot be stopped midway)"
)

_TRANSPORT_JS: Final = (resources.files("adk_asgi") / "static" / "transport.js").read_bytes()


async def transport_js(request: Request) -> Response:
    """The live ``ChatTransport`` (AI SDK v6 and v7) with the microphone and playback helpers."""
    return Response(
        _TRANSPORT_JS,
        media_type="text/javascript",
        headers={"cache-control": "public, max-age=3600"},
    )
