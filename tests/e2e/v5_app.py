"""An agent served to AI SDK 5 clients (``AdkApp(ai_sdk_version=5)``), for the real ai@5 client
(tests/e2e/test_ai_sdk_v5.py). Run with ``uvicorn tests.e2e.v5_app:app``; the app is mounted at
``/agent``.

Its scripted model answers the user's last text (or file):

* ``hello``: text; ``think``: reasoning, then text; ``roll``: ``Roll <n>.``, ``n`` counting the
  rolls of this server (so a regenerated answer differs from the one it replaces); ``slowly``:
  a long text, one delta every 50 ms (a page can go away mid-answer and resume it: the app keeps
  its streams, ``Stores(streams=InMemoryStreamStore())``);
* ``weather``: calls the server tool ``get_weather``, then says its result;
* ``play``: calls the browser tool ``change_bgm`` (``addToolResult`` answers it), then says its
  result; ``explode``: some text, then the model fails;
* ``send``: calls ``send_money``, which asks for the user's confirmation itself
  (``tool_context.request_confirmation``), which no start-up check can see: the ai@5 client is
  told, in an ``error`` chunk, that it cannot give it;
* a message with a file: says the file's type and text.

No tool is declared to ask for approval: ai@5 cannot answer one (the app would refuse the agent).
"""

from __future__ import annotations

import itertools
import json

from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp, InMemoryStreamStore, Stores, client_tool
from adk_asgi.testing import Call, Fail, Segment, Text, Thought
from tests.e2e.demo_under_test import PacedDemoModel

HELLO = "Hello from an agent served to ai@5."
THOUGHT = "The user wants a number; forty-two will do."
ANSWER = "Forty-two."
ALMOST = "Something is about to go wrong..."
STORY = "Once upon a time, a client of the AI SDK 5 read a long answer, went away and came back."
_rolls = itertools.count(1)


def get_weather(city: str) -> dict[str, object]:
    """The weather in a city."""
    return {"city": city, "forecast": "windy", "temperature_c": 19}


def send_money(amount: int, tool_context: ToolContext) -> dict[str, object]:
    """Send money; the user confirms each transfer."""
    if tool_context.tool_confirmation is None:
        tool_context.request_confirmation(hint=f"Send {amount}?")
        return {"status": "waiting for the user"}
    return {"sent": amount}


@client_tool
def change_bgm(track: int) -> None:
    """Play a background music track in the browser."""


def respond(contents: list[types.Content]) -> list[Segment]:
    last = contents[-1]
    parts = last.parts or []
    results = [p.function_response for p in parts if p.function_response is not None]
    if results:
        said = "; ".join(f"{r.name}: {json.dumps(r.response, sort_keys=True)}" for r in results)
        return [Text(f"Done: {said}.")]
    files = [p.inline_data for p in parts if p.inline_data is not None]
    if files:
        shown = [f"{f.mime_type} {(f.data or b'').decode()!r}" for f in files]
        return [Text(f"I got {', '.join(shown)}.")]
    text = "".join(p.text or "" for p in parts).lower()
    if "slowly" in text:
        return [Text(STORY)]
    if "think" in text:
        return [Thought(THOUGHT), Text(ANSWER)]
    if "roll" in text:
        return [Text(f"Roll {next(_rolls)}.")]
    if "weather" in text:
        return [Call("get_weather", {"city": "Paris"})]
    if "play" in text:
        return [Call("change_bgm", {"track": 2})]
    if "send" in text:
        return [Call("send_money", {"amount": 5})]
    if "explode" in text:
        return [Text(ALMOST), Fail("the scripted model failed")]
    return [Text(HELLO)]


agent = LlmAgent(
    name="assistant",
    model=PacedDemoModel(responder=respond),  # "slowly": one response every 50 ms
    tools=[get_weather, change_bgm, send_money],
)
chat = AdkApp(agent, ai_sdk_version=5, stores=Stores(streams=InMemoryStreamStore()))
app = Starlette(routes=[Mount("/agent", chat)])
