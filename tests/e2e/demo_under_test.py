"""The demo app as the end-to-end tests serve it: demo_app's agent, page and tools, plus two
test-only instruments (demo_app.py itself stays untouched).

* The server tools (``get_weather``, ``process_payment``) are demo_app's own functions behind
  wrappers that count every real run per chat (the ADK session id is the chat id);
  ``GET /test/tool-runs/{chat_id}`` returns the counts as ``{tool name: runs}`` (tools that never
  ran are absent), so a test can assert how many times a tool actually ran on the server.
* The scripted demo model answers a user text containing ``slowly`` at one response every
  50 ms (a long answer a client can stop mid-stream, a continuation a duplicate can overlap);
  every other text is answered at full speed, exactly as demo_app's model does.

Run with ``uvicorn tests.e2e.demo_under_test:app`` (the session's ``demo_server`` fixture), or
``…:gemini_app`` for the same demo on ADK's own ``Gemini`` class (``"gemini-2.5-flash"``), whose
google-genai clients reach the Gemini stand-in the environment names (``GeminiStandIn.environ``;
the ``gemini_demo_server`` fixture runs the stand-in with :func:`demo_pace`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

import demo_app
from adk_asgi import AdkApp, Stores
from adk_asgi.stores.resumable import InMemoryStreamStore
from adk_asgi.testing import ScriptedLlm, demo_responder
from adk_asgi.testing.live import ScriptedLiveConnection

SLOW_WORD = "slowly"
SLOW_PACE = 0.05
"""Seconds before each model response of a turn whose user text contains ``SLOW_WORD``."""


def _last_user_text(request: LlmRequest) -> str:
    return last_user_text(request.contents)


def last_user_text(contents: Sequence[types.Content]) -> str:
    for content in reversed(contents):
        if content.role == "user" and any(p.text for p in content.parts or ()):
            return "".join(p.text or "" for p in content.parts or ())
    return ""


def demo_pace(contents: Sequence[types.Content]) -> float:
    """The stand-in's delay: ``SLOW_PACE`` for a user text that says ``slowly``, else none."""
    return SLOW_PACE if SLOW_WORD in last_user_text(contents).lower() else 0.0


class _PacedView:
    """What a live connection reads of its model, with the pace of its last user text."""

    def __init__(self, llm: ScriptedLlm, connection: ScriptedLiveConnection) -> None:
        self._llm = llm
        self._connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    @property
    def delay(self) -> float:
        for content in reversed(self._connection.conversation):
            if content.role == "user" and any(p.text for p in content.parts or ()):
                text = "".join(p.text or "" for p in content.parts or ())
                return SLOW_PACE if SLOW_WORD in text.lower() else self._llm.delay
        return self._llm.delay


class PacedDemoModel(ScriptedLlm):
    """demo_app's scripted model, slowed down for user texts that say ``slowly`` (SSE and live)."""

    @asynccontextmanager
    async def connect(self, llm_request: LlmRequest) -> AsyncIterator[ScriptedLiveConnection]:
        async with super().connect(llm_request) as connection:
            connection._llm = _PacedView(self, connection)  # type: ignore[assignment]
            yield connection

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        slow = SLOW_WORD in _last_user_text(llm_request).lower()
        async for response in super().generate_content_async(llm_request, stream):
            if slow:
                await asyncio.sleep(SLOW_PACE)
            yield response


class ToolRuns:
    """How many times each server tool really ran, per chat."""

    def __init__(self) -> None:
        self.by_chat: dict[str, Counter[str]] = {}

    def count(self, tool_context: ToolContext, tool: str) -> None:
        self.by_chat.setdefault(tool_context.session.id, Counter())[tool] += 1

    async def route(self, request: Request) -> JSONResponse:
        return JSONResponse(dict(self.by_chat.get(request.path_params["chat_id"], {})))


def build_agent(runs: ToolRuns, model: BaseLlm | str | None = None) -> LlmAgent:
    def get_weather(city: str, tool_context: ToolContext) -> dict[str, object]:
        runs.count(tool_context, "get_weather")
        return demo_app.get_weather(city)

    def process_payment(
        amount: float, recipient: str, tool_context: ToolContext, currency: str = "USD"
    ) -> dict[str, object]:
        runs.count(tool_context, "process_payment")
        return demo_app.process_payment(amount, recipient, currency)

    get_weather.__doc__ = demo_app.get_weather.__doc__
    process_payment.__doc__ = demo_app.process_payment.__doc__
    return LlmAgent(
        name="demo_agent",
        model=model or PacedDemoModel(responder=demo_responder),
        instruction=demo_app.INSTRUCTION,
        tools=[
            get_weather,
            FunctionTool(process_payment, require_confirmation=True),
            demo_app.change_bgm,
            demo_app.get_location,
        ],
    )


def create_app(model: BaseLlm | str | None = None) -> Starlette:
    runs = ToolRuns()
    chat = AdkApp(
        build_agent(runs, model), stores=Stores(streams=InMemoryStreamStore())
    )  # as demo_app does

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await chat.aclose()

    return Starlette(
        routes=[
            Mount("/agent", app=chat),
            Route("/test/tool-runs/{chat_id}", runs.route, methods=["GET"]),
            *demo_app.page_routes(),  # the page's catch-all mount last
        ],
        lifespan=lifespan,
    )


app = create_app()
gemini_app = create_app("gemini-2.5-flash")
