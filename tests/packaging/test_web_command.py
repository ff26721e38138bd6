"""``adk-asgi web`` from a built wheel: a venv with the wheel installed (its dependencies from
this venv, no checkout on the path, no Node), the ``adk-asgi`` script pip made, a user's own
agent in ADK's layout, ``--offline``; then the page in Chromium, over SSE and live, and the
chat over HTTP with whole streams."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.test_demo_page import CHROMIUM, ROOT, passed, run_page
from tests.servers import free_port, wait_ready
from tests.support import parse_sse, user_body

pytestmark = pytest.mark.e2e

CLOCK = '''
from google.adk.agents import LlmAgent


def get_time(city: str) -> dict:
    """The time in a city."""
    return {"city": city, "time": "12:00"}


root_agent = LlmAgent(
    name="clock", model="gemini-2.5-flash", instruction="Tell the time.", tools=[get_time]
)
'''


@pytest.fixture(scope="module")
def served(wheel_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``adk-asgi web agents/ --offline`` from the wheel's venv, in a directory of the user's."""
    project = tmp_path_factory.mktemp("web-command") / "project"
    (project / "agents" / "clock").mkdir(parents=True)
    (project / "agents" / "clock" / "__init__.py").write_text("from . import agent\n")
    (project / "agents" / "clock" / "agent.py").write_text(CLOCK)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTHON"))}
    script = wheel_python.parent / "adk-asgi"  # what pip made of the wheel's entry point
    command = [str(script), "web", "agents", "--offline", "--port", str(port)]
    server = subprocess.Popen(command, cwd=project, env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{base}/page.json", server, timeout=60)
        yield base
    finally:
        server.terminate()
        _, log = server.communicate(timeout=15)
        if server.returncode not in (0, -15):
            print(log)


def test_the_command_serves_the_page_and_the_users_agent(served: str) -> None:
    page = httpx.get(served + "/")
    assert page.status_code == 200 and '<div id="root">' in page.text
    assert httpx.get(served + "/page.json").json() == {
        "title": "clock · adk-asgi",
        "examples": ["Hello!", "explode"],
        "intro": "The agent clock, served by adk_asgi at /agent to the AI SDK's chat.",
    }
    with httpx.Client(base_url=served + "/agent") as client:
        said = client.post("/chat", json=user_body("hi", "c1"))
        body = user_body('call get_time {"city": "Rome"}', "c2")
        called = client.post("/chat", json=body)
    assert _texts(parse_sse(said.text)) == ['You said: "hi".']
    chunks = parse_sse(called.text)
    tools = [(c["type"], c.get("toolName"), c.get("input"), c.get("output")) for c in chunks]
    assert [t for t in tools if t[0].startswith("tool-")] == [
        ("tool-input-start", "get_time", None, None),
        ("tool-input-available", "get_time", {"city": "Rome"}, None),
        ("tool-output-available", None, None, {"city": "Rome", "time": "12:00"}),
    ]
    assert _texts(chunks) == ['get_time returned {"city": "Rome", "time": "12:00"}.']


@pytest.mark.parametrize("mode", ["sse", "live"])
def test_the_page_talks_to_the_users_agent_in_chromium(served: str, mode: str) -> None:
    if shutil.which("node") is None or not Path(CHROMIUM).is_file():
        pytest.fail("the browser test needs node and Chromium: make test installs both")
    assert (ROOT / "web/node_modules/playwright-core").is_dir(), "run `make web`"
    passed(*run_page(served, mode, "own-agent", artifact=f"web-command-{mode}"))


def _texts(chunks: list[dict[str, Any]]) -> list[str]:
    """The text of each text block, whole."""
    blocks: dict[str, str] = {}
    for chunk in chunks:
        if chunk["type"] == "text-delta":
            blocks[chunk["id"]] = blocks.get(chunk["id"], "") + chunk["delta"]
    return list(blocks.values())
