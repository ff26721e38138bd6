"""An app with a ``request_state`` hook, as docs/sse.md#request-extras shows it: the client's
``body`` extras choose a ``mode``, which the agent's instruction template (``{mode}``) reads.
The scripted model answers with the first paragraph of the instruction it was given and the
user's text, so a test reads what the agent saw.

Run with ``uvicorn tests.e2e.request_state_app:app`` (tests/e2e/test_last_message_clients.py).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from google.adk.agents import LlmAgent
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp
from adk_asgi.testing import ScriptedLlm, Text


class Extras(msgspec.Struct):
    """What the app takes from a request's extras; any other key is ignored."""

    mode: Literal["terse", "chatty"] = "chatty"


def request_state(extras: dict[str, Any], user_id: str) -> dict[str, Any]:
    # a msgspec.ValidationError is a ValueError: the client gets a 422 with its message
    return {"mode": msgspec.convert(extras, Extras).mode}


def echo_instruction(contents: list[types.Content]) -> list[Text]:
    """The instruction the model was given (its first paragraph: ADK adds the agent's name),
    then what the user said. ``model.requests[-1]`` is this call's: the model records it just
    before asking the responder."""
    instruction = str(model.requests[-1].config.system_instruction).split("\n\n")[0]
    texts = [p.text for c in contents for p in c.parts or [] if p.text]
    return [Text(f"{instruction} You said: {texts[-1]}")]


model = ScriptedLlm(responder=echo_instruction, chunk_size=1000)
agent = LlmAgent(
    name="moody",
    model=model,
    instruction="Answer in {mode} mode.",
)
app = Starlette(
    routes=[Mount("/agent", app=AdkApp(agent, request_state=request_state))],
)
