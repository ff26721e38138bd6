"""A tool that reports progress and a payment tool whose approval is a policy, for the real AI
SDK clients (tests/e2e/test_progress_clients.py). Run with ``uvicorn tests.e2e.progress_app:app``.

The same agent is mounted twice: ``/v6`` (``AdkApp(ai_sdk_version=6)``) and ``/v7``
(``ai_sdk_version=7``), so each client talks to the app configured for it.

* "weather": ``get_forecast`` yields two progress messages (``Event(message=...)``), then its
  result; the model answers :data:`FORECAST_SAID`.
* "pay 5", "pay 5 and 500": one ``pay`` call per amount, in one step; ``pay``'s
  ``require_confirmation`` asks the user above 100 only; the model answers :data:`PAID`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.tools.function_tool import FunctionTool
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp
from adk_asgi.testing import Call, ScriptedLlm, Text

FETCHING = "Fetching the weather in Paris…"
ALMOST = "Almost there…"
FORECAST = {"city": "Paris", "temperature": 20}
FORECAST_SAID = "It is 20 degrees."
PAID = "Done."


async def get_forecast(city: str) -> AsyncGenerator[Event | dict[str, Any], None]:
    """The weather in a city, reporting progress while it is fetched."""
    yield Event(message=f"Fetching the weather in {city}…")
    yield Event(message=ALMOST)
    yield {"city": city, "temperature": 20}


def pay(amount: int) -> dict[str, Any]:
    """Pay an amount; above 100 the user approves it first."""
    return {"paid": amount}


def over_100(amount: int) -> bool:
    return amount > 100


def respond(contents: list[types.Content]) -> list[Any]:
    last = contents[-1].parts or []
    if any(p.function_response and p.function_response.name == "get_forecast" for p in last):
        return [Text(FORECAST_SAID)]
    if any(p.function_response for p in last):
        return [Text(PAID)]
    said = next(p.text for c in reversed(contents) for p in c.parts or [] if p.text)
    if "weather" in said:
        return [Call("get_forecast", {"city": "Paris"})]
    return [Call("pay", {"amount": int(w)}) for w in said.split() if w.isdigit()]


def agent() -> LlmAgent:
    return LlmAgent(
        name="helper",
        model=ScriptedLlm(responder=respond, chunk_size=4),
        tools=[get_forecast, FunctionTool(pay, require_confirmation=over_100)],
    )


def create_app() -> Starlette:
    apps = {
        "/v6": AdkApp(agent(), ai_sdk_version=6),
        "/v7": AdkApp(agent(), ai_sdk_version=7),
    }

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for chat in apps.values():
                stack.push_async_callback(chat.aclose)
            yield

    return Starlette(
        routes=[Mount(prefix, app=chat) for prefix, chat in apps.items()], lifespan=lifespan
    )


app = create_app()
