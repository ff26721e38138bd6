"""The app of tests/e2e/test_tool_input.py: an ``AdkApp`` whose scripted model streams a
call's arguments ("weather"), or calls a tool that does not exist and a tool without its
mandatory argument ("clumsy"), then answers; mounted at ``/v6`` for ai@6 clients, at ``/v7``
(``ai_sdk_version=7``) for ai@7's and at ``/v5`` for ai@5's, since their reducers build
different parts from a ``tool-input-error`` and history shows what the configured client built.
Run with ``uvicorn tests.e2e.tool_input_app:app``.

The model answers from the conversation (``responder=``), so every chat gets the same answers
over SSE and over the live connection (where the scripted model, as Gemini Live, gives calls
whole: ADK's live flow runs every call it gets, so no live model streams arguments)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from google.adk.agents import LlmAgent
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp
from adk_asgi.testing import Call, ScriptedLlm, Segment, Text


def get_forecast(city: str, days: int) -> dict[str, Any]:
    """The forecast for a city, for a number of days."""
    return {"city": city, "forecast": ["sunny"] * days}


def respond(contents: list[types.Content]) -> list[Segment]:
    said = [p.text for c in contents if c.role == "user" for p in c.parts or [] if p.text]
    if any(p.function_response for c in contents for p in c.parts or []):
        return [Text("Done.")]
    if said and said[-1] == "clumsy":
        return [Call("get_forcast", {"city": "Paris"}), Call("get_forecast", {"city": "Paris"})]
    args = {"city": "Paris", "days": 2}
    return [Text("Let me see."), Call("get_forecast", args, stream_args=True)]


def forecaster() -> LlmAgent:
    model = ScriptedLlm(responder=respond, chunk_size=4)
    return LlmAgent(name="forecaster", model=model, tools=[get_forecast])


apps = {f"/v{v}": AdkApp(forecaster(), ai_sdk_version=v) for v in (5, 6, 7)}


@asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    async with AsyncExitStack() as stack:
        for chat in apps.values():
            stack.push_async_callback(chat.aclose)
        yield


app = Starlette(
    routes=[Mount(prefix, app=chat) for prefix, chat in apps.items()], lifespan=lifespan
)
