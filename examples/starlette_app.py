"""Recipe: an ``AdkApp`` mounted in a Starlette application (docs/mounting.md).

Run it from this directory, with ``pip install adk-asgi``::

    uvicorn starlette_app:app

``POST /agent/chat`` streams the chat (point the AI SDK's ``DefaultChatTransport`` at it),
``WS /agent/live`` is the live route, and ``GET /`` is the host's own page.

The agent is Gemini with one tool, ``get_weather``. Without ``GOOGLE_API_KEY`` a local stand-in
answers in Gemini's place: it echoes what you say, and ``call get_weather {"city": "Paris"}``
runs the tool. With a key, the live route needs an agent on a live model
(``AdkApp(agent, live_agent=...)``, docs/mounting.md): ``gemini-2.5-flash`` is a chat model.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from google.adk.agents import LlmAgent
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from adk_asgi import AdkApp

if not os.environ.get("GOOGLE_API_KEY"):  # no key: a local stand-in answers as Gemini would
    from adk_asgi.testing import offline_gemini  # (it echoes; never in a deployment)

    offline_gemini()


def get_weather(city: str) -> dict[str, str | int]:
    """The weather in a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    return {"city": city, "forecast": "sunny", "temperature_c": 21}


agent = LlmAgent(
    name="assistant",
    model="gemini-2.5-flash",
    instruction="Be brief. Ask get_weather for the weather.",
    tools=[get_weather],
)
chat = AdkApp(agent)


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
