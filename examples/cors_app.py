"""Recipe: the agent for a frontend on another origin, e.g. Next.js on :3000 (docs/mounting.md).

Run it from this directory, with ``pip install adk-asgi``::

    uvicorn cors_app:app --port 8000

and point the page on http://localhost:3000 at it, with the browser's cookies::

    new DefaultChatTransport({ api: "http://localhost:8000/agent/chat", credentials: "include" })

``CORSMiddleware`` wraps the host: it answers the browser's preflight (``OPTIONS``) and lets the
listed origins read the answers, cookies included (``allow_credentials``). It never refuses a
request itself: CORS only decides what a page may *read*.

``Security(allowed_origins=...)`` refuses what CORS cannot stop: a WebSocket handshake (browsers
do not apply CORS to WebSockets) or a ``POST``/``DELETE`` sent without a preflight, from a page
on an origin that is neither the server's own nor listed (``403`` with a JSON reason). Such a
request would otherwise carry the browser's cookies (the identity cookie is ``SameSite=Lax``,
so it goes along from any page of the same *site*, another port of the same host included) and
run the chat.

The agent is Gemini with one tool, ``get_weather``. Without ``GOOGLE_API_KEY`` a local stand-in
answers in Gemini's place: it echoes what you say, and ``call get_weather {"city": "Paris"}``
runs the tool.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from google.adk.agents import LlmAgent
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Mount

from adk_asgi import AdkApp, Security

FRONTEND_ORIGINS = ["http://localhost:3000"]
"""The origins (scheme://host[:port], no path) whose pages use the agent, besides this server's
own (always allowed). Never "*" with cookies."""

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
chat = AdkApp(agent, security=Security(allowed_origins=FRONTEND_ORIGINS))


@asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    yield
    await chat.aclose()


app = Starlette(
    routes=[Mount("/agent", app=chat)],
    # The first middleware is the outermost: CORS answers preflights before anything else.
    middleware=[
        Middleware(
            CORSMiddleware,
            allow_origins=FRONTEND_ORIGINS,
            allow_credentials=True,  # cookies: the page's fetch has credentials: "include"
            # The methods of the agent's routes (the preflight asks for one at a time; OPTIONS
            # itself is answered here and needs no listing). The AI SDK's transports send one
            # header of their own, Content-Type; add those you pass in `headers:`.
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Content-Type"],
        ),
    ],
    lifespan=lifespan,
)
