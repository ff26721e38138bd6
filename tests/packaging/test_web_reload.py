"""``adk-asgi web --reload``: a change to the agent's code is served without a restart by hand,
as ``adk web --reload`` does (uvicorn's reloader watches the agent's directory and starts the
server process anew; the offline stand-in, in the command's own process, stays up)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.servers import free_port, wait_ready
from tests.support import parse_sse, user_body

CLOCK = '''
from google.adk.agents import LlmAgent


def get_time(city: str) -> dict:
    """The time in a city."""
    return {{"city": city, "time": "{time}"}}


root_agent = LlmAgent(
    name="clock", model="gemini-2.5-flash", instruction="Tell the time.", tools=[get_time]
)
'''


def _answer(base: str, chat_id: str) -> str:
    """The text of the answer to ``call get_time`` in a new chat."""
    body = user_body('call get_time {"city": "Rome"}', chat_id)
    response = httpx.post(f"{base}/agent/chat", json=body, timeout=30)
    assert response.status_code == 200, response.text
    chunks = parse_sse(response.text)
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def test_a_change_to_the_agents_code_is_served_after_reload(tmp_path: Path) -> None:
    agent = tmp_path / "agents" / "clock" / "agent.py"
    agent.parent.mkdir(parents=True)
    (agent.parent / "__init__.py").write_text("from . import agent\n")
    agent.write_text(CLOCK.format(time="12:00"))
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "adk-asgi"),
        *("web", "agents", "--offline", "--reload", "--port", str(port)),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOOGLE_")}
    server = subprocess.Popen(
        command, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{base}/page.json", server, timeout=60)
        before = 'get_time returned {"city": "Rome", "time": "12:00"}.'
        assert _answer(base, "before") == before

        agent.write_text(CLOCK.format(time="13:00"))
        after = 'get_time returned {"city": "Rome", "time": "13:00"}.'
        answers: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and after not in answers:
            time.sleep(0.5)  # the reloader's own pace: it polls the files and restarts
            try:
                answers.append(_answer(base, f"after-{len(answers)}"))
            except httpx.TransportError:
                continue  # between the old server process and the new one
        # Every answer is the old code's or the new one's, and the last is the new one's.
        assert set(answers) <= {before, after} and answers[-1] == after, answers
    finally:
        server.terminate()
        _, log = server.communicate(timeout=15)
    assert server.returncode in (0, -15), log
    assert "detected changes in 'agents/clock/agent.py'. Reloading..." in log, log
