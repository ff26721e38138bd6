"""``demo_app``: which model answers which route, and what importing the module builds.

Offline one scripted agent serves ``POST /agent/chat`` and ``WS /agent/live``. With Gemini
settings the SSE route gets a chat model and the live route a live model: one ``AdkApp`` with
a ``live_agent``, its two runners sharing sessions, identity and chat locks. No test here
reaches Gemini: building an agent on a model name opens no connection, and the routing test
resolves its model names to scripted models through ADK's model registry.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from google.adk.models.registry import LLMRegistry
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount
from websockets.asyncio.client import connect

import demo_app
from adk_asgi import AdkApp
from adk_asgi.testing import ScriptedLlm, Text, demo_model
from tests.support import parse_sse, user_body

GEMINI_SETTINGS = ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "DEMO_MODEL", "DEMO_LIVE_MODEL")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start every test without Gemini settings, whatever the shell has."""
    for name in GEMINI_SETTINGS:
        monkeypatch.delenv(name, raising=False)


def agent_app(app: Starlette) -> AdkApp:
    mount = app.routes[0]
    assert isinstance(mount, Mount) and mount.path == "/agent"
    assert isinstance(mount.app, AdkApp)
    return mount.app


def models(app: Starlette) -> tuple[object, object]:
    chat = agent_app(app)
    return chat.runner.agent.model, chat.live_runner.agent.model  # type: ignore[attr-defined]


def test_offline_one_scripted_agent_serves_both_routes() -> None:
    chat = agent_app(demo_app.create_app())
    assert chat.live_runner is chat.runner
    assert isinstance(chat.runner.agent.model, ScriptedLlm)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("setting", "value"), [("GOOGLE_API_KEY", "not-a-key"), ("GOOGLE_GENAI_USE_VERTEXAI", "1")]
)
def test_gemini_serves_sse_with_a_chat_model_and_live_with_a_live_model(
    monkeypatch: pytest.MonkeyPatch, setting: str, value: str
) -> None:
    monkeypatch.setenv(setting, value)
    app = demo_app.create_app()
    assert models(app) == ("gemini-2.5-flash", "gemini-live-2.5-flash-preview")
    chat = agent_app(app)
    live = chat.live_runner
    assert live is not chat.runner
    assert live.session_service is chat.runner.session_service  # one store, one hand-over
    assert live.app_name == chat.app_name == "demo_agent"
    assert sorted(chat.services.tools.client_tools) == ["change_bgm", "get_location"]


def test_the_models_can_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "not-a-key")
    monkeypatch.setenv("DEMO_MODEL", "gemini-2.5-pro")
    monkeypatch.setenv("DEMO_LIVE_MODEL", "gemini-2.5-flash-native-audio-preview-09-2025")
    assert models(demo_app.create_app()) == (
        "gemini-2.5-pro",
        "gemini-2.5-flash-native-audio-preview-09-2025",
    )


def test_an_explicit_agent_serves_both_routes_even_with_gemini(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "not-a-key")
    agent = demo_app.build_agent(demo_model())
    chat = agent_app(demo_app.create_app(agent))
    assert chat.live_runner is chat.runner
    assert chat.runner.agent is agent


@asynccontextmanager
async def serve(app: Starlette) -> AsyncIterator[str]:
    """``app`` under uvicorn in this event loop, lifespan included (it closes the AdkApps).

    The listening socket is bound here and handed to uvicorn, so there is nothing to wait for:
    a connection made before uvicorn serves waits in the socket's backlog, and uvicorn runs
    the lifespan startup before it takes any."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            await task


class NamedLlm(ScriptedLlm):
    """A scripted model registered for ``named-*`` model names; it answers with its name."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"named-.*"]

    def __init__(self, **fields: Any) -> None:
        name = fields["model"]

        def respond(contents: Sequence[types.Content]) -> list[Text]:
            return [Text(f"{name} answers.")]

        super().__init__(responder=respond, **fields)


async def test_each_route_is_answered_by_its_model_in_one_shared_chat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    LLMRegistry.register(NamedLlm)
    monkeypatch.setenv("GOOGLE_API_KEY", "not-a-key")
    monkeypatch.setenv("DEMO_MODEL", "named-chat")
    monkeypatch.setenv("DEMO_LIVE_MODEL", "named-live")
    async with serve(demo_app.create_app()) as base, httpx.AsyncClient(base_url=base) as client:
        sse = await client.post("/agent/chat", json=user_body("hi", chat_id="shared"), timeout=10)
        assert sse.status_code == 200
        said = "".join(c["delta"] for c in parse_sse(sse.content) if c["type"] == "text-delta")
        assert said == "named-chat answers."

        # The same browser (the cookie the SSE answer set) goes on with the chat in live mode.
        cookie = f"adk_asgi_uid={client.cookies['adk_asgi_uid']}"
        url = base.replace("http://", "ws://") + "/agent/live"
        async with connect(url, additional_headers={"cookie": cookie}) as socket:
            first = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
            second = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "again"}]}
            send: dict[str, Any] = {
                "type": "send",
                "requestId": "r1",
                "id": "shared",
                "trigger": "submit-message",
                "messageId": None,
                "messages": [first, second],
                "headers": {},
                "body": {},
                "metadata": None,
            }
            await socket.send(json.dumps(send))
            chunks: list[dict[str, Any]] = []
            while (frame := json.loads(await asyncio.wait_for(socket.recv(), 10)))["type"] != "end":
                assert frame["type"] in ("start", "chunk"), frame
                if frame["type"] == "chunk":
                    chunks.append(frame["chunk"])
        said = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
        assert said == "named-live answers."

        history = (await client.get("/agent/chat/shared/messages")).json()
    texts = [[p["text"] for p in m["parts"] if p["type"] == "text"] for m in history]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert texts == [["hi"], ["named-chat answers."], ["again"], ["named-live answers."]]


def test_importing_the_demo_builds_no_app() -> None:
    """``uvicorn demo_app:app`` builds it on first access. (The examples, which no longer import
    the demo, are imported from a pip install in tests/recipes/test_mounting.py.)"""
    probe = """
import demo_app
from starlette.applications import Starlette
assert "app" not in vars(demo_app), "importing demo_app built its app"
app = demo_app.app
assert isinstance(app, Starlette) and demo_app.app is app
try:
    demo_app.nothing
except AttributeError as exc:
    assert str(exc) == "module 'demo_app' has no attribute 'nothing'", exc
else:
    raise AssertionError("demo_app.nothing exists")
"""
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", probe],
        cwd=Path(demo_app.__file__).parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
