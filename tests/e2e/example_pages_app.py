"""The AI SDK's example pages, served by adk-asgi, for the real ai@6 and ai@7 clients
(tests/e2e/test_example_page_clients.py). Run with ``uvicorn tests.e2e.example_pages_app:app``.

The same agent is mounted twice: ``/v6`` (``AdkApp(ai_sdk_version=6)``) and ``/v7``
(``ai_sdk_version=7``), so each client talks to the app configured for it.

* "weather": ``get_forecast`` yields objects as its preliminary outputs (``preliminary``),
  then its result, as the AI SDK's example tool does; the model answers :data:`FORECAST_SAID`.
* "pay 500": ``pay_remote``, a dynamic tool (``dynamic_tools``) that asks for approval
  (``require_confirmation``) and, approved, yields a preliminary output before its result.
* "delete notes.txt": ``delete_file`` is denied by the server's policy without asking
  (``deny`` from a ``before_tool_callback``); the model answers :data:`NOT_DELETED`.
* Every message's metadata: the model at ``start``, each step's finish reason and tokens, the
  message's tokens at ``finish`` (:func:`message_metadata`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp, MessageMoment, Messages, deny, preliminary
from adk_asgi.testing import Call, ScriptedLlm, Text

LOADING = {"state": "loading"}
HALF_WAY = {"state": "loading", "progress": 0.5}
FORECAST = {"state": "ready", "city": "Paris", "temperature": 20}
FORECAST_SAID = "It is 20 degrees."
PAYING = {"state": "paying"}
PAID = "Paid."
DENIED_REASON = "Deleting files is disabled in this workspace"
NOT_DELETED = "I may not delete it."


async def get_forecast(city: str) -> AsyncGenerator[Event | dict[str, Any], None]:
    """The weather in a city."""
    yield preliminary(LOADING)
    yield preliminary(HALF_WAY)
    yield {"state": "ready", "city": city, "temperature": 20}


async def pay_remote(amount: int) -> AsyncGenerator[Event | dict[str, Any], None]:
    """Pay an amount through a remote service."""
    yield preliminary(PAYING)
    yield {"paid": amount}


def delete_file(path: str) -> dict[str, Any]:
    """Delete a file."""
    return {"deleted": path}


def policy(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> Any:
    """The server's policy: deleting files is denied without asking anyone."""
    return deny(DENIED_REASON) if tool.name == "delete_file" else None


def respond(contents: list[types.Content]) -> list[Any]:
    last = contents[-1].parts or []
    answered = {p.function_response.name for p in last if p.function_response}
    if "get_forecast" in answered:
        return [Text(FORECAST_SAID)]
    if "pay_remote" in answered:
        return [Text(PAID)]
    if "delete_file" in answered:
        return [Text(NOT_DELETED)]
    said = next(p.text for c in reversed(contents) for p in c.parts or [] if p.text)
    if "weather" in said:
        return [Call("get_forecast", {"city": "Paris"})]
    if "delete" in said:
        return [Call("delete_file", {"path": said.split()[-1]})]
    return [Call("pay_remote", {"amount": int(w)}) for w in said.split() if w.isdigit()]


def message_metadata(moment: MessageMoment) -> dict[str, Any]:
    if moment.kind == "start":
        return {"model": moment.model}
    if moment.kind == "finish-step":
        return {"steps": {moment.finish_reason or "": moment.usage.get("totalTokens", 0)}}
    return {"totalTokens": moment.usage.get("totalTokens"), "finishReason": moment.finish_reason}


def agent() -> LlmAgent:
    return LlmAgent(
        name="helper",
        model=ScriptedLlm(responder=respond, chunk_size=4),
        tools=[get_forecast, FunctionTool(pay_remote, require_confirmation=True), delete_file],
        before_tool_callback=policy,
    )


def create_app() -> Starlette:
    options: dict[str, Any] = {
        "messages": Messages(dynamic_tools={"pay_remote"}, message_metadata=message_metadata),
    }
    apps = {
        "/v6": AdkApp(agent(), ai_sdk_version=6, **options),
        "/v7": AdkApp(agent(), ai_sdk_version=7, **options),
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
