"""Recipe: the agent for a frontend on another origin, e.g. Next.js on :3000 (docs/mounting.md).

Run it from the repository root::

    uvicorn examples.cors_app:app --port 8000

and point the page on http://localhost:3000 at it, with the browser's cookies::

    new DefaultChatTransport({ api: "http://localhost:8000/agent/chat", credentials: "include" })

Two middlewares wrap the host:

- ``CORSMiddleware`` answers the browser's preflight (``OPTIONS``) and lets the listed origins
  read the answers, cookies included (``allow_credentials``). It never refuses a request itself:
  CORS only decides what a page may *read*.
- ``CheckOrigin`` refuses what CORS cannot stop: a WebSocket handshake (browsers do not apply
  CORS to WebSockets) or a ``POST``/``DELETE`` sent without a preflight, from a page on an
  origin that is not listed. Such a request would otherwise carry the browser's cookies (the
  identity cookie is ``SameSite=Lax``, so it goes along from any page of the same *site*, another
  port of the same host included) and run the chat.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from adk_asgi import AdkApp
from demo_app import build_agent

FRONTEND_ORIGINS = ["http://localhost:3000"]
"""The origins (scheme://host[:port], no path) whose pages use the agent. Add this server's own
origin if it serves a page that talks to the agent too. Never "*" with cookies."""

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class CheckOrigin:
    """Refuse WebSocket handshakes and state-changing requests from a page on a foreign origin.

    A browser names the page's origin in the ``Origin`` header of every WebSocket handshake and
    of every cross-origin request (and of a same-origin ``POST``). A request without one does
    not come from a page (curl, a server, a test) and passes, as do reads (``GET``, whose
    answers CORS keeps from foreign pages). A refused handshake is answered ``403`` by the
    server; a refused request gets ``403 origin not allowed``.
    """

    def __init__(self, app: ASGIApp, allow_origins: Collection[str]) -> None:
        self.app = app
        self.allow_origins = frozenset(allow_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" or (
            scope["type"] == "http" and scope["method"] not in SAFE_METHODS
        ):
            origin = Headers(scope=scope).get("origin")
            if origin is not None and origin not in self.allow_origins:
                if scope["type"] == "websocket":
                    await WebSocketClose(code=1008)(scope, receive, send)
                else:
                    await PlainTextResponse("origin not allowed", 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


# The demo agent (the offline scripted model, or Gemini when GOOGLE_API_KEY is set). Your own:
#   agent = LlmAgent(name="assistant", model="gemini-2.5-flash", instruction="Be brief.")
chat = AdkApp(build_agent())


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
        Middleware(CheckOrigin, allow_origins=FRONTEND_ORIGINS),
    ],
    lifespan=lifespan,
)
