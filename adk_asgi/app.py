"""``AdkApp``: the ASGI sub-application that serves one ADK agent to AI SDK clients.

The app is a facade: it builds the runners and one frozen
:class:`~adk_asgi.serving.services.Services` object, and routes to endpoints that receive that
object, never the app (docs/internals/architecture.md#layers).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import secrets
from collections.abc import Callable, Sequence
from typing import Any, Final

# (ADK documents this import of StreamingMode; run_config lists no __all__, so to mypy --strict it
# is not exported: the ignore goes when ADK exports it there)
from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.apps.app import App
from google.adk.artifacts.base_artifact_service import BaseArtifactService
from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.workflow import BaseNode
from starlette.routing import Route, Router, WebSocketRoute
from starlette.types import Receive, Scope, Send

from adk_asgi.convert.failures import ErrorHandler, mask_errors
from adk_asgi.convert.metadata import MessageMetadata, agent_model
from adk_asgi.convert.options import ConverterOptions
from adk_asgi.convert.safe_history import ReadableRequests
from adk_asgi.hitl.dynamic_tools import DynamicTools
from adk_asgi.hitl.policy import ToolPolicy, toolsets
from adk_asgi.live.app_plugins import reported
from adk_asgi.live.endpoint import LiveEndpoint
from adk_asgi.live.tools import LiveToolGate
from adk_asgi.routes.chats import ChatsEndpoint
from adk_asgi.routes.files import FilesEndpoint
from adk_asgi.routes.reads import MessagesEndpoint, ResumeEndpoint, transport_js
from adk_asgi.server_answers import answer_call
from adk_asgi.serving.a2a_import import skip_failed_a2a_import
from adk_asgi.serving.as_returned import AsReturned
from adk_asgi.serving.call_order import ResultsInCallOrder
from adk_asgi.serving.file_urls import AllowFileUrl
from adk_asgi.serving.finish_tools import FinishRanTools
from adk_asgi.serving.identity import BrowserCookieIdentity, Identify
from adk_asgi.serving.invalid_calls import InvalidCalls
from adk_asgi.serving.live_refusal import live_refusal
from adk_asgi.serving.origins import ANY as ANY_ORIGIN
from adk_asgi.serving.origins import OriginGuard, OriginPolicy
from adk_asgi.serving.pace import PaceToReader
from adk_asgi.serving.plugin_chain import BRIDGE_ORDER, PluginChain
from adk_asgi.serving.request_state import RequestState
from adk_asgi.serving.sdk_versions import SdkVersion, checked_sdk_version
from adk_asgi.serving.services import Limits, Services
from adk_asgi.serving.session_handover import HandingOver
from adk_asgi.serving.user_bounds import UserBounds, UserLoad
from adk_asgi.sse.chat import ChatEndpoint
from adk_asgi.sse.pause import PauseForClientTools
from adk_asgi.sse.writer import DEFAULT_KEEP_ALIVE, DEFAULT_WRITE_INTERVAL
from adk_asgi.stores.claims import Claims, InMemoryClaims
from adk_asgi.stores.defaults import claims_for, describe, locks_for
from adk_asgi.stores.locks import ChatLocks, InMemoryChatLocks
from adk_asgi.stores.resumable import StreamStore

logger = logging.getLogger("adk_asgi")


def _several_workers() -> bool:
    """Whether this process is one of several workers (uvicorn's are multiprocessing children;
    ``WEB_CONCURRENCY`` is the worker count uvicorn and gunicorn read)."""
    concurrency = os.environ.get("WEB_CONCURRENCY", "1")
    return multiprocessing.parent_process() is not None or concurrency not in ("", "1")


def _start_up_logger() -> logging.Logger:
    """Where ``prepare()`` says what it picked: the ``adk_asgi`` logger when the host app's
    logging shows its ``INFO``; else uvicorn's own logger, which plain ``uvicorn`` shows (its
    log config gives ``adk_asgi`` no handler, so the line was lost under it)."""
    if logger.isEnabledFor(logging.INFO) and logger.hasHandlers():
        return logger
    server = logging.getLogger("uvicorn.error")
    if server.isEnabledFor(logging.INFO) and server.hasHandlers():
        return server
    return logger


def _new_message_id() -> str:
    return f"msg_{secrets.token_hex(12)}"


DEFAULT_BOUNDS: Final = UserBounds()
"""``AdkApp``'s ``user_bounds`` unless given (:class:`UserBounds`'s defaults)."""


class AdkApp:
    """Serve an ADK agent to Vercel AI SDK chat clients.

    Every option below, grouped, with its type and default: docs/reference.md.

    Mount it in any ASGI application (``Mount("/agent", AdkApp(agent))``). Routes, relative to
    the mount point:

    * ``POST /chat`` — the ``DefaultChatTransport`` endpoint: runs ``Runner.run_async`` and
      streams the UI message stream over SSE.
    * ``GET /chat/{chat_id}/stream`` — the resume endpoint; ``204`` when nothing is streaming.
    * ``GET /chat/{chat_id}/messages`` — the chat's history as ``UIMessage[]``.
    * ``GET /chats`` — the user's chats (id, title, updated); ``DELETE /chat/{chat_id}``.
    * ``WS /live`` — live mode: ``Runner.run_live`` behind the AI SDK v7
      ``WebSocketChatTransport`` protocol (docs/live.md).
    * ``GET /transport.js`` — the live transport for AI SDK v6 clients, with audio helpers.

    ``live_agent``: the agent ``WS /live`` runs, when it needs another model than ``agent``
    (Gemini's Live API has models of its own). It shares the app name, sessions, plugins and
    locks, so one chat can go on in either mode.

    Each chat id is an ADK session of the requesting user (``identify``; by default an opaque
    per-browser cookie), created on first use. One run at a time per chat: a request that finds
    its chat busy waits up to ``busy_timeout`` seconds, then gets ``409``.

    ``locks``: where that one-run-per-chat rule is kept. By default, in the session database,
    which every worker shares (PostgreSQL advisory locks, leases in a SQLite file;
    :mod:`adk_asgi.stores.defaults`), and in this process for in-memory sessions; or pass
    ``RedisChatLocks`` (:mod:`adk_asgi.stores.locks_redis`) or ``PostgresChatLocks``.

    ``streams``: where each chat's answer under way is kept so that a reload, or another
    connection, resumes it (:mod:`adk_asgi.stores.resumable`; ``RedisStreamStore`` across workers).
    With a store, an answer outlives its reader: an SSE run goes on when its request is gone,
    and a live answer whose socket closed goes on for up to ``live_detached_timeout`` seconds
    (less than ``busy_timeout``, which a reconnecting client waits for its chat).

    ``max_body_size`` bounds a ``POST /chat`` body (``413``), ``max_frame_size`` (by default
    the same) a ``WS /live`` frame (close ``1009``); a body that pauses for ``body_timeout``
    seconds mid-way gets ``408`` and its connection is closed (docs/security.md).

    ``on_error``: what the client is shown when the agent fails (it gets an
    :class:`~adk_asgi.convert.failures.AgentError`, returns the text). By default the error is
    logged and the client reads "An error occurred."; ``adk_asgi.convert.failures.show_errors``
    shows the error itself (development).

    ``allowed_origins``: the web origins (``"https://app.example"``) that may open ``WS /live``
    and send ``POST``/``DELETE`` besides the request's own; another browser origin gets ``403``.
    ``["*"]`` (every origin) needs an ``identify`` of your own (a token): with the default
    cookie identity it is refused here.
    ``trust_forwarded``: the request's own origin is what a proxy's ``Forwarded`` /
    ``X-Forwarded-Host`` headers say. ``allowed_file_url(url, user_id) -> bool``: file URLs a
    user message may carry besides ``data:`` and the chat's own uploads (docs/security.md).

    ``request_state(extras, user_id) -> dict`` (or an awaitable of it): what the keys the
    client added to a ``POST /chat`` body (``useChat`` / ``sendMessage``'s ``body``) write into
    the session state before the run; raise ``ValueError`` to refuse them (``422``)
    (:mod:`adk_asgi.serving.request_state`, docs/sse.md#request-extras). Without it they are
    ignored.

    ``message_metadata(moment) -> dict | None``: the metadata an assistant message's ``start``,
    each ``finish-step`` and ``finish`` carry (the AI SDK's ``messageMetadata``), from what ADK
    knows of the response: when it started, its model, author, usage and finish reason
    (:class:`~adk_asgi.convert.metadata.MessageMoment`). History calls it again with the same
    moments, so it must depend on nothing else (docs/metadata.md).

    ``user_bounds``: what one user may hold at once in each worker, so that one browser cannot
    starve the others: live sockets and chat requests (past them ``429``, or a live close
    ``1013``), and the bytes of files one chat keeps (``413``);
    :class:`~adk_asgi.serving.user_bounds.UserBounds`, docs/security.md#bounds.

    ``ai_sdk_version``: the clients' ``ai`` major version, 5, 6 or 7 (docs/ai-sdk-versions.md);
    with 5, tools that ask for approval are refused here (``ValueError``): ai@5 cannot answer.

    ``dynamic_tools``: the tools sent as ``dynamic-tool`` parts, a collection of names or a
    predicate of a name; by default the tools of the agents' toolsets (``McpToolset``…)
    (:mod:`adk_asgi.hitl.dynamic_tools`, docs/tools.md#dynamic-tools).
    """

    def __init__(
        self,
        agent: BaseNode | None = None,
        *,
        app: App | None = None,
        live_agent: BaseNode | None = None,
        app_name: str | None = None,
        session_service: BaseSessionService | None = None,
        artifact_service: BaseArtifactService | None = None,
        memory_service: BaseMemoryService | None = None,
        plugins: Sequence[BasePlugin] = (),
        run_config: RunConfig | None = None,
        identify: Identify | None = None,
        ai_sdk_version: SdkVersion = 6,
        send_usage: bool = False,
        message_metadata: MessageMetadata | None = None,
        max_body_size: int = 4 * 1024 * 1024,
        max_frame_size: int | None = None,
        body_timeout: float = 15.0,
        busy_timeout: float = 30.0,
        message_id_factory: Callable[[], str] | None = None,
        live_run_config: RunConfig | None = None,
        approval_timeout: float = 300.0,
        client_tool_timeout: float = 300.0,
        sse_write_interval: float = DEFAULT_WRITE_INTERVAL,
        live_write_interval: float = DEFAULT_WRITE_INTERVAL,
        locks: ChatLocks | None = None,
        claims: Claims | None = None,
        streams: StreamStore | None = None,
        live_detached_timeout: float = 25.0,
        on_error: ErrorHandler | None = None,
        sse_keep_alive: float | None = DEFAULT_KEEP_ALIVE,
        allowed_origins: Sequence[str] = (),
        trust_forwarded: bool = False,
        allowed_file_url: AllowFileUrl | None = None,
        request_state: RequestState | None = None,
        dynamic_tools: DynamicTools | None = None,
        user_bounds: UserBounds = DEFAULT_BOUNDS,
    ) -> None:
        if (agent is None) == (app is None):
            raise TypeError("pass exactly one of an agent or app=<google.adk App>")
        for name, interval in [
            ("sse_write_interval", sse_write_interval),
            ("live_write_interval", live_write_interval),
        ]:
            if not interval >= 0:
                raise ValueError(f"{name} must be >= 0 seconds: {interval!r}")
        skip_failed_a2a_import()  # a missing module ADK imports every run (serving/a2a_import.py)
        if app is None:
            assert agent is not None
            app = App(name=app_name or agent.name, root_agent=agent, plugins=list(plugins))
        elif plugins:
            app = app.model_copy(update={"plugins": [*app.plugins, *plugins]})
        invalid_calls = InvalidCalls()
        live_gate = LiveToolGate(invalid_calls)
        bridge_plugins = [
            invalid_calls,
            AsReturned(),
            ReadableRequests(),
            ResultsInCallOrder(),
            PauseForClientTools(),
            live_gate,
            FinishRanTools(),
            PaceToReader(),
        ]
        # One plugin, its members in BRIDGE_ORDER (serving/plugin_chain.py: the order and why).
        bridge = PluginChain("adk_asgi", bridge_plugins, order=BRIDGE_ORDER)
        own = reported(app.plugins, live_gate)  # (live/app_plugins.py: why)
        app = app.model_copy(update={"plugins": [*own, bridge]})
        self.adk_app = app
        self.session_service = session_service or InMemorySessionService()
        handing_over = HandingOver(self.session_service)

        def runner(app: App) -> Runner:
            return Runner(
                app=app,
                app_name=app_name,
                session_service=handing_over,
                # (ADK's own tools, load_artifacts and code execution among them, need one;
                # ADK's runners and dev servers give the same in-memory default)
                artifact_service=artifact_service or InMemoryArtifactService(),
                memory_service=memory_service,
                auto_create_session=True,
            )

        self.runner = runner(app)
        self.live_runner = self.runner
        if live_agent is not None:
            self.live_runner = runner(app.model_copy(update={"root_agent": live_agent}))
        """The runner of ``WS /live``: ``runner`` itself unless a ``live_agent`` was given."""
        self.app_name: str = self.runner.app_name
        self.locks = locks if locks is not None else locks_for(self.session_service)
        """Per-chat serialization: by default in the session database
        (:mod:`adk_asgi.stores.defaults`)."""
        self.claims = claims if claims is not None else claims_for(self.session_service)
        """Where answers are claimed (acted on once): by default, next to the sessions."""
        agents = [app.root_agent] + ([live_agent] if live_agent is not None else [])
        self.services = Services(
            runner=self.runner,
            live_runner=self.live_runner,
            session_service=handing_over,  # reads and writes made safe (convert/safe_history.py)
            artifact_service=self.runner.artifact_service,
            app_name=self.app_name,
            author=getattr(app.root_agent, "name", app.name),
            tools=ToolPolicy.of(*agents, dynamic=dynamic_tools),
            locks=self.locks,
            claims=self.claims,
            streams=streams,
            limits=Limits(
                max_body_size=max_body_size,
                max_frame_size=max_body_size if max_frame_size is None else max_frame_size,
                body_timeout=body_timeout,
                busy_timeout=busy_timeout,
                approval_timeout=approval_timeout,
                client_tool_timeout=client_tool_timeout,
                sse_write_interval=sse_write_interval,
                sse_keep_alive=sse_keep_alive,
                live_write_interval=live_write_interval,
                live_detached_timeout=live_detached_timeout,
            ),
            run_config=(run_config or RunConfig()).model_copy(
                update={"streaming_mode": StreamingMode.SSE}
            ),
            live_run_config=live_run_config or RunConfig(),
            identify=identify,
            browser_identity=BrowserCookieIdentity(),
            ai_sdk_version=checked_sdk_version(ai_sdk_version, *agents),
            converting=ConverterOptions(
                send_usage=send_usage,
                message_metadata=message_metadata,
                on_error=on_error or mask_errors,
                speakers=any(bool(getattr(agent, "sub_agents", None)) for agent in agents),
                model=agent_model(app.root_agent),
            ),
            new_message_id=message_id_factory or _new_message_id,
            user_load=UserLoad(user_bounds),
            live_refusal=live_refusal(self.live_runner.agent),
            allowed_file_url=allowed_file_url,
            request_state=request_state,
        )
        """What the endpoints are given (they never see the app itself)."""
        chats = ChatsEndpoint(self.services)
        self.router = Router(
            routes=[
                Route("/chat", ChatEndpoint(self.services), methods=["POST"]),
                Route("/chats", chats.list, methods=["GET"]),
                Route("/chat/{chat_id}", chats.delete, methods=["DELETE"]),
                Route(
                    "/chat/{chat_id}/stream",
                    ResumeEndpoint(self.services).respond,
                    methods=["GET", "DELETE"],
                ),
                Route(
                    "/chat/{chat_id}/files/{name:path}",
                    FilesEndpoint(self.services).respond,
                    methods=["GET"],
                ),
                Route(
                    "/chat/{chat_id}/messages",
                    MessagesEndpoint(self.services).respond,
                    methods=["GET"],
                ),
                WebSocketRoute("/live", LiveEndpoint(self.services)),
                Route("/transport.js", transport_js, methods=["GET"]),
            ]
        )
        if identify is None and ANY_ORIGIN in allowed_origins:
            # Any site's page could then chat, upload and delete as the visitor: the
            # identity cookie travels with every request the browser sends.
            raise ValueError(
                "allowed_origins=['*'] with the default identity (a browser cookie) lets every"
                " web site act as your users: list your frontends' origins, or pass an"
                " identify that reads a token (docs/security.md)"
            )
        origins = OriginPolicy.of(allowed_origins, trust_forwarded=trust_forwarded)
        self._guarded = OriginGuard(self.router, origins)
        """The routes behind the ``Origin`` check (:mod:`adk_asgi.serving.origins`)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._guarded(scope, receive, send)

    async def prepare(self) -> None:
        """Create what the session service needs (a database's tables) now, once, instead of
        lazily in the first requests, where two workers racing to create them fail. Call it
        from the host app's lifespan (``AdkMiddleware`` does). Workers starting together are
        serialized by ``locks``; with in-process locks a failed attempt is retried, since the
        other worker's creation is what made it fail."""
        if _several_workers():
            if isinstance(self.session_service, InMemorySessionService):
                logger.warning(
                    "adk_asgi: several workers share nothing with in-memory sessions: a chat's "
                    "requests must all reach one worker. Use a database session service "
                    "(docs/deployment.md)."
                )
            elif isinstance(self.locks, InMemoryChatLocks):
                logger.warning(
                    "adk_asgi: several workers lock chats each in its own memory: two messages "
                    "of one chat on two workers at once fail. Use RedisChatLocks or "
                    "PostgresChatLocks (docs/deployment.md)."
                )
            if not isinstance(self.session_service, InMemorySessionService) and isinstance(
                self.claims, InMemoryClaims
            ):
                logger.warning(
                    "adk_asgi: several workers claim answers each in its own memory: an "
                    "approval may be acted on once per worker, not once. Pass claims= a store "
                    "the workers share (docs/deployment.md#exactly-once)."
                )
        _start_up_logger().info(
            "adk_asgi: chats are locked with %s; answers are claimed with %s",
            describe(self.locks),
            describe(self.claims),
        )
        prepare_tables = getattr(self.session_service, "prepare_tables", None)
        async with self.locks.hold((self.app_name, "", "adk_asgi:prepare"), wait=120):
            for attempt in range(1, 6):
                try:
                    if prepare_tables is not None:
                        await prepare_tables()
                    await self.claims.prepare()
                    return
                except Exception:
                    if attempt == 5:
                        raise
                    logger.info(
                        "adk_asgi: creating the session tables failed; again", exc_info=True
                    )
                    await asyncio.sleep(0.2 * attempt)

    async def answer_call(self, user_id: str, chat_id: str, call_id: str, result: Any) -> str:
        """Answer an open long-running call that only the server may answer (a back office's
        decision) with ``result``, once across workers, and run the agent on; returns the id
        of the message the outcome went to (docs/hitl.md#tools-the-server-answers)."""
        return await answer_call(self.services, user_id, chat_id, call_id, result)

    async def aclose(self) -> None:
        """Close the runner (and its plugins), the locks, claims and streams. Call it from the
        host app's lifespan. Every close is tried even when one fails (a lock backend that is
        down must not leave the runner's toolsets open), then the first failure is raised."""
        closes = [self.runner.close, self.locks.aclose, self.claims.aclose]
        if self.services.streams is not None:
            closes.append(self.services.streams.aclose)
        if self.live_runner is not self.runner:
            # Its plugins and services are the ones just closed; its toolsets are its own.
            shared = toolsets(self.runner.agent)
            closes.extend(t.close for t in toolsets(self.live_runner.agent) - shared)
        first: BaseException | None = None
        for close in closes:
            try:
                await close()
            except Exception as exc:
                logger.warning("adk_asgi: closing %r failed", close, exc_info=True)
                first = first or exc
        if first is not None:
            raise first
