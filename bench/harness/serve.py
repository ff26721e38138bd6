"""One benchmark server: ``python -m bench.harness.serve KIND FD``, ``KIND`` one of :data:`KINDS`.

Each server runs in its own process so the client never shares an event loop with it, on a
listening socket the parent bound to 127.0.0.1 (passed as ``FD``: no port race, no retry loop),
with the same uvicorn settings for both: uvicorn's defaults apart from logging.

``adk_asgi_shared`` is a multi-worker deployment (``bench.scale_out``): uvicorn's own
supervisor (``workers=``, its ``Multiprocess``) with ``BENCH_WORKERS`` worker processes on the
one listening socket, the app's pieces chosen by environment variables (:func:`shared_app`).
``ag_ui_adk`` is the peer (``bench.harness.peers``), ``adk_bare`` the thinnest HTTP server of the
agent (:func:`bare_app`; ``BENCH_SKIP_A2A=1``: with ADK's failed import skipped as ``AdkApp``
skips it). ``BENCH_GC_FREEZE=1``: what the app's import and construction made is moved out of
the collector's reach (``gc.freeze()``) before the server starts. An A/B of two commits runs
this module from each checkout (``bench.harness.servers.checkout``), not a patched app.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import uvicorn
from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.apps.app import App
from google.adk.cli.utils.base_agent_loader import BaseAgentLoader
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.supervisors.multiprocess import Multiprocess

from adk_asgi import AdkApp, Stores, Streaming, UserBounds
from adk_asgi.serving.a2a_import import skip_failed_a2a_import
from adk_asgi.stores.locks import ChatLocks, InMemoryChatLocks
from adk_asgi.stores.resumable import InMemoryStreamStore, StreamStore
from adk_asgi.wire.encoding import SSE_DONE
from bench.harness.agent import (
    APP_NAME,
    ONE_USER_FOR_MANY,
    USER_ID,
    make_agent,
    quiet,
    user_message,
)
from bench.harness.probes import with_cpu_probe

KINDS = ("adk_asgi", "adk_run_sse", "adk_asgi_shared", "ag_ui_adk", "adk_bare")


class _ObjectLoader(BaseAgentLoader):
    """Serves one agent object by name, so ADK's server needs no agents directory."""

    def __init__(self, agent: BaseAgent) -> None:
        self.agent = agent

    def load_agent(self, agent_name: str) -> BaseAgent:
        if agent_name != APP_NAME:
            raise ValueError(agent_name)
        return self.agent

    def list_agents(self) -> list[str]:
        return [APP_NAME]


UNMERGED: Final = "/agent-unmerged"
"""The same app with one write per SSE chunk and one frame per live delta (no coalescing), so
the bench can show what coalescing changes, side by side on one server."""


RESUMABLE: Final = "/agent-resumable"
"""The same app with a stream store (``Stores(streams=)``): every answer kept while it streams,
so the bench shows what resumable streams cost next to the same app without them."""


def stream_store() -> StreamStore:
    """Redis's when ``BENCH_REDIS_URL`` names a server, else the in-memory store."""
    url = os.environ.get("BENCH_REDIS_URL")
    if url:
        from adk_asgi.stores.resumable_redis import RedisStreamStore

        return RedisStreamStore(url)
    return InMemoryStreamStore()


