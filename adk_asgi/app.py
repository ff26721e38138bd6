"""``AdkApp``: the ASGI sub-application that serves one ADK agent to AI SDK clients.

The app is a facade: it builds the runners and one frozen
:class:`~adk_asgi.serving.services.Services` object, and routes to endpoints that receive that
object, never the app (docs/internals/architecture.md#layers).

Internal: not an import path of the public API; :mod:`adk_asgi` exports its public
names (docs/reference.md#import-paths).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
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

from adk_asgi.bridge import bridged
from adk_asgi.convert.failures import mask_errors
from adk_asgi.convert.metadata import agent_model
from adk_asgi.convert.options import ConverterOptions
from adk_asgi.hitl.policy import ToolPolicy, toolsets
from adk_asgi.live.endpoint import LiveEndpoint
from adk_asgi.routes.chats import ChatsEndpoint
from adk_asgi.routes.files import FilesEndpoint
from adk_asgi.routes.reads import MessagesEndpoint, ResumeEndpoint, transport_js
from adk_asgi.server_answers import answer_call
from adk_asgi.serving import start_up
from adk_asgi.serving.a2a_import import skip_failed_a2a_import
from adk_asgi.serving.identity import BrowserCookieIdentity, Identify
from adk_asgi.serving.live_refusal import live_refusal
from adk_asgi.serving.options import Limits, Messages, Security, Stores, Streaming
from adk_asgi.serving.origins import ANY as ANY_ORIGIN
from adk_asgi.serving.origins import OriginGuard, OriginPolicy
from adk_asgi.serving.request_state import RequestState
from adk_asgi.serving.sdk_versions import SdkVersion, checked_sdk_version
from adk_asgi.serving.services import Services
from adk_asgi.serving.session_handover import HandingOver
from adk_asgi.serving.user_bounds import UserBounds, UserLoad
from adk_asgi.sse.chat import ChatEndpoint
from adk_asgi.stores.defaults import claims_for, locks_for

logger = logging.getLogger("adk_asgi")


def _new_message_id() -> str:
    return f"msg_{secrets.token_hex(12)}"


DEFAULT_BOUNDS: Final = UserBounds()
"""``AdkApp``'s ``user_bounds`` unless given (:class:`UserBounds`'s defaults)."""
DEFAULT_LIMITS: Final = Limits()
DEFAULT_STREAMING: Final = Streaming()
DEFAULT_MESSAGES: Final = Messages()
DEFAULT_STORES: Final = Stores()
DEFAULT_SECURITY: Final = Security()


class AdkApp:
    """Serve an ADK agent to Vercel AI SDK chat clients.

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

    Each chat id is an ADK session of the requesting user (``identify``; by default an opaque
    per-browser cookie), created on first use, and runs once at a time.

    What ADK's ``Runner`` takes (the services, plugins, run configs) is passed as ADK names it;
    ``live_agent`` is the agent ``WS /live`` runs when live mode needs another model. The rest
    comes in typed groups, each defaulted as a whole (:mod:`adk_asgi.serving.options`):
    ``limits`` (sizes, timeouts), ``streaming`` (write coalescing, keep-alive), ``messages``
    (usage, metadata, ids, error text, dynamic tools), ``stores`` (locks, claims, resumable
    streams), ``security`` (origins, file URLs) and ``user_bounds`` (what one user may hold).
    Every option, with its type and default: docs/reference.md.
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
        live_run_config: RunConfig | None = None,
        identify: Identify | None = None,
        request_state: RequestState | None = None,
        ai_sdk_version: SdkVersion = 6,
        limits: Limits = DEFAULT_LIMITS,
        streaming: Streaming = DEFAULT_STREAMING,
        messages: Messages = DEFAULT_MESSAGES,
        stores: Stores = DEFAULT_STORES,
        security: Security = DEFAULT_SECURITY,
        user_bounds: UserBounds = DEFAULT_BOUNDS,
    ) -> None:
        if (agent is None) == (app is None):
            raise TypeError("pass exactly one of an agent or app=<google.adk App>")
        for name, group, kind in [
            ("limits", limits, Limits),
            ("streaming", streaming, Streaming),
            ("messages", messages, Messages),
            ("stores", stores, Stores),
            ("security", security, Security),
            ("user_bounds", user_bounds, UserBounds),
        ]:
            if not isinstance(group, kind):
                raise TypeError(f"{name} must be a {kind.__name__}(...): {group!r}")
        if identify is None and ANY_ORIGIN in security.allowed_origins:
            # Any site's page could then chat, upload and delete as the visitor: the
            # identity cookie travels with every request the browser sends.
            raise ValueError(
                "allowed_origins=['*'] with the default identity (a browser cookie) lets every"
                " web site act as your users: list your frontends' origins, or pass an"
                " identify that reads a token (docs/security.md)"
            )
        origins = OriginPolicy.of(
            security.allowed_origins, trust_forwarded=security.trust_forwarded
        )
        skip_failed_a2a_import()  # a missing module ADK imports every run (serving/a2a_import.py)
        if app is None:
            assert agent is not None
            app = App(name=app_name or agent.name, root_agent=agent, plugins=list(plugins))
        elif plugins:
            app = app.model_copy(update={"plugins": [*app.plugins, *plugins]})
        app = bridged(app)  # (adk_asgi/bridge.py)
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
        self.locks = stores.locks if stores.locks is not None else locks_for(self.session_service)
        """Per-chat serialization: by default in the session database
        (:mod:`adk_asgi.stores.defaults`)."""
        self.claims = (
            stores.claims if stores.claims is not None else claims_for(self.session_service)
        )
        """Where answers are claimed (acted on once): by default, next to the sessions."""
        agents = [app.root_agent] + ([live_agent] if live_agent is not None else [])
        self.services = Services(
            runner=self.runner,
            live_runner=self.live_runner,
            session_service=handing_over,  # reads and writes made safe (convert/safe_history.py)
            artifact_service=self.runner.artifact_service,
            app_name=self.app_name,
            author=getattr(app.root_agent, "name", app.name),
            tools=ToolPolicy.of(*agents, dynamic=messages.dynamic_tools),
            locks=self.locks,
            claims=self.claims,
            streams=stores.streams,
            limits=limits,
            streaming=streaming,
            run_config=(run_config or RunConfig()).model_copy(
                update={"streaming_mode": StreamingMode.SSE}
            ),
            live_run_config=live_run_config or RunConfig(),
            identify=identify,
            browser_identity=BrowserCookieIdentity(),
            ai_sdk_version=checked_sdk_version(ai_sdk_version, *agents),
            converting=ConverterOptions(
                send_usage=messages.send_usage,
                message_metadata=messages.message_metadata,
                on_error=messages.on_error or mask_errors,
                speakers=any(bool(getattr(agent, "sub_agents", None)) for agent in agents),
                model=agent_model(app.root_agent),
            ),
            new_message_id=messages.message_id_factory or _new_message_id,
            user_load=UserLoad(user_bounds),
            live_refusal=live_refusal(self.live_runner.agent),
            allowed_file_url=security.allowed_file_url,
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
        self._guarded = OriginGuard(self.router, origins)
        """The routes behind the ``Origin`` check (:mod:`adk_asgi.serving.origins`)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._guarded(scope, receive, send)

    async def prepare(self) -> None:
        """Create what the session service needs (a database's tables) now, once, instead of
        lazily in the first requests, where two workers racing to create them fail; and say
        which stores the app picked, warning of what several workers would not share
        (:mod:`adk_asgi.serving.start_up`). Call it from the host app's lifespan
        (``AdkMiddleware`` does)."""
        await start_up.prepare(self.app_name, self.session_service, self.locks, self.claims)

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
