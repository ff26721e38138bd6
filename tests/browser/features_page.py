"""The demo page in front of an agent that uses the AI SDK features apps build on
(docs/data-parts.md, docs/tools.md, docs/metadata.md), for the page's ``features`` scenario
(tests/browser/test_demo_page.py): a tool that sends a ``data-weather`` card and updates it by
id, a toolset's tool (a dynamic tool, as an MCP server's) that asks for approval, and each
answer's metadata. Run with ``uvicorn tests.browser.features_page:app``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.events.event import Event
from google.genai import types
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adk_asgi import Messages
from adk_asgi.testing import Call, Text
from demo_app import create_app
from tests.asgi.test_data_parts import get_weather
from tests.e2e.metadata_app import message_metadata
from tests.e2e.shapes_app import SHOP_ORDER, Catalog
from tests.support import scripted_agent

RELEASED = asyncio.Event()
"""Set by ``POST /test/release``: the forecast goes on once the page has shown its progress."""


async def get_forecast(city: str) -> AsyncGenerator[Event | dict[str, Any], None]:
    """The weather in a city, reporting progress while it is fetched (docs/hitl.md)."""
    yield Event(message=f"Fetching the weather in {city}…")
    await RELEASED.wait()
    RELEASED.clear()
    yield {"city": city, "temperature": 20}


async def release(_: Request) -> Response:
    RELEASED.set()
    return Response(status_code=204)


def respond(contents: list[types.Content]) -> list[Call | Text]:
    """ "forecast": the forecast, with its progress, then the answer. Anything else: the
    weather (its card), then an order the user approves, then the answer."""
    said = [p.text for c in contents if c.role == "user" for p in c.parts or [] if p.text]
    if said and said[-1] == "forecast":
        if any(p.function_response for p in contents[-1].parts or []):
            return [Text("Forecast done.")]
        return [Call("get_forecast", {"city": "Paris"})]
    answered = {
        p.function_response.name for c in contents for p in c.parts or [] if p.function_response
    }
    if "get_weather" not in answered:
        return [Call("get_weather", {"city": "Paris"})]
    if "order_item" not in answered:
        return [Call("order_item", SHOP_ORDER)]
    return [Text("All set.")]


agent = scripted_agent(
    responder=respond, tools=[get_weather, get_forecast, Catalog()], name="demo_agent"
)
app = create_app(agent, messages=Messages(message_metadata=message_metadata))
app.router.routes.insert(0, Route("/test/release", release, methods=["POST"]))
