"""The adk-asgi demo: an ADK agent with four tools, served to AI SDK clients.

Run it with ``make demo`` (or ``python demo_app.py``, or ``uvicorn demo_app:app``): the chat
endpoint is ``POST /agent/chat`` and the live one ``WS /agent/live`` on http://127.0.0.1:8000.

Without ``GOOGLE_API_KEY`` (or Vertex AI settings: ``GOOGLE_GENAI_USE_VERTEXAI=1``) one agent
serves both routes, and it answers by the demo grammar (docs/testing.md#the-demo-grammar). Run as
the demo (``make demo``, ``uvicorn demo_app:app``), it runs on ADK's own ``Gemini`` class, whose
google-genai clients reach a Gemini stand-in started in this process (``offline_app``); imported,
``build_agent()`` and ``create_app()`` put it on the package's scripted model instead:
"weather in Paris", "pay 5 to alice", "play track 3", "where am i", clauses joined by "and"
(parallel) or "then" (one after the other), "explode", and "plan a trip to Rome" (handed over to
a second agent, the trip planner: ``build_team``).

With Gemini, a chat model cannot open a Live API session and a live model does not answer
``generate_content``, so each route gets its own agent (same name, tools and instruction):

* ``DEMO_MODEL`` (default ``gemini-2.5-flash``) answers ``POST /agent/chat``;
* ``DEMO_LIVE_MODEL`` (default ``gemini-live-2.5-flash-preview``; on Vertex AI, e.g.
  ``gemini-live-2.5-flash``) answers ``WS /agent/live``.

One ``AdkApp`` serves both (``AdkApp(chat_agent, live_agent=live_agent)``): they share the
sessions, the identity cookie and the per-chat locks, so a chat started over SSE goes on in live
mode and its history shows both.

Importing this module builds no app (the examples and the tests import its agent and tools);
``app`` is built on first access, which is what ``uvicorn demo_app:app`` does.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.tools.function_tool import FunctionTool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from adk_asgi import AdkApp, InMemoryStreamStore, Stores, client_tool
from adk_asgi.testing import (
    PLANNER,
    GeminiStandIn,
    demo_model,
    demo_responder,
    planner_model,
    planner_responder,
)

INSTRUCTION = """You are the adk-asgi demo assistant. Use your tools when they help:
get_weather for weather questions, process_payment to send money (the user approves each
payment), change_bgm to change the background music, get_location to find where the user is.
Hand trip planning over to trip_planner. Answer in one or two short sentences."""

_FORECASTS = ("sunny", "cloudy", "rainy", "windy", "snowy")


def get_weather(city: str) -> dict[str, object]:
    """Get the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    # Deterministic, so tests and the offline demo can quote the result.
    index = sum(map(ord, city.lower())) % len(_FORECASTS)
    return {"city": city, "forecast": _FORECASTS[index], "temperature_c": 10 + index * 3}


def process_payment(amount: float, recipient: str, currency: str = "USD") -> dict[str, object]:
    """Send money to someone. The user approves every payment before it is made.

    Args:
        amount: How much to send.
        recipient: Who receives the money.
        currency: ISO currency code.
    """
    return {"status": "sent", "amount": amount, "recipient": recipient, "currency": currency}


@client_tool
def change_bgm(track: int) -> None:
    """Change the background music the user hears to another track (runs in the browser).

    Args:
        track: The track number, 1 to 3.
    """


@client_tool(require_approval=True)
def get_location() -> None:
    """Get the user's current location from their browser (the user approves first)."""


def use_gemini() -> bool:
    return bool(os.environ.get("GOOGLE_API_KEY")) or os.environ.get(
        "GOOGLE_GENAI_USE_VERTEXAI", ""
    ).lower() in ("1", "true")


CHAT_MODEL = "gemini-2.5-flash"
LIVE_MODEL = "gemini-live-2.5-flash-preview"


def gemini_models() -> tuple[str, str]:
    """The Gemini models of the SSE and the live route (``DEMO_MODEL``, ``DEMO_LIVE_MODEL``)."""
    return (
        os.environ.get("DEMO_MODEL") or CHAT_MODEL,
        os.environ.get("DEMO_LIVE_MODEL") or LIVE_MODEL,
    )


def build_agent(
    model: BaseLlm | str | None = None, sub_agents: Sequence[BaseAgent] = ()
) -> LlmAgent:
    """The demo agent on ``model``; by default Gemini's chat model, or offline the scripted one."""
    chosen: BaseLlm | str = model or (gemini_models()[0] if use_gemini() else demo_model())
    return LlmAgent(
        name="demo_agent",
        model=chosen,
        instruction=INSTRUCTION,
        sub_agents=list(sub_agents),
        tools=[
            get_weather,
            FunctionTool(process_payment, require_confirmation=True),
            change_bgm,
            get_location,
        ],
    )


PLANNER_INSTRUCTION = """You are the trip planner of the adk-asgi demo: suggest a short plan for
the trip the user asks about, in two or three sentences. For anything else (weather, payments,
music, location), transfer back to demo_agent."""


