"""The Django recipe's host with an agent whose run the test holds open (for the streaming test).

Run next to a copy of ``examples/`` (``uvicorn gated_host:app --app-dir <its directory>`` in
the copy, by the wheel's venv: tests/recipes/conftest.py), it serves the example project's
Django application (``django_project.asgi.django_app``) behind ``AdkMiddleware``, like
``examples/django_project/asgi.py``, but with an agent that cannot finish its run on its own:
asked ``hold <gate>``, the model calls ``hold``, which waits until another chat asks
``release <gate>``. A client that receives the first chunks of the held run before it has
released it proves the body is streamed, not buffered until the run ends.
"""

from __future__ import annotations

import asyncio

from django_project.asgi import django_app
from google.adk.agents import LlmAgent
from google.genai import types

from adk_asgi import AdkApp, AdkMiddleware
from adk_asgi.testing import Call, ScriptedLlm, Text, Turn

_gates: dict[str, asyncio.Event] = {}


def _gate(name: str) -> asyncio.Event:
    return _gates.setdefault(name, asyncio.Event())


async def hold(gate: str) -> dict[str, str]:
    """Wait until the gate is released.

    Args:
        gate: The gate's name.
    """
    await _gate(gate).wait()
    return {"gate": gate, "status": "released"}


async def release(gate: str) -> dict[str, str]:
    """Release a gate.

    Args:
        gate: The gate's name.
    """
    _gate(gate).set()
    return {"gate": gate, "status": "open"}


def _respond(contents: list[types.Content]) -> Turn:
    parts = contents[-1].parts or []
    if any(part.function_response for part in parts):
        return [Text("Done.")]
    verb, gate = "".join(part.text or "" for part in parts).split()
    return [Call(verb, {"gate": gate})]


agent = LlmAgent(name="gated_agent", model=ScriptedLlm(responder=_respond), tools=[hold, release])
app = AdkMiddleware(django_app, prefix="/agent", chat=AdkApp(agent))
