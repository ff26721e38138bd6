"""Recipe: an ``AdkApp`` mounted in a Starlette application (docs/mounting.md).

Run it from the repository root::

    uvicorn examples.starlette_app:app

``POST /agent/chat`` streams the chat (point the AI SDK's ``DefaultChatTransport`` at it),
``WS /agent/live`` is the live route, and ``GET /`` is the host's own page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from adk_asgi import AdkApp
from demo_app import build_agent

# The demo agent: the offline scripted model, or Gemini when GOOGLE_API_KEY is set (a chat
# model, so live mode then needs AdkApp(..., live_agent=<agent on a live model>):
# docs/mounting.md). Your own:
#   agent = LlmAgent(name="assistant", model="gemini-2.5-flash", instruction="Be brief.")
chat = AdkApp(build_agent())


@asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    yield
    await chat.aclose()  # close the runner (plugins, toolsets, session service) on shutdown


async def home(_: Request) -> Response:
    return PlainTextResponse("Hello from Starlette. The agent is at /agent/chat.")


async def not_found(_: Request, exc: Exception) -> Response:
    # The host's own 404 page. A mounted Starlette app raises its 404s to the host, so this
    # page also answers unknown paths under /agent.
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    return JSONResponse({"host": "starlette", "error": "no such page"}, status_code=status)


app = Starlette(
    routes=[Route("/", home), Mount("/agent", app=chat)],
    lifespan=lifespan,
    exception_handlers={404: not_found},
)
