"""Recipe: an ``AdkApp`` mounted in a FastAPI application (docs/mounting.md).

Run it from the repository root::

    uvicorn examples.fastapi_app:app

``POST /agent/chat`` streams the chat (point the AI SDK's ``DefaultChatTransport`` at it),
``WS /agent/live`` is the live route, and ``GET /`` is the host's own endpoint.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from adk_asgi import AdkApp
from demo_app import build_agent

# The demo agent: the offline scripted model, or Gemini when GOOGLE_API_KEY is set (a chat
# model, so live mode then needs AdkApp(..., live_agent=<agent on a live model>):
# docs/mounting.md). Your own:
#   agent = LlmAgent(name="assistant", model="gemini-2.5-flash", instruction="Be brief.")
chat = AdkApp(build_agent())


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    yield
    await chat.aclose()  # close the runner (plugins, toolsets, session service) on shutdown


app = FastAPI(lifespan=lifespan)
# A mounted app is outside FastAPI's routing: no dependencies, no OpenAPI entry, and the SSE
# response is never touched by FastAPI's response handling.
app.mount("/agent", chat)


@app.get("/")
async def home() -> dict[str, str]:
    return {"host": "fastapi", "agent": "/agent/chat"}
