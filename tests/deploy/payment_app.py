"""The payment agent of tests/asgi/test_hitl.py's ``Demo`` as a real server process, for
``uvicorn tests.deploy.payment_app:app`` (tests/deploy/test_double_approval.py runs two).

Configured by the environment, read when the module is imported:

- ``PAYMENT_DB_URL``: the SQLAlchemy URL of ADK's ``DatabaseSessionService``
  (``sqlite+aiosqlite:///…``, ``postgresql+asyncpg://…``), or ``sqlite-native:<path>`` for
  ADK's ``SqliteSessionService`` on that file.
- ``PAYMENT_LOCKS``: ``process`` (in-process locks), ``redis:<url>`` (``RedisChatLocks``),
  ``postgres:<dsn>`` (``PostgresChatLocks``) or ``default`` (no ``Stores(locks=)``: the app's own
  choice, the session database).
- ``PAYMENT_STREAMS``: empty (the default: not resumable) or ``redis:<url>``
  (``RedisStreamStore``); ``PAYMENT_SLOW=1``: the model streams its text slowly (4 characters
  every 20 ms), so that a reader can leave mid-answer.
- ``PAYMENT_LEDGER``: a file that gets one line ``"<session id> <function call id>"`` per run of
  ``process_payment``, appended with ``O_APPEND`` so that every process's runs are counted.
- ``PAYMENT_STALL=1``: ``process_payment`` never returns once its ledger line is written (the
  bank never answers), so that a test can kill the worker in the middle of a payment.
- ``PAYMENT_MODEL=gemini``: the agent runs on ADK's own ``Gemini`` class
  (``"gemini-2.5-flash"``), whose google-genai clients reach the Gemini stand-in the
  environment names (``GeminiStandIn.environ``; the test runs it, answering the demo grammar);
  else on the scripted demo model.

Routes: the ``AdkApp`` under ``/agent`` (user ``x-user``, ``alice`` by default), ``GET /ready``
and ``GET /pid``. The scripted model's call ids are uuids, unique across processes, so a
ledger line names one call.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from adk_asgi import AdkApp, Stores
from adk_asgi.stores.locks import ChatLocks, InMemoryChatLocks
from adk_asgi.stores.resumable import StreamStore
from adk_asgi.testing import demo_model
from tests.support import SqliteSessionService

GEMINI = "gemini-2.5-flash"


def locks_from(spec: str) -> ChatLocks | None:
    """``PAYMENT_LOCKS``: ``process``, ``redis:<url>``, ``postgres:<dsn>`` or ``default``."""
    if spec == "default":
        return None
    kind, _, target = spec.partition(":")
    if kind == "process" and not target:
        return InMemoryChatLocks()
    if kind == "redis" and target:
        from adk_asgi.stores.locks_redis import RedisChatLocks

        return RedisChatLocks(target)
    if kind == "postgres" and target:
        from adk_asgi.stores.locks_postgres import PostgresChatLocks

        return PostgresChatLocks(target)
    raise ValueError(
        f"PAYMENT_LOCKS must be process, redis:<url>, postgres:<dsn> or default: {spec!r}"
    )


def payment_agent(
    ledger: str, *, slow: bool = False, stall: bool = False, gemini: bool = False
) -> LlmAgent:
    async def process_payment(
        amount: float, recipient: str, tool_context: ToolContext, currency: str = "USD"
    ) -> dict[str, Any]:
        """Send money."""
        line = f"{tool_context.session.id} {tool_context.function_call_id}\n"
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())  # one write of a short line: atomic under O_APPEND
        finally:
            os.close(fd)
        if stall:
            await asyncio.Event().wait()
        return {"status": "sent", "amount": amount, "recipient": recipient}

    model: BaseLlm | str = GEMINI
    if not gemini:
        model = demo_model(
            id_factory=lambda: f"call_{uuid.uuid4().hex}",
            chunk_size=4 if slow else 200,
            delay=0.02 if slow else 0.0,
        )
    return LlmAgent(
        name="demo_agent",
        model=model,
        tools=[FunctionTool(process_payment, require_confirmation=True)],
    )


async def ready(_: Request) -> PlainTextResponse:
    return PlainTextResponse("ready")


async def pid(_: Request) -> PlainTextResponse:
    """The worker's process id, for the tests that kill it."""
    return PlainTextResponse(str(os.getpid()))


def streams_from(spec: str) -> StreamStore | None:
    """``PAYMENT_STREAMS``: empty (not resumable) or ``redis:<url>``."""
    if not spec:
        return None
    kind, _, target = spec.partition(":")
    if kind == "redis" and target:
        from adk_asgi.stores.resumable_redis import RedisStreamStore

        return RedisStreamStore(target)
    raise ValueError(f"PAYMENT_STREAMS must be empty or redis:<url>: {spec!r}")


def create_app(
    db_url: str,
    locks: str,
    ledger: str,
    streams: str = "",
    slow: bool = False,
    stall: bool = False,
    gemini: bool = False,
) -> Starlette:
    sessions: DatabaseSessionService | SqliteSessionService
    if db_url.startswith("sqlite-native:"):
        sessions = SqliteSessionService(db_url.removeprefix("sqlite-native:"))
    else:
        sessions = DatabaseSessionService(db_url=db_url)
    chat = AdkApp(
        payment_agent(ledger, slow=slow, stall=stall, gemini=gemini),
        session_service=sessions,
        stores=Stores(locks=locks_from(locks), streams=streams_from(streams)),
        identify=lambda conn: conn.headers.get("x-user", "alice"),
    )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await chat.prepare()
        try:
            yield
        finally:
            await chat.aclose()
            await sessions.close()

    return Starlette(
        routes=[
            Route("/ready", ready, methods=["GET"]),
            Route("/pid", pid, methods=["GET"]),
            Mount("/agent", app=chat),
        ],
        lifespan=lifespan,
    )


app = create_app(
    os.environ["PAYMENT_DB_URL"],
    os.environ.get("PAYMENT_LOCKS", "process"),
    os.environ["PAYMENT_LEDGER"],
    os.environ.get("PAYMENT_STREAMS", ""),
    slow=os.environ.get("PAYMENT_SLOW") == "1",
    stall=os.environ.get("PAYMENT_STALL") == "1",
    gemini=os.environ.get("PAYMENT_MODEL") == "gemini",
)
