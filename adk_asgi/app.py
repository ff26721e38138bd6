"""``AdkApp``: the ASGI sub-application that serves one ADK agent to AI SDK clients."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from typing import Any, Final, Literal

import msgspec
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
from google.adk.tools.base_toolset import BaseToolset
from google.genai import types
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import Route, Router, WebSocketRoute
from starlette.types import Receive, Scope, Send

from .chat import ChatEndpoint
from .errors import ClientError
from .history import rebuild_messages
from .identity import BrowserCookieIdentity, Identify, Identity, Unauthorized, resolve_identity
from .live import LiveEndpoint, LiveToolGate
from .live_bridge import LiveBridge
from .locks import ChatLocks
from .messages import CHAT_ID, CHAT_ID_RULE, ChatRequest, RequestError, decode_chat_request
from .pending import METADATA_KEY, PAYLOADS_KEY, ToolCall
from .sse import DEFAULT_WRITE_INTERVAL
from .tools import ClientTool, PauseForClientTools, find_client_tools


def _new_message_id() -> str:
    return f"msg_{secrets.token_hex(12)}"


class AdkApp:
    """Serve an ADK agent to Vercel AI SDK chat clients.

    Mount it in any ASGI application (``Mount("/agent", AdkApp(agent))``). Routes, relative to
    the mount point:

    * ``POST /chat`` — the ``DefaultChatTransport`` endpoint: runs ``Runner.run_async`` and
      streams the UI message stream over SSE.
    * ``GET /chat/{chat_id}/stream`` — the resume endpoint; ``204`` when nothing is streaming.
    * ``GET /chat/{chat_id}/messages`` — the chat's history as ``UIMessage[]``.
    * ``WS /live`` — live mode: ``Runner.run_live`` behind the AI SDK v7
      ``WebSocketChatTransport`` protocol (docs/live.md).
    * ``GET /transport.js`` — the live transport for AI SDK v6 clients, with audio helpers.

    ``live_agent``: the agent ``WS /live`` runs, when it needs another model than ``agent``
    (Gemini's Live API has models of its own). It shares the app name, sessions, plugins and
    locks, so one chat can go on in either mode.

    Each chat id is an ADK session of the requesting user (``identify``; by default an opaque
    per-browser cookie), created on first use. One run at a time per chat: a request that finds
    its chat busy waits up to ``busy_timeout`` seconds, then gets ``409``.
    """

    def __init__(
        self,
        agent: BaseAgent | None = None,
        *,
        app: App | None = None,
        live_agent: BaseAgent | None = None,
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
        message_id_factory: Callable[[], str] | None = None,
        live_run_config: RunConfig | None = None,
        approval_timeout: float = 300.0,
        client_tool_timeout: float = 300.0,
        sse_write_interval: float = DEFAULT_WRITE_INTERVAL,
        live_write_interval: float = DEFAULT_WRITE_INTERVAL,
    ) -> None:
        if (agent is None) == (app is None):
            raise TypeError("pass exactly one of an agent or app=<google.adk App>")
        for name, interval in [
            ("sse_write_interval", sse_write_interval),
            ("live_write_interval", live_write_interval),
        ]:
            if not interval >= 0:
                raise ValueError(f"{name} must be >= 0 seconds: {interval!r}")
        if app is None:
            assert agent is not None
            app = App(name=app_name or agent.name, root_agent=agent, plugins=list(plugins))
        elif plugins:
            app = app.model_copy(update={"plugins": [*app.plugins, *plugins]})
        bridge_plugins = [PauseForClientTools(), LiveToolGate(self)]
        app = app.model_copy(update={"plugins": [*app.plugins, *bridge_plugins]})
        self.live_bridges: dict[int, LiveBridge] = {}
        """The live connections of this app, by their ``LiveRequestQueue`` (for the plugin)."""
        self.adk_app = app
        self.client_tools = _client_tools(app.root_agent)
        if live_agent is not None:
            self.client_tools.update(_client_tools(live_agent))
        self.asking_tools = _asking_tools(app.root_agent) | set(self.client_tools)
        self.author = getattr(app.root_agent, "name", app.name)
        """The author of the events the bridge records itself (approval markers)."""
        self.session_service = session_service or InMemorySessionService()
        self.runner = Runner(
            app=app,
            app_name=app_name,
            session_service=self.session_service,
            artifact_service=artifact_service,
            memory_service=memory_service,
            auto_create_session=True,
        )
        self.live_runner = self.runner
        """The runner of ``WS /live``: ``runner`` itself unless a ``live_agent`` was given."""
        if live_agent is not None:
            self.live_runner = Runner(
                app=app.model_copy(update={"root_agent": live_agent}),
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
        self.sse_write_interval = sse_write_interval
        """Seconds between SSE body writes: chunks arriving in between go out together."""
        self.live_write_interval = live_write_interval
        """Seconds between live text frames: deltas arriving in between go out as one chunk."""
        self.locks = ChatLocks()
        self.new_message_id = message_id_factory or _new_message_id
        self.base_live_run_config = live_run_config or RunConfig()
        self.approval_timeout = approval_timeout
        self.client_tool_timeout = client_tool_timeout
        self.router = Router(
            routes=[
                Route("/chat", ChatEndpoint(self), methods=["POST"]),
                Route("/chat/{chat_id}/stream", self._resume, methods=["GET"]),
                Route("/chat/{chat_id}/messages", self._messages, methods=["GET"]),
                WebSocketRoute("/live", LiveEndpoint(self)),
                Route("/transport.js", _transport_js, methods=["GET"]),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.router(scope, receive, send)

    async def aclose(self) -> None:
        """Close the runner (and its plugins). Call it from the host app's lifespan."""
        await self.runner.close()
        if self.live_runner is not self.runner:
            # Its plugins and services are the ones just closed; its toolsets are its own.
            shared = _toolsets(self.runner.agent)
            for toolset in _toolsets(self.live_runner.agent) - shared:
                await toolset.close()

    # --- routes ------------------------------------------------------------------------------

    async def _messages(self, request: Request) -> Response:
        """The chat as ``UIMessage[]`` (``[]`` for a chat that does not exist yet)."""
        try:
            identity = await self.identity_of(request)
        except ClientError as exc:
            return exc.response()
        chat_id = request.path_params["chat_id"]
        if not CHAT_ID.match(chat_id):
            return ClientError(400, CHAT_ID_RULE).response()
        session = await self.session_service.get_session(
            app_name=self.app_name, user_id=identity.user_id, session_id=chat_id
        )
        messages = rebuild_messages(session.events, self.needs_approval) if session else []
        headers = {"set-cookie": identity.set_cookie} if identity.set_cookie else None
        return Response(
            msgspec.json.encode(messages), media_type="application/json", headers=headers
        )

    async def _resume(self, request: Request) -> Response:
        try:
            await self.identity_of(request)
        except ClientError as exc:
            return exc.response()
        # Streams are not kept for replay yet: nothing is ever resumable.
        return Response(status_code=204)

    # --- request checks ----------------------------------------------------------------------

    async def identity_of(self, conn: HTTPConnection) -> Identity:
        try:
            return await resolve_identity(conn, self.identify, self.browser_identity)
        except Unauthorized as exc:
            raise ClientError(401, str(exc) or "authentication required") from None

    async def read_body(self, request: Request) -> bytes:
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

    def decode(self, body: bytes) -> ChatRequest:
        try:
            chat = decode_chat_request(body)
        except RequestError as exc:
            raise ClientError(400, str(exc)) from None
        self.check(chat)
        return chat

    def check(self, chat: ChatRequest) -> None:
        """What both transports refuse in a decoded chat request, with a 4xx reason."""
        if not CHAT_ID.match(chat.id):
            raise ClientError(400, f"id: {CHAT_ID_RULE}")
        if not chat.messages:
            raise ClientError(400, "messages: the chat has no messages")
        if chat.trigger == "regenerate-message":
            raise ClientError(422, "regenerating a message is not supported")
        if chat.messages[-1].role == "system":
            raise ClientError(422, "the last message must be a user or assistant message")
        payloads = chat.extra.get(PAYLOADS_KEY, {})
        if not isinstance(payloads, dict):
            raise ClientError(400, f"{PAYLOADS_KEY}: expected an object of approval id → payload")

    def run_config_for(self, message_id: str, user_message_id: str | None) -> RunConfig:
        """The run options of one request: the app's, tagged with the ids the client knows."""
        tags: dict[str, Any] = {"messageId": message_id}
        if user_message_id is not None:
            tags["userMessageId"] = user_message_id
        merged = {**(self.run_config.custom_metadata or {}), METADATA_KEY: tags}
        return self.run_config.model_copy(update={"custom_metadata": merged})

    def live_run_config(self, *, audio: bool) -> RunConfig:
        """The run options of a live connection: text replies, or speech with transcripts."""
        modality = types.Modality.AUDIO if audio else types.Modality.TEXT
        return self.base_live_run_config.model_copy(update={"response_modalities": [modality]})

    def needs_approval(self, call: ToolCall) -> bool:
        tool = self.client_tools.get(call.name)
        return tool is not None and tool.needs_approval(call.args)

    def may_ask(self, name: str) -> bool:
        """Whether a tool may ask the user before it runs (``require_confirmation`` set, or a
        client tool that needs approval). Tools that call ``request_confirmation`` themselves
        cannot be told apart: their approvals come after all of the step's calls."""
        return name in self.asking_tools

    def approval_needed(self, name: str, args: dict[str, Any]) -> bool:
        tool = self.client_tools.get(name)
        return tool is not None and tool.needs_approval(args)


def _tools(root: object) -> Iterator[Any]:
    """Every tool of the agent tree (functions, tools and toolsets, as the agents list them)."""
    agents = [root]
    while agents:
        agent = agents.pop()
        yield from getattr(agent, "tools", None) or []
        agents.extend(getattr(agent, "sub_agents", None) or [])


def _toolsets(root: object) -> set[BaseToolset]:
    """Every toolset of the agent tree (what ``Runner.close`` closes)."""
    return {tool for tool in _tools(root) if isinstance(tool, BaseToolset)}


def _asking_tools(root: object) -> set[str]:
    """The names of the agent tree's tools with ``require_confirmation`` set (ADK keeps it in
    ``FunctionTool._require_confirmation``; there is no public accessor)."""
    return {tool.name for tool in _tools(root) if getattr(tool, "_require_confirmation", False)}


def _client_tools(root: object) -> dict[str, ClientTool]:
    """Every client tool declared on the agent tree, by name."""
    return find_client_tools(list(_tools(root)))


_TRANSPORT_JS: Final = (resources.files("adk_asgi") / "static" / "transport.js").read_bytes()


async def _transport_js(request: Request) -> Response:
    """The live ``ChatTransport`` (AI SDK v6 and v7) with the microphone and playback helpers."""
    return Response(
        _TRANSPORT_JS,
        media_type="text/javascript",
        headers={"cache-control": "public, max-age=3600"},
    )
