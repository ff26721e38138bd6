"""An app whose tool sends data parts, as docs/data-parts.md shows it: a ``data-weather`` card
(loading, then done: one id) and a transient ``data-notice``.

Mounted at ``/agent`` for ai@6 and ai@7 clients and at ``/v5`` (``ai_sdk_version=5``) for
ai@5's. Run with ``uvicorn tests.e2e.data_parts_app:app`` (tests/e2e/test_data_part_clients.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

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


apps = {
    "/agent": AdkApp(agent(), live_agent=agent()),
    "/v5": AdkApp(agent(), live_agent=agent(), ai_sdk_version=5),
}


@asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    async with AsyncExitStack() as stack:
        for chat in apps.values():
            stack.push_async_callback(chat.aclose)
        yield


app = Starlette(
    routes=[Mount(prefix, app=chat) for prefix, chat in apps.items()], lifespan=lifespan
)
