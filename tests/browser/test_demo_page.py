"""The demo page (``web/``) in a real browser: Debian's Chromium, headless, driven by
playwright-core (``run.mjs``, one fresh browser per test) against the demo app under uvicorn
(the session's ``demo_server``), which serves the built page at ``/``.

Each scenario clicks an example prompt, answers approvals with the cards' buttons and checks what
a user sees: the tool cards' states, the assistant's last sentence, the errors shown. SSE uses
the stock ``DefaultChatTransport``, live the stock ``WebSocketChatTransport``, voice the served
``AdkLiveTransport`` with audio (and Chromium's fake microphone). A failure prints the page's
text and console errors and leaves a screenshot in ``test-artifacts/``.

Needs ``make web`` (``npm ci`` and the build in ``web/``) and ``/usr/bin/chromium``
(``make chromium``); ``make test`` does both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("run.mjs")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

SCENARIOS = [
    "weather",
    "payment-approve",
    "payment-deny",
    "two-payments",
    "bgm",
    "location-approve",
    "location-deny",
    "explode",
    "reload",
]
CASES = [
    *((mode, scenario) for scenario in SCENARIOS for mode in ("sse", "live")),
    ("voice", "weather"),  # typed, answered with audio and its transcript
    ("voice", "talk"),  # the microphone
]


@pytest.fixture(scope="module")
def page_url(demo_server: str) -> str:
    """The demo server, once it is known to serve the built page to a browser we can drive."""
    problems = []
    if shutil.which("node") is None:
        problems.append("`node` is not on PATH (Node >= 20)")
    if not (ROOT / "web/node_modules/playwright-core").is_dir():
        problems.append("web/node_modules lacks playwright-core: run `make web`")
    if not (ROOT / "web/dist/index.html").is_file():
        problems.append("the page is not built (web/dist): run `make web`")
    if not Path(CHROMIUM).is_file():
        problems.append(f"{CHROMIUM} is missing: run `make chromium`")
    if problems:
        pytest.fail("the browser tests cannot run: " + "; ".join(problems))
    if '<div id="root">' not in httpx.get(demo_server + "/", timeout=10).text:
        pytest.fail("the demo server does not serve web/dist at / (built after it started?)")
    return demo_server


@pytest.mark.parametrize(("mode", "scenario"), CASES, ids=[f"{m}-{s}" for m, s in CASES])
def test_demo_page(page_url: str, mode: str, scenario: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / f"browser-{mode}-{scenario}.png"
    screenshot.unlink(missing_ok=True)
    command = ["node", str(RUNNER), page_url, mode, scenario]
    command += ["--failure-screenshot", str(screenshot)]
    result = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=90, check=False
    )
    assert result.returncode == 0, (
        f"{result.stderr}{result.stdout}\nscreenshot: {screenshot.relative_to(ROOT)}"
    )