def adk_asgi_app() -> ASGIApp:
    """``AdkApp`` mounted the way the docs show; a fixed identity, as behind real auth."""
    chat = AdkApp(make_agent(), identify=lambda conn: USER_ID, user_bounds=ONE_USER_FOR_MANY)
    unmerged = AdkApp(
        make_agent(),
        identify=lambda conn: USER_ID,
        user_bounds=ONE_USER_FOR_MANY,
        streaming=Streaming(sse_write_interval=0, live_write_interval=0),
    )
    resumable = AdkApp(
        make_agent(),
        identify=lambda conn: USER_ID,
        user_bounds=ONE_USER_FOR_MANY,
        stores=Stores(streams=stream_store()),
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await chat.aclose()
        await unmerged.aclose()
        await resumable.aclose()

    routes = [
        Mount("/agent", app=chat),
        Mount(UNMERGED, app=unmerged),
        Mount(RESUMABLE, app=resumable),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def adk_run_sse_app() -> ASGIApp:
    """ADK's own API server (what ``adk api_server`` serves), in memory, without the web UI."""
    from google.adk.cli.fast_api import get_fast_api_app

    return get_fast_api_app(
        agents_dir=tempfile.mkdtemp(prefix="bench-agents-"),
        agent_loader=_ObjectLoader(make_agent()),
        session_service_uri="memory://",
        artifact_service_uri="memory://",
        memory_service_uri="memory://",
        use_local_storage=False,
        web=False,
    )


BARE_PATH: Final = "/bare"
BARE_TEXT: Final = b'data: {"text"'
_HEADERS: Final = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


def bare_app() -> ASGIApp:
    """The thinnest HTTP server of the agent: ``run_async`` behind a raw ASGI endpoint.

    ``POST /bare`` with ``{"deltas": N}``: a session created in memory, then one SSE frame per
    partial event, ``data: {"text": ...}``, and ``data: [DONE]``. No checks, no lock, no
    converter: what any HTTP server of this agent pays over the in-process floor (uvicorn, loopback
    TCP, httpx, a process woken for the request), measured in the same rounds as the other rows. The
    ``adk_asgi`` row over this one is the bridge's own share of the time to first text; this row
    over the floor is the transport's, which no server can avoid.
    """
    sessions = InMemorySessionService()
    runner = Runner(app=App(name=APP_NAME, root_agent=make_agent()), session_service=sessions)
    run_config = RunConfig(streaming_mode=StreamingMode.SSE)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != BARE_PATH:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        deltas = int(json.loads(body)["deltas"])
        session = await sessions.create_session(app_name=APP_NAME, user_id=USER_ID)
        await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
        async for event in runner.run_async(
            user_id=USER_ID,
            session_id=session.id,
            new_message=user_message(deltas),
            run_config=run_config,
        ):
            parts = event.content.parts if event.partial and event.content else None
            if parts and parts[0].text:
                frame = b"data: " + json.dumps({"text": parts[0].text}).encode() + b"\n\n"
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": SSE_DONE, "more_body": False})

    return app


def raise_fd_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (a thousand sockets
    need more than the usual 1,024); children inherit it. Returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        wanted = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        with suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def shared_app() -> ASGIApp:
    """``AdkApp`` at ``/agent`` as a multi-worker deployment builds it (docs/deployment.md), its
    pieces named by the environment (uvicorn's ``factory``: built in each worker):

    * ``BENCH_SESSIONS``: a SQLAlchemy URL for ADK's ``DatabaseSessionService`` (its engine's
      default pool), or ``memory``;
    * ``BENCH_LOCKS``: a Redis URL for ``RedisChatLocks``, ``memory`` (in-process locks), or
      ``default`` (none given: the app's own, in the session database);
    * ``BENCH_STREAMS``: a Redis URL for ``RedisStreamStore``, ``memory`` for
      ``InMemoryStreamStore``, or ``none``;
    * ``BENCH_DELTA_DELAY``: seconds the model takes per delta (0 by default);
    * ``BENCH_USER_REQUESTS``: ``UserBounds(requests=N)`` (the default bounds unless given);
    * ``BENCH_USER_HEADER=1``: the user is the request's ``x-user`` header (``bench.starvation``:
      several users), else every request is :data:`~bench.harness.agent.USER_ID`;
    * ``BENCH_REDIS_POOL``: ``url`` (the default) passes them the URL, as docs/deployment.md
      shows (each builds its own client); ``shared`` gives both one ``redis.asyncio.Redis`` on a
      ``BlockingConnectionPool`` of 100 connections.

    ``prepare()`` runs at start-up (the tables created once, workers serialized by the lock)."""
    quiet()
    sessions_url = os.environ.get("BENCH_SESSIONS", "memory")
    locks_url = os.environ.get("BENCH_LOCKS", "memory")
    streams_url = os.environ.get("BENCH_STREAMS", "none")
    options: dict[str, Any] = {}
    closing: list[Any] = []
    if sessions_url != "memory":
        from google.adk.sessions.database_session_service import DatabaseSessionService

        options["session_service"] = DatabaseSessionService(db_url=sessions_url)
        closing.append(options["session_service"].close)
    clients: dict[str, Any] = {}

    def redis(url: str) -> Any:
        """The URL itself, or the one shared client on a blocking pool for it."""
        if os.environ.get("BENCH_REDIS_POOL", "url") == "url":
            return url
        if url not in clients:
            import redis.asyncio as aioredis

            pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=100, timeout=None)
            clients[url] = aioredis.Redis(connection_pool=pool)
            closing.append(clients[url].aclose)
        return clients[url]

    locks: ChatLocks | None = None
    streams: StreamStore | None = None
    if locks_url == "memory":
        locks = InMemoryChatLocks()
    elif locks_url != "default":
        from adk_asgi.stores.locks_redis import RedisChatLocks

        locks = RedisChatLocks(redis(locks_url))
    if streams_url == "memory":
        streams = InMemoryStreamStore()
    elif streams_url != "none":
        from adk_asgi.stores.resumable_redis import RedisStreamStore

        streams = RedisStreamStore(redis(streams_url))
    options["stores"] = Stores(locks=locks, streams=streams)
    if os.environ.get("BENCH_USER_HEADER") == "1":
        options["identify"] = lambda conn: conn.headers.get("x-user", USER_ID)
    else:
        options["identify"] = lambda conn: USER_ID
        options["user_bounds"] = ONE_USER_FOR_MANY
    if requests := os.environ.get("BENCH_USER_REQUESTS"):
        options["user_bounds"] = UserBounds(requests=int(requests))
    chat = AdkApp(make_agent(float(os.environ.get("BENCH_DELTA_DELAY", "0"))), **options)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await chat.prepare()
        yield
        await chat.aclose()
        for close in closing:
            await close()

    return with_cpu_probe(Starlette(routes=[Mount("/agent", app=chat)], lifespan=lifespan))


class _Supervisor(Multiprocess):
    """uvicorn's supervisor for ``workers=``, telling the parent on stdout once every worker
    has started (lifespan included), with their pids."""

    def init_processes(self) -> None:
        super().init_processes()
        for process in self.processes:
            if not process.wait_until_ready(self.config.timeout_worker_healthcheck * 6):
                self.should_exit.set()
                return
        ready = {
            "supervisor": os.getpid(),
            "workers": [process.pid for process in self.processes],
        }
        print(json.dumps(ready), flush=True)


def serve_shared(fd: int) -> None:
    workers = int(os.environ.get("BENCH_WORKERS", "1"))
    config = uvicorn.Config(
        "bench.harness.serve:shared_app",
        factory=True,
        workers=workers,
        log_level="warning",
        access_log=False,
    )
    _Supervisor(config, sockets=[socket.socket(fileno=fd)]).run()


class _Server(uvicorn.Server):
    """uvicorn's server, telling the parent on stdout once it listens and what it picked."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        ready = {
            "loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
            "http": self.config.http_protocol_class.__name__,
            "ws": getattr(self.config.ws_protocol_class, "__name__", "none"),
        }
        print(json.dumps(ready), flush=True)


def main(argv: list[str]) -> None:
    kind, fd = argv
    if kind not in KINDS:
        raise SystemExit(f"usage: python -m bench.harness.serve {{{'|'.join(KINDS)}}} FD")
    quiet()
    raise_fd_limit()
    if kind == "adk_asgi_shared":
        serve_shared(int(fd))
        return
    if kind == "ag_ui_adk":
        from bench.harness.peers import agui_app

        app = agui_app()
    elif kind == "adk_bare":
        if os.environ.get("BENCH_SKIP_A2A") == "1":  # as AdkApp does (serving/a2a_import.py)
            skip_failed_a2a_import()
        app = bare_app()
    else:
        app = adk_asgi_app() if kind == "adk_asgi" else adk_run_sse_app()
    if os.environ.get("BENCH_GC_FREEZE") == "1":  # docs/deployment.md, "The garbage collector"
        gc.collect()
        gc.freeze()
    config = uvicorn.Config(with_cpu_probe(app), log_level="warning", access_log=False)
    _Server(config).run(sockets=[socket.socket(fileno=int(fd))])


if __name__ == "__main__":
    main(sys.argv[1:])
