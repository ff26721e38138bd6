"""An app whose tool sends data parts, as docs/data-parts.md shows it: a ``data-weather`` card
(loading, then done: one id) and a transient ``data-notice``.

Run with ``uvicorn tests.e2e.data_parts_app:app`` (tests/e2e/test_data_part_clients.py).
"""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp
from adk_asgi.testing import Call, Text
from tests.asgi.test_data_parts import get_weather
from tests.support import scripted_agent


def respond(contents: list[types.Content]) -> list[Call | Text]:
    """Each chat: the tool, then the answer to its result."""
    if any(p.function_response for p in contents[-1].parts or []):
        return [Text("Sunny.")]
    return [Call("get_weather", {"city": "Paris"})]


def agent() -> LlmAgent:
    return scripted_agent(responder=respond, tools=[get_weather])


app = Starlette(
    routes=[Mount("/agent", app=AdkApp(agent(), live_agent=agent()))],
)
