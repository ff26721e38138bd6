"""The agent behind the Next.js example (examples/nextjs/README.md): an ``AdkApp`` mounted at
``/agent`` in Starlette, which the Next.js server's rewrite forwards ``/agent/...`` to.

Run it from this directory::

    uvicorn agent:app --port 8000

Without ``GOOGLE_API_KEY`` a local stand-in answers as Gemini would (it echoes, and calls a tool
when told ``call <tool> {"arg": ...}``); never in a deployment.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from google.adk.agents import LlmAgent
from google.adk.tools.function_tool import FunctionTool
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp, Security

if not os.environ.get("GOOGLE_API_KEY"):
    from adk_asgi.testing import offline_gemini

    offline_gemini()

PAGE_ORIGIN = os.environ.get("PAGE_ORIGIN", "http://localhost:3000")
"""The origin of the Next.js page, as the browser's address bar shows it (scheme://host:port).
The rewrite hands the agent the browser's ``Origin`` with the agent's own address as ``Host``,
so without this the agent refuses the chat's ``POST`` and the live socket (``403``)."""


def get_weather(city: str) -> dict[str, object]:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "forecast": "sunny", "temperature_c": 21}


def process_payment(amount: float, recipient: str) -> dict[str, object]:
    """Send money to someone. The user approves every payment before it is made.

    Args:
        amount: How much to send, in US dollars.
        recipient: Who receives the money.
    """
    return {"status": "sent", "amount": amount, "recipient": recipient}


INSTRUCTION = "Be brief. Use your tools when they help; every payment waits for the user's yes."
TOOLS = [get_weather, FunctionTool(process_payment, require_confirmation=True)]

chat = AdkApp(
    LlmAgent(name="assistant", model="gemini-2.5-flash", instruction=INSTRUCTION, tools=TOOLS),
    # Live mode (WebSocketChatTransport) needs a model that speaks Gemini's Live API.
    live_agent=LlmAgent(
        name="assistant",
        model="gemini-live-2.5-flash-preview",
        instruction=INSTRUCTION,
        tools=TOOLS,
    ),
    security=Security(allowed_origins=[PAGE_ORIGIN]),
)


@asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    yield
    await chat.aclose()  # the runner (plugins, toolsets), locks and stores, at shutdown


app = Starlette(routes=[Mount("/agent", app=chat)], lifespan=lifespan)