def build_team(
    model: BaseLlm | str | None = None, planner: BaseLlm | str | None = None
) -> LlmAgent:
    """The demo agent with a sub-agent it hands trips to (``plan a trip to Rome``): a tree of
    agents, so every part names the agent it is from (docs/agents.md)."""
    offline = not use_gemini()
    chosen = planner or (planner_model() if offline else gemini_models()[0])
    trip_planner = LlmAgent(
        name=PLANNER,
        description="Plans trips: where to go, what to see, for how long.",
        model=chosen,
        instruction=PLANNER_INSTRUCTION,
    )
    return build_agent(model, sub_agents=[trip_planner])


WEB_DIST = Path(__file__).resolve().parent / "web" / "dist"
"""The demo page (``web/``), built by ``make demo``; served at ``/`` when it exists."""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>adk-asgi demo</title></head>
<body>
<h1>adk-asgi demo</h1>
<p>The demo page is not built: run <code>make demo</code> (it builds <code>web/</code> with npm,
then starts this app).</p>
<p>The agent is mounted at <code>/agent</code> meanwhile. Point an AI SDK
<code>DefaultChatTransport</code> at <code>/agent/chat</code>.</p>
<p>Try: <q>What's the weather in Paris?</q></p>
</body></html>
"""


PAGE_SETTINGS: dict[str, Any] = {
    "title": "adk-asgi demo",
    "examples": [
        "What's the weather in Paris?",
        "pay 5 to alice",
        "play track 2",
        "where am i",
        "pay 5 to alice then pay 7 to bob",
        "plan a trip to Rome",
        "explode",
    ],
    "intro": "A Google ADK agent served by adk_asgi at /agent, talking to the stock Vercel AI "
    "SDK chat. Offline it runs on a local Gemini stand-in; set GOOGLE_API_KEY for Gemini.",
}
"""What the page says of itself (``GET /page.json``): the demo's title, example prompts and
intro. ``adk-asgi web`` serves the same page with its agent's."""


def page_routes() -> list[BaseRoute]:
    """``/``: the built page and its assets (and its settings), or the fallback page above."""
    if (WEB_DIST / "index.html").is_file():

        async def settings(_: Request) -> JSONResponse:
            return JSONResponse(PAGE_SETTINGS)

        return [
            Route("/page.json", settings, methods=["GET"]),
            Mount("/", app=StaticFiles(directory=WEB_DIST, html=True)),
        ]

    async def index(_: Request) -> HTMLResponse:
        return HTMLResponse(PAGE)

    return [Route("/", index)]


def agent_app(agent: LlmAgent | None = None, **options: Any) -> AdkApp:
    """The demo's ``AdkApp``: ``agent`` (by default the demo agent) behind both routes, or, on
    Gemini without an explicit agent, the chat model behind SSE and a live model behind
    ``/live`` (``live_agent``: one app, so sessions, identity and locks are shared)."""
    if agent is not None or not use_gemini():
        return AdkApp(agent or build_team(), **options)
    chat_model, live_model = gemini_models()
    live_agent = build_team(live_model, planner=live_model)
    return AdkApp(build_team(chat_model), live_agent=live_agent, **options)


def create_app(agent: LlmAgent | None = None, **options: Any) -> Starlette:
    # Answers outlive a reload: the page resumes them (useChat({ resume: true })).
    options.setdefault("stores", Stores(streams=InMemoryStreamStore()))
    chat = agent_app(agent, **options)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await chat.prepare()
        yield
        await chat.aclose()

    return Starlette(
        routes=[Mount("/agent", app=chat), *page_routes()],  # the page's catch-all mount last
        lifespan=lifespan,
    )


OFFLINE_MODEL = "gemini-2.5-flash"
OFFLINE_PLANNER_MODEL = "gemini-2.5-flash-lite"
"""The offline demo's models, both answered by the stand-in: the demo grammar, and the trip
planner's (a model of its own, so the stand-in tells the agents apart)."""


def offline_app() -> Starlette:
    """The demo with no Gemini key: ADK's ``Gemini`` class and google-genai's HTTP and Live
    clients, answered by a local Gemini stand-in (``adk_asgi.testing.gemini_server``) that this
    process starts and keeps until it exits. Its settings go into this process's environment
    (google-genai reads them), so this is for the demo's own process, not for an importer."""
    stand_in = GeminiStandIn(
        responder=demo_responder, by_model={OFFLINE_PLANNER_MODEL: planner_responder}
    )
    stand_in.start()
    os.environ.update(stand_in.environ)
    return create_app(build_team(OFFLINE_MODEL, planner=OFFLINE_PLANNER_MODEL))


def served_app() -> Starlette:
    """The demo as ``make demo`` serves it: on Gemini with a key, else on the stand-in."""
    return create_app() if use_gemini() else offline_app()


def __getattr__(name: str) -> Starlette:
    """``demo_app.app``, built on first access (``uvicorn demo_app:app``), then kept."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    built = globals()["app"] = served_app()
    return built


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(served_app(), host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
