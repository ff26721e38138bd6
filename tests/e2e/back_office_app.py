"""An app whose model calls, in one step, a browser tool and a tool the back office answers
from the server (``AdkApp.answer_call``), for the real AI SDK clients
(tests/e2e/test_back_office_clients.py). Run with ``uvicorn tests.e2e.back_office_app:app``.

The user is the ``user`` cookie. ``POST /office`` (``{"user", "chat", "call", "result"}``) is the
back office's webhook: it answers the call, as docs/hitl.md's example does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from google.adk.agents import LlmAgent
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from adk_asgi import AdkApp
from adk_asgi.testing import Call, Text
from demo_app import change_bgm
from tests.asgi.test_server_answers import REFUND, request_refund
from tests.support import scripted_agent

PLAYING = "Playing track 3; the back office will answer about the refund."


def respond(contents: list[types.Content]) -> list[Call | Text]:
    """Both tools in one step. Over SSE the model reads both results at once; Gemini Live
    gets the browser's as it comes, and says so while the back office decides."""
    answered = {
        p.function_response.name
        for content in contents
        for p in content.parts or []
        if p.function_response is not None
    }
    if "request_refund" in answered:
        return [Text("Both done.")]
    if "change_bgm" in answered:
        return [Text(PLAYING)]
    return [Call("change_bgm", {"track": 3}), Call("request_refund", REFUND)]


def agent() -> LlmAgent:
    return scripted_agent(
        responder=respond, tools=[change_bgm, LongRunningFunctionTool(request_refund)]
    )


chat = AdkApp(agent(), live_agent=agent(), identify=lambda conn: conn.cookies.get("user", "nobody"))


async def office(request: Request) -> JSONResponse:
    answer = await request.json()
    message_id = await chat.answer_call(
        answer["user"], answer["chat"], answer["call"], answer["result"]
    )
    return JSONResponse({"messageId": message_id})


@asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    yield
    await chat.aclose()


app = Starlette(
    routes=[Route("/office", office, methods=["POST"]), Mount("/agent", app=chat)],
    lifespan=lifespan,
)
