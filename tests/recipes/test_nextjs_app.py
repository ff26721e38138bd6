"""The Next.js example (``examples/nextjs``), as docs/mounting.md's recipe has it: the app built
with ``next build`` and served by ``next start``, its rewrite forwarding ``/agent/...`` to the
example's agent (``examples/nextjs/agent.py``, from the built wheel in a throwaway venv, offline),
and the page driven in Chromium (``nextjs_page.mjs``): a message over SSE, a payment approved
and one denied on the approval card, then live mode and a message over the WebSocket, which the
rewrite proxies too. And what the recipe's ``allowed_origins`` is for: a page origin the agent
does not list is refused through the rewrite, which sends the agent its own address as ``Host``.

``next build`` fixes the agent's address (``AGENT_URL`` in ``next.config.js``), so the agent
listens on the port the build names (``make nextjs``: 18731, outside Linux's ephemeral range);
a lock in the temp directory keeps two runs on one machine from wanting it at once. ``make
test`` builds the app first (``make nextjs``); here ``make nextjs`` again rebuilds it only when
it is missing or older than its sources, so plain ``pytest`` works.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from tests.servers import free_port, wait_ready
from tests.support import parse_sse, user_body

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "nextjs"
DRIVER = Path(__file__).with_name("nextjs_page.mjs")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
LOCK = Path(tempfile.gettempdir()) / "adk-asgi-nextjs-example.lock"
NODE_DEADLINE_MS = 40_000

PAID = {"status": "sent", "amount": 5, "recipient": "alice"}
REJECTED = {"error": "This tool call is rejected."}


def _built_agent_port() -> int:
    """``make nextjs`` (a no-op when the build is current), then the port of the agent the
    build's rewrite forwards to (``.next/routes-manifest.json``)."""
    problems = []
    for tool in ("node", "npm", "make"):
        if shutil.which(tool) is None:
            problems.append(f"`{tool}` is not on PATH")
    if not (ROOT / "web/node_modules/playwright-core").is_dir():
        problems.append("web/node_modules lacks playwright-core: run `make web`")
    if not Path(CHROMIUM).is_file():
        problems.append(f"{CHROMIUM} is missing: run `make chromium`")
    if problems:
        pytest.fail("the Next.js test cannot run: " + "; ".join(problems))
    made = subprocess.run(
        ["make", "-s", "nextjs"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )
    assert made.returncode == 0, f"make nextjs failed:\n{made.stdout}"
    manifest = json.loads((APP / ".next" / "routes-manifest.json").read_text())
    [rewrite] = manifest["rewrites"]["afterFiles"]
    assert rewrite["source"] == "/agent/:path*", rewrite
    destination = urlsplit(str(rewrite["destination"]))
    port = destination.port
    assert destination.hostname == "127.0.0.1" and port is not None, rewrite
    return port


@pytest.fixture
def page(wheel_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The page's origin: ``next start`` on a free port, with the example's agent on the port
    its build forwards to, told that origin (``PAGE_ORIGIN``, its ``allowed_origins``); the
    agent from a user's copy of ``agent.py``, run by the wheel's venv (``uvicorn agent:app``)."""
    user = tmp_path_factory.mktemp("nextjs-agent")
    shutil.copy2(APP / "agent.py", user / "agent.py")
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one run at a time per machine: the agent's port
        agent_port = _built_agent_port()
        port = free_port()
        origin = f"http://127.0.0.1:{port}"
        node_env = {**os.environ, "NEXT_TELEMETRY_DISABLED": "1"}
        next_start = [str(APP / "node_modules/.bin/next"), "start", "-H", "127.0.0.1"]
        web = subprocess.Popen(
            [*next_start, "-p", str(port)], cwd=APP, env=node_env, stdout=subprocess.DEVNULL
        )
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", agent_port))
        except OSError as error:
            sock.close()
            web.terminate()
            web.wait()
            pytest.fail(f"the built app's agent port {agent_port} is taken: {error}")
        sock.listen(128)
        # no GOOGLE_* (the offline stand-in answers), no PYTHON* (nothing of the checkout)
        user_env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTHON"))}
        uvicorn = ["-m", "uvicorn", "agent:app", "--log-level", "warning", "--no-access-log"]
        agent = subprocess.Popen(
            [str(wheel_python), *uvicorn, "--fd", str(sock.fileno())],
            cwd=user,
            env={**user_env, "PAGE_ORIGIN": origin},
            pass_fds=[sock.fileno()],
        )
        sock.close()
        try:
            wait_ready(origin + "/", web)
            wait_ready(f"http://127.0.0.1:{agent_port}/agent/chat", agent, timeout=60)
            yield origin
        finally:
            for process in (web, agent):
                process.terminate()
            for process in (web, agent):
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def test_the_app_in_chromium_and_the_origin_it_needs(page: str) -> None:
    """One test on the servers, not two: each run holds the agent's fixed port (``LOCK``), and
    under xdist a second test could wait for it on another worker."""
    _chat_in_chromium(page)
    _an_origin_not_listed_is_refused_through_the_rewrite(page)


def _chat_in_chromium(page: str) -> None:
    """SSE, an approval approved and one denied, then live mode, as the page shows them and as
    they went over the wire: everything to the Next.js server."""
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "nextjs-app.png"
    completed = subprocess.run(
        [
            *("node", str(DRIVER), page, "--deadline-ms", str(NODE_DEADLINE_MS)),
            *("--failure-screenshot", str(screenshot)),
        ],
        capture_output=True,
        text=True,
        timeout=NODE_DEADLINE_MS / 1000 + 20,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr + f"\n(screenshot: {screenshot})"
    seen = json.loads(completed.stdout)
    paid = json.dumps(PAID, separators=(",", ":"))
    assert seen["messages"] == [
        _user("Hello from Next.js"),
        _assistant('You said: "Hello from Next.js".'),
        _user('call process_payment {"amount": 5, "recipient": "alice"}'),
        _assistant(
            {
                "state": "output-available",
                "text": f'process_payment({{"amount":5,"recipient":"alice"}})\n{paid}',
            },
            f"process_payment returned {json.dumps(PAID)}.",
        ),
        _user('call process_payment {"amount": 7, "recipient": "bob"}'),
        _assistant(
            {
                "state": "output-denied",
                "text": 'process_payment({"amount":7,"recipient":"bob"})\nDenied',
            },
            f"process_payment returned {json.dumps(REJECTED)}.",
        ),
        _user("Hello over the socket"),
        _assistant('You said: "Hello over the socket".'),
    ]
    # SSE: the message, then each payment and its approval's answer; all to the Next.js server
    assert seen["http"] == [["POST", page, "/agent/chat", 200]] * 5
    # live: one socket, to the Next.js server, which proxied it to the agent
    [live] = seen["webSockets"]
    assert live["url"] == page.replace("http://", "ws://") + "/agent/live"
    assert live["framesReceived"] > 0
    assert seen["consoleErrors"] == []


def _an_origin_not_listed_is_refused_through_the_rewrite(page: str) -> None:
    """The recipe as it was, without ``allowed_origins``: the same Next.js server under another
    name (``localhost``), so a page whose origin the agent was not told. The browser sends that
    origin, and the page's own host as ``Host``; the rewrite hands the agent the agent's own
    address instead, so the agent refuses the chat and the live socket as a cross-site page."""
    port = urlsplit(page).port
    other = f"http://localhost:{port}"
    headers = {"Host": f"localhost:{port}", "Origin": other}
    refused = httpx.post(f"{page}/agent/chat", json=user_body("hi", "refused"), headers=headers)
    assert refused.status_code == 403
    assert refused.json() == {
        "error": f"origin '{other}' is not allowed: this app serves its own origin only"
        " (Security(allowed_origins=...) lists others)"
    }
    with (
        socket.create_connection(("127.0.0.1", port or 0), timeout=10) as sock,
        pytest.raises(InvalidStatus) as handshake,
    ):
        connect(f"ws://localhost:{port}/agent/live", sock=sock, origin=Origin(other))
    assert handshake.value.response.status_code == 403
    # and the page's own origin, listed, is let through
    listed = {"Origin": page}
    answered = httpx.post(f"{page}/agent/chat", json=user_body("hi", "listed"), headers=listed)
    assert answered.status_code == 200
    chunks = parse_sse(answered.text)
    said = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert said == 'You said: "hi".'


def test_the_docs_recipe_is_the_examples() -> None:
    """docs/mounting.md's recipe has what the example runs: the rewrite, the transports, and
    the page's origin in the agent's ``allowed_origins``."""
    docs = (ROOT / "docs" / "mounting.md").read_text()
    recipe = docs[docs.index("## Next.js (App Router)") : docs.index("### Why `allowed_origins`")]
    config = (APP / "next.config.js").read_text()
    chat = (APP / "app" / "chat.tsx").read_text()
    agent = (APP / "agent.py").read_text()
    for line in (
        'const AGENT_URL = process.env.AGENT_URL ?? "http://127.0.0.1:8000";',
        'return [{ source: "/agent/:path*", destination: `${AGENT_URL}/agent/:path*` }];',
    ):
        assert line in config and line in recipe, line
    for transport in (
        'new DefaultChatTransport({ api: "/agent/chat" })',
        'new WebSocketChatTransport({ url: "/agent/live" })',
    ):
        assert transport in chat and transport in recipe, transport
    assert 'chat = AdkApp(agent, security=Security(allowed_origins=["http://localhost:3000"]))' in (
        recipe
    )
    assert 'PAGE_ORIGIN = os.environ.get("PAGE_ORIGIN", "http://localhost:3000")' in agent
    assert "    security=Security(allowed_origins=[PAGE_ORIGIN]),\n" in agent


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [text]}


def _assistant(*parts: str | dict[str, str]) -> dict[str, Any]:
    return {"role": "assistant", "parts": list(parts)}
