"""The demo page (``web/``) in a real browser: Debian's Chromium, headless, driven by
playwright-core (``run.mjs``) against the demo app under uvicorn (the session's ``demo_server``),
which serves the built page at ``/``. Each test process keeps one Chromium (``run.mjs --serve``,
tests/browser/kept_browser.py) and each test has a new browser context in it: its own cookies,
storage and permissions, as a fresh browser gave; a failed test's browser is not reused.

Each scenario clicks an example prompt, answers approvals with the cards' buttons and checks what
a user sees: the tool cards' states, the assistant's last sentence, the errors shown; and what a
user expects of a chat product: Stop, Regenerate, Retry, an approval closed by a newer message,
the chat list, attachments, the input's focus, tap targets, scrolling. Each runs in a 900x700
window; those whose layout differs on a phone also at 375x740 (ids ending ``-375px``). SSE uses
the stock ``DefaultChatTransport``, live the stock ``WebSocketChatTransport``, voice the served
``AdkLiveTransport`` with audio (and Chromium's fake microphone). A failure prints the page's
text and console errors and leaves a screenshot in ``test-artifacts/``: ``run.mjs`` keeps its own
deadline (``NODE_DEADLINE_MS``), shorter than this side's timeout, so a hung scenario still gets
its screenshot; a browser that never started is reported as such.

Needs ``make web`` (``npm ci`` and the build in ``web/``) and ``/usr/bin/chromium``
(``make chromium``); ``make test`` does both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.browser.kept_browser import KEPT, RUNNER, NoAnswer
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE_DEADLINE_MS = 60_000
"""run.mjs's own deadline for a whole run, browser start included."""
TIMEOUT = NODE_DEADLINE_MS / 1000 + 30
"""This side's timeout: past run.mjs's deadline, its screenshot, and closing the context."""
BROWSER_NEVER_STARTED = 3
"""run.mjs's exit code when Chromium did not start (no page, so no screenshot)."""

LAPTOP = "900x700"
PHONE = "375x740"
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
    "switch-mode",
    # what a user expects of a chat product
    "stop",  # SSE: Thinking… and Stop while submitted; DELETE .../stream ends the answer
    "regenerate",  # SSE: a new answer in place of the first; live: not offered
    "retry",  # after "explode", and after a reload (the data-error part in history)
    "closed-card",  # an approval left open when the user sent another message
    "chat-list",
    "attachment",
]
LAYOUT = ["chat-list", "composer", "scroll"]
"""Scenarios whose layout differs on a phone: run at both sizes."""
CASES = [
    *((mode, scenario, LAPTOP) for scenario in SCENARIOS for mode in ("sse", "live")),
    *((mode, scenario, PHONE) for scenario in LAYOUT for mode in ("sse", "live")),
    ("sse", "composer", LAPTOP),  # focus; Approve and Deny look different
    ("sse", "older-chats", LAPTOP),  # the chat list a page at a time
    ("sse", "scroll", LAPTOP),
    ("sse", "payment-approve", PHONE),
    ("sse", "attachment", PHONE),
    ("sse", "reload-mid-answer", LAPTOP),  # resumed with GET .../stream
    ("live", "reload-mid-answer", LAPTOP),  # resumed with a `resume` frame on a new connection
    ("voice", "weather", LAPTOP),  # typed, answered with audio and its transcript
    ("voice", "talk", LAPTOP),  # the microphone
]


@pytest.fixture(scope="session", autouse=True)
def kept_browser() -> Iterator[None]:
    """The test process's browser, closed with the session (and at exit, should other tests
    have run pages after it)."""
    yield
    KEPT.close()


def case_id(mode: str, scenario: str, viewport: str) -> str:
    return f"{mode}-{scenario}" + ("" if viewport == LAPTOP else f"-{viewport.split('x')[0]}px")


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


