"""``AdkApp``: the ASGI sub-application that serves one ADK agent to AI SDK clients."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Sequence
from typing import Any, Final, Literal

from google.adk.agents._streaming_mode import StreamingMode  # run_config re-exports it implicitly
from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.artifacts.base_artifact_service import BaseArtifactService
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router
from starlette.types import Receive, Scope, Send

from .convert import EventConverter
from .encoding import ChunkEncoder
from .identity import BrowserCookieIdentity, Identify, Identity, Unauthorized, resolve_identity
from .locks import ChatBusy, ChatLocks
from .messages import ChatRequest, RequestError, decode_chat_request
from .sse import SSEResponse, sse_body
from .translate import TranslationError, user_content

_CHAT_ID: Final = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}$")
METADATA_KEY: Final = "adk_asgi"
"""The key under which the bridge tags every event of a run (``RunConfig.custom_metadata``)
with the ids the client knows, so history can be rebuilt with the same message ids."""


class ClientError(Exception):
    """A request the bridge refuses before anything runs: a 4xx with a JSON reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    def response(self, headers: dict[str, str] | None = None) -> Response:
        return JSONResponse({"error": self.reason}, status_code=self.status, headers=headers)


class AdkApp:
    """Serve an ADK agent to Vercel AI SDK chat clients.

    Mount it in any ASGI application (``Mount("/agent", AdkApp(agent))``). Routes, relative to
    the mount point:

    * ``POST /chat`` — the ``DefaultChatTransport`` endpoint: runs ``Runner.run_async`` and
      streams the UI message stream over SSE.
    * ``GET /chat/{chat_id}/stream`` — the resume endpoint; ``204`` when nothing is streaming.

    Each chat id is an ADK session of the requesting user (``identify``; by default an opaque
    per-browser cookie), created on first use. One run at a time per chat: a request that finds
    its chat busy waits up to ``busy_timeout`` seconds, then gets ``409``.
    """

    def __init__(
        self,
        agent: BaseAgent | None = None,
        *,
        app: App | None = None,
        app_name: str | None = None,
        session_service: BaseSessionService | None = None,
        artifact_service: BaseArtifactService | None = None,
        memory_service: BaseMemoryService | None = None,
        plugins: Sequence[BasePlugin] = (),
        run_config: RunConfig | None = None,
        identify: Identify | None = None,
        ai_sdk_version: Literal[6, 7] = 6,
        send_usage: bool = False,
        max_body_size: int = 4 * 1024 * 1024,
        busy_timeout: float = 30.0,
    ) -> None:
        if (agent is None) == (app is None):
            raise TypeError("pass exactly one of an agent or app=<google.adk App>")
        if app is None:
            assert agent is not None
            app = App(name=app_name or agent.name, root_agent=agent, plugins=list(plugins))
        elif plugins:
            app = app.model_copy(update={"plugins": [*app.plugins, *plugins]})
        self.adk_app = app
        self.session_service = session_service or InMemorySessionService()
        self.runner = Runner(
            app=app,
            app_name=app_name,
            session_service=self.session_service,
            artifact_service=artifact_service,
            memory_service=memory_service,
            auto_create_session=True,
        )
        self.app_name: str = self.runner.app_name
        base = run_config or RunConfig()
        self.run_config = base.model_copy(update={"streaming_mode": StreamingMode.SSE})
        self.identify = identify
        self.browser_identity = BrowserCookieIdentity()
        self.ai_sdk_version = ai_sdk_version
        self.send_usage = send_usage
        self.max_body_size = max_body_size
        self.busy_timeout = busy_timeout
        self.locks = ChatLocks()
        self.router = Router(
            routes=[
                Route("/chat", _ChatEndpoint(self), methods=["POST"]),
                Route("/chat/{chat_id}/stream", self._resume, methods=["GET"]),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.router(scope, receive, send)

    async def aclose(self) -> None:
        """Close the runner (and its plugins). Call it from the host app's lifespan."""
        await self.runner.close()

    # --- routes ------------------------------------------------------------------------------

    async def _resume(self, request: Request) -> Response:
        try:
            await self._identity(request)
        except ClientError as exc:
            return exc.response()
        # Streams are not kept for replay yet: nothing is ever resumable.
        return Response(status_code=204)

    # --- request checks ----------------------------------------------------------------------

    async def _identity(self, conn: HTTPConnection) -> Identity:
        try:
            return await resolve_identity(conn, self.identify, self.browser_identity)
        except Unauthorized as exc:
            raise ClientError(401, str(exc) or "authentication required") from None

    async def _read_body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_size:
            raise ClientError(413, f"the request body is larger than {self.max_body_size} bytes")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_size:
                raise ClientError(
                    413, f"the request body is larger than {self.max_body_size} bytes"
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def _decode(self, body: bytes) -> ChatRequest:
        try:
            chat = decode_chat_request(body)
        except RequestError as exc:
            raise ClientError(400, str(exc)) from None
        if not _CHAT_ID.match(chat.id):
            raise ClientError(400, "id: a chat id is 1-128 letters, digits or _.:@-")
        if not chat.messages:
            raise ClientError(400, "messages: the chat has no messages")
        if chat.trigger == "regenerate-message":
            raise ClientError(422, "regenerating a message is not supported")
        if chat.messages[-1].role != "user":
            raise ClientError(
                422,
                "the last message must be the user's new message (continuations of an "
                "assistant message are not supported yet)",
            )
        return chat

    def _run_config(self, chat: ChatRequest, message_id: str) -> RunConfig:
        tags: dict[str, Any] = {
            METADATA_KEY: {"messageId": message_id, "userMessageId": chat.messages[-1].id}
        }
        merged = {**(self.run_config.custom_metadata or {}), **tags}
        return self.run_config.model_copy(update={"custom_metadata": merged})


class _ChatEndpoint:
    """``POST /chat``: check the request, lock the chat, run the agent, stream the answer.

    An ASGI endpoint rather than a request → response function, so the chat lock can cover
    the checks and the whole stream: everything that can be refused is refused with a 4xx
    before the first byte of the 200.
    """

    def __init__(self, owner: AdkApp) -> None:
        self.owner = owner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        owner = self.owner
        request = Request(scope, receive)
        headers: dict[str, str] = {}
        try:
            identity = await owner._identity(request)
            if identity.set_cookie:
                headers["set-cookie"] = identity.set_cookie
            chat = owner._decode(await owner._read_body(request))
            async with owner.locks.hold((identity.user_id, chat.id), owner.busy_timeout):
                await self._run(identity, chat, headers, scope, receive, send)
        except ChatBusy as exc:
            await ClientError(409, str(exc)).response(headers)(scope, receive, send)
        except ClientError as exc:
            await exc.response(headers)(scope, receive, send)

    async def _run(
        self,
        identity: Identity,
        chat: ChatRequest,
        headers: dict[str, str],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        owner = self.owner
        try:
            new_message = user_content(chat.messages[-1])
        except TranslationError as exc:
            raise ClientError(400, f"messages[{len(chat.messages) - 1}]: {exc}") from None
        message_id = f"msg_{secrets.token_hex(12)}"
        abort = asyncio.Event()
        events = owner.runner.run_async(
            user_id=identity.user_id,
            session_id=chat.id,
            new_message=new_message,
            run_config=owner._run_config(chat, message_id),
            abort_signal=abort,
        )
        converter = EventConverter(message_id=message_id, send_usage=owner.send_usage)
        encoder = ChunkEncoder(v7=owner.ai_sdk_version == 7)
        body = sse_body(events, converter, encoder)
        await SSEResponse(body, abort=abort, headers=headers)(scope, receive, send)
