"""README.md's code runs: its quick start, executed as written with a scripted model in place of
Gemini, answers ``POST /agent/chat`` and closes the ``AdkApp`` when the server shuts down; and
run verbatim with no key under uvicorn, its curl commands get the answer and its history."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.plugins.base_plugin import BasePlugin
from starlette.types import ASGIApp, Message

from adk_asgi import AdkApp
from adk_asgi.testing import ScriptedLlm, Text
from tests.servers import free_port, wait_ready
from tests.support import parse_sse, user_body

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(markdown: str) -> list[tuple[str, str]]:
    """The fenced code blocks of ``markdown``: (language, code), in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(markdown)]


def section(title: str) -> str:
    """The text of README's ``## title`` section, up to the next ``## ``."""
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def quick_start() -> str:
    python = [code for language, code in blocks(section("Quick start")) if language == "python"]
    assert len(python) == 1, "the quick start has one Python block"
    return python[0]


class CloseRecorder(BasePlugin):
    """Writes down when the runner closes its plugins (``AdkApp.aclose`` → ``Runner.close``)."""

    def __init__(self, log: list[str]) -> None:
        super().__init__(name="close_recorder")
        self.log = log

    async def close(self) -> None:
        self.log.append("closed")


@asynccontextmanager
async def lifespan_of(app: ASGIApp) -> AsyncIterator[None]:
    """The ASGI lifespan protocol around the block, as a server speaks it: startup before,
    shutdown after. (httpx's ASGITransport sends no lifespan, and Starlette's TestClient, which
    does, warns that its httpx backend is deprecated.)"""
    to_app: asyncio.Queue[Message] = asyncio.Queue()
    from_app: asyncio.Queue[Message] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}

    async def serve() -> None:
        await app(scope, to_app.get, from_app.put)

    task = asyncio.create_task(serve())
    async with asyncio.timeout(10):
        await to_app.put({"type": "lifespan.startup"})
        assert await from_app.get() == {"type": "lifespan.startup.complete"}
    yield
    async with asyncio.timeout(10):
        await to_app.put({"type": "lifespan.shutdown"})
        assert await from_app.get() == {"type": "lifespan.shutdown.complete"}
        await task


def test_the_first_commands_are_make_demo_and_make_test() -> None:
    language, code = blocks(README.read_text())[0]
    commands = [line.split("#")[0].strip() for line in code.splitlines()]
    assert (language, commands) == ("sh", ["make demo", "make test"])


def test_install_names_the_repository_not_a_pypi_release() -> None:
    install = section("Install")
    commands = [
        line.split("#")[0].strip()
        for language, code in blocks(install)
        if language == "sh"
        for line in code.splitlines()
    ]
    assert "pip install ." in commands
    assert "pip install -e ." in commands
    assert 'pip install ".[redis]"' in commands
    assert 'pip install ".[postgres]"' in commands
    assert "pip install build && python -m build" in commands
    assert any(c.startswith('pip install "adk-asgi @ git+') for c in commands), commands
    assert "pip install adk-asgi" not in commands


async def test_the_quick_start_serves_a_chat_and_closes_the_app_at_shutdown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "a key")  # (on the scripted model, in this process)
    namespace: dict[str, Any] = {"__name__": "readme_quick_start"}
    exec(compile(quick_start(), f"{README}:quick start", "exec"), namespace)
    agent, chat, app = namespace["agent"], namespace["chat"], namespace["app"]
    assert isinstance(agent, LlmAgent) and isinstance(chat, AdkApp)
    assert agent.model == "gemini-2.5-flash"
    agent.model = ScriptedLlm(turns=[[Text("Hello from the README.")]])
    log: list[str] = []
    chat.runner.plugin_manager.register_plugin(CloseRecorder(log))

    transport = httpx.ASGITransport(app=app)
    async with (
        lifespan_of(app),
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as client,
    ):
        response = await client.post("/agent/chat", json=user_body("hi"))
        assert response.status_code == 200, response.text
        chunks = parse_sse(response.content)
        assert log == []
    assert log == ["closed"], "the quick start's lifespan does not close the AdkApp"

    assert chunks[0]["type"] == "start" and chunks[-1] == {"type": "finish", "finishReason": "stop"}
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == "Hello from the README."


def test_the_quick_start_runs_verbatim_without_a_key_and_curl_reads_it_back(
    tmp_path: Path,
) -> None:
    """README's ``main.py`` under a real uvicorn with no key in the environment (the stand-in
    answers), and its two curl commands as written (the port aside): the answer streams, and
    the cookie jar reads the same chat's history back."""
    (tmp_path / "main.py").write_text(quick_start())
    [commands] = [code for language, code in blocks(section("Quick start")) if language == "sh"]
    lines = commands.replace("\\\n", "").splitlines()
    assert lines[0] == "uvicorn main:app &"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOOGLE_")}
    command = [sys.executable, "-m", "uvicorn", "main:app", "--port", str(port)]
    server = subprocess.Popen(command, cwd=tmp_path, env=env, stderr=subprocess.DEVNULL)
    try:
        wait_ready(f"http://127.0.0.1:{port}/agent/chats", server, timeout=60)
        said, history = (
            subprocess.run(
                line.replace("localhost:8000", f"localhost:{port}"),
                shell=True,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout
            for line in lines[1:]
        )
    finally:
        server.terminate()
        server.wait(timeout=15)
    chunks = parse_sse(said)
    assert "".join(c["delta"] for c in chunks if c["type"] == "text-delta") == 'You said: "hi".'
    messages = json.loads(history)
    assert [(m["id"], m["role"]) for m in messages][:1] == [("u1", "user")]
    assert [p["text"] for m in messages for p in m["parts"] if p["type"] == "text"] == [
        "hi",
        'You said: "hi".',
    ]