def run_page(
    base: str,
    mode: str,
    scenario: str,
    *,
    viewport: str = LAPTOP,
    deadline_ms: int = NODE_DEADLINE_MS,
    artifact: str = "",
    **env: str,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run one scenario with ``run.mjs`` in a window of ``viewport`` (``WIDTHxHEIGHT``), in the
    test process's kept browser, with ``env`` added to run.mjs's environment (``CHROMIUM``,
    ``FRAMES``); the result, as ``node run.mjs ...`` by itself would have exited and printed,
    and where a failure leaves its screenshot (``test-artifacts/browser-<case id>.png`` unless
    ``artifact`` names another)."""
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / f"{artifact or f'browser-{case_id(mode, scenario, viewport)}'}.png"
    screenshot.unlink(missing_ok=True)
    args = [base, mode, scenario, "--deadline-ms", str(deadline_ms)]
    args += ["--viewport", viewport]
    args += ["--failure-screenshot", str(screenshot)]
    try:
        result = KEPT.run(args, env, TIMEOUT)
    except NoAnswer as exc:
        if exc.timed_out:
            pytest.fail(
                f"run.mjs outlived its own deadline ({deadline_ms} ms) and was killed after "
                f"{TIMEOUT:g} s; {left_behind(None, screenshot)}\n{exc.output}"
            )
        stderr = f"{exc.output}run.mjs --serve exited ({exc.returncode}) with no answer\n"
        result = subprocess.CompletedProcess(["node", str(RUNNER), *args], 1, "", stderr)
    return result, screenshot


def left_behind(returncode: int | None, screenshot: Path) -> str:
    """What a failed run left to look at."""
    if screenshot.is_file():
        return f"screenshot: {screenshot.relative_to(ROOT)}"
    if returncode == BROWSER_NEVER_STARTED:
        return "no screenshot: the browser never started"
    return "no screenshot was taken (see run.mjs's output above)"


def passed(result: subprocess.CompletedProcess[str], screenshot: Path) -> None:
    """The scenario ran to its end; else its output and what it left to look at."""
    assert result.returncode == 0, (
        f"{result.stderr}{result.stdout}\n{left_behind(result.returncode, screenshot)}"
    )


@pytest.mark.parametrize(("mode", "scenario", "viewport"), CASES, ids=[case_id(*c) for c in CASES])
def test_demo_page(page_url: str, mode: str, scenario: str, viewport: str) -> None:
    result, screenshot = run_page(page_url, mode, scenario, viewport=viewport)
    passed(result, screenshot)


def test_a_run_past_its_deadline_leaves_a_screenshot(page_url: str) -> None:
    """``hang`` never ends: run.mjs stops it at its deadline, well before this side's timeout."""
    result, screenshot = run_page(page_url, "sse", "hang", deadline_ms=8_000)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(
        "hang (sse) failed: not done within its deadline of 8000 ms\n"
    ), result.stderr
    assert screenshot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert left_behind(1, screenshot) == "screenshot: test-artifacts/browser-sse-hang.png"
    screenshot.unlink()


def test_a_browser_that_never_starts_is_reported(tmp_path: Path) -> None:
    result, screenshot = run_page(
        "http://127.0.0.1:9",
        "sse",
        "weather",
        artifact="browser-never-started",
        CHROMIUM=str(tmp_path / "no-chromium"),
    )
    assert result.returncode == BROWSER_NEVER_STARTED, result.stderr
    assert result.stderr.startswith("weather (sse): the browser never started: "), result.stderr
    assert not screenshot.exists()
    assert left_behind(result.returncode, screenshot) == (
        "no screenshot: the browser never started"
    )


@pytest.fixture(scope="module")
def metadata_page(page_url: str) -> Iterator[str]:
    """The demo with a message metadata hook (tests/browser/metadata_page.py)."""
    with uvicorn_server("tests.browser.metadata_page:app") as base:
        yield base


@pytest.mark.parametrize("mode", ["sse", "live"])
def test_the_page_shows_each_answers_metadata(metadata_page: str, mode: str) -> None:
    """What a page reads from ``message.metadata`` (model, tokens) is shown under the answer
    and again after a reload, from history (docs/metadata.md)."""
    result, screenshot = run_page(metadata_page, mode, "metadata", artifact=f"metadata-{mode}")
    passed(result, screenshot)


@pytest.fixture(scope="module")
def features_page(page_url: str) -> Iterator[str]:
    """The page in front of tests/browser/features_page.py's agent."""
    with uvicorn_server("tests.browser.features_page:app") as base:
        yield base


@pytest.mark.parametrize("mode", ["sse", "live"])
def test_the_page_shows_data_cards_dynamic_tools_and_metadata(
    features_page: str, mode: str
) -> None:
    """A tool's ``data-weather`` card updated in place by its id, a toolset's (dynamic) tool
    approved with the card's button, each answer's model and tokens; the same after a reload."""
    result, screenshot = run_page(features_page, mode, "features", artifact=f"features-{mode}")
    passed(result, screenshot)


def test_the_page_shows_a_tools_progress_then_its_result(features_page: str) -> None:
    """A generator tool's progress message is its card's output while it runs (a preliminary
    output, SSE: docs/hitl.md), then its result replaces it."""
    result, screenshot = run_page(features_page, "sse", "progress", artifact="progress-sse")
    passed(result, screenshot)
