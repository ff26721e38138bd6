"""A resume served by the other worker: two uvicorn processes on one database, with Redis locks
and the Redis stream store. The answer is asked of worker A, its reader leaves, and worker B
replays it whole — to a plain HTTP client and to the real ai@6/ai@7 ``Chat`` reloaded
mid-answer; over SSE, and over live, where A goes on with the answer whose socket closed and B
takes the chat's Redis lock once it has ended."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from adk_asgi.testing import read_ui_message
from tests.deploy.on_gemini import on_gemini
from tests.e2e.node_client import drive_chat
from tests.e2e.test_reload_mid_answer import comparable, responses
from tests.live.live_chunks import HELLO, squash
from tests.live.live_socket import cookie_of, open_live, send_resume, text_frames_until_end, unframe
from tests.live.test_live_resume import leave_mid_answer
from tests.servers import uvicorn_server
from tests.support import normalize_ids, parse_sse

pytestmark = pytest.mark.backing

APP = "tests.deploy.payment_app:app"
PROMPT = " ".join(["hello, this page reloads while you answer"] * 10)
"""A text the demo model echoes (its answer to "hello", longer): ~2.5 s of slow deltas, so the
next page — a new Node process — resumes it well before its end (HELLO's 0.8 s is not always
enough for that)."""
ANSWER = HELLO.replace('"hello"', f'"{PROMPT}"', 1)


def two_workers(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, model: str
) -> Iterator[tuple[str, str]]:
    """Two workers of the slow payment app; ``model``: ``scripted``, or ``gemini`` (ADK's own
    Gemini class against the stand-in, at the same pace)."""
    root = tmp_path_factory.mktemp(f"resume-{model}")
    env = {
        "PAYMENT_DB_URL": f"sqlite+aiosqlite:///{root / 'sessions.db'}",
        "PAYMENT_LOCKS": f"redis:{redis_url}",
        "PAYMENT_STREAMS": f"redis:{redis_url}",
        "PAYMENT_SLOW": "1",
        "PAYMENT_LEDGER": str(root / "ledger.txt"),
    }
    args = ["--lifespan", "on"]
    with ExitStack() as stack:
        if model == "gemini":
            stack.enter_context(on_gemini(env, chunk_size=4, delay=0.02))
        a = stack.enter_context(uvicorn_server(APP, env=env, ready_path="/ready", args=args))
        b = stack.enter_context(uvicorn_server(APP, env=env, ready_path="/ready", args=args))
        yield a, b


@pytest.fixture(scope="module", params=["scripted", "gemini"])
def workers(
    request: pytest.FixtureRequest, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """Two workers on each model (the real AI SDK clients' cases, a Node process each, run
    on the scripted one)."""
    yield from two_workers(redis_url, tmp_path_factory, request.param)


def hello(chat_id: str) -> dict[str, Any]:
    text = {"type": "text", "text": "hello"}
    return {"id": chat_id, "messages": [{"id": "u1", "role": "user", "parts": [text]}]}


def test_an_answer_left_on_one_worker_is_resumed_whole_from_the_other(
    workers: tuple[str, str],
) -> None:
    a, b = workers
    whole = normalize_ids(parse_sse(httpx.post(f"{a}/agent/chat", json=hello("ref")).content))
    chat_id = f"left-{secrets.token_hex(4)}"
    with httpx.stream("POST", f"{a}/agent/chat", json=hello(chat_id)) as response:
        assert response.status_code == 200
        next(response.iter_raw())  # the start of the answer, then the reader leaves
    resumed = httpx.get(f"{b}/agent/chat/{chat_id}/stream", timeout=10)
    assert resumed.status_code == 200
    assert normalize_ids(parse_sse(resumed.content)) == whole
    assert httpx.get(f"{b}/agent/chat/{chat_id}/stream").status_code == 204  # it has ended
    history = httpx.get(f"{b}/agent/chat/{chat_id}/messages").json()
    assert [p["text"] for p in history[1]["parts"] if p["type"] == "text"] == [HELLO]


@pytest.mark.e2e
@pytest.mark.parametrize("workers", ["scripted"], indirect=True)
@pytest.mark.parametrize("sdk", [6, 7])
def test_the_ai_sdk_chat_reloaded_on_the_other_worker_resumes_the_answer(
    workers: tuple[str, str], sdk: int
) -> None:
    a, b = workers
    chat_id = f"reload-{sdk}-{secrets.token_hex(4)}"

    def spec(base: str, *steps: Any) -> dict[str, Any]:
        return {
            "transport": "sse",
            "api": f"{base}/agent/chat",
            "chatId": chat_id,
            "steps": list(steps),
        }

    left = drive_chat(spec(a, {"send": PROMPT, "background": True}, {"stop": True}), sdk)
    [stop] = left["stops"]
    assert stop["textBefore"] and stop["textBefore"] != ANSWER
    reload = {"reload": {"url": f"{b}/agent/chat/{chat_id}/messages", "resume": True}}
    again = drive_chat(spec(b, reload), sdk)
    assert (again["status"], again["error"]) == ("ready", None)
    assert [(r["status"], r["messageCount"]) for r in again["reloads"]] == [(200, 1)]
    assert [(r["method"], r["status"]) for r in again["responses"]] == [("GET", 200)]
    texts = [p["text"] for p in again["messages"][1]["parts"] if p["type"] == "text"]
    assert texts == [ANSWER]


# --- live: the socket closes mid-answer on worker A, a new connection resumes on worker B ----


def live_url(base: str) -> str:
    return f"{base.replace('http://', 'ws://', 1)}/agent/live"


async def test_a_live_answer_left_on_one_worker_is_resumed_whole_over_live_on_the_other(
    workers: tuple[str, str],
) -> None:
    """Worker A goes on with the answer whose socket closed and records it in Redis; a new
    connection to worker B, naming the chat only in its ``resume`` frame, gets it replayed from
    its first chunk and followed to its end — exactly the chunks of an uninterrupted run. B then
    holds the chat (A gave up the Redis lock when the answer ended): its session answers the
    next message, and history shows the first answer once."""
    a, b = workers
    reference, socket = await open_live(live_url(b))
    async with socket:
        expected = squash(await reference.turn("hello"))
    left, socket = await open_live(live_url(a))
    await leave_mid_answer(left, "hello")
    again, socket = await open_live(live_url(b), left.chat_id, cookie=cookie_of(socket))
    async with socket:
        await send_resume(socket, left.chat_id, "resume-1")
        resumed = unframe(await text_frames_until_end(socket, "resume-1"), "resume-1")
        again.user, again.assistant = left.user, read_ui_message(resumed)
        again.count = left.count  # the next message is the page's second one
        shown = [again.user, again.assistant]
        next_answer = await again.turn("hello")
        shown += [again.user, again.assistant]
    # (the same chunks and text; how the deltas were grouped depends on when they came)
    assert squash(resumed) == expected
    assert "".join(c["delta"] for c in next_answer if c["type"] == "text-delta") == HELLO
    async with httpx.AsyncClient(timeout=10) as client:
        history = (await client.get(f"{b}/agent/chat/{left.chat_id}/messages")).json()
    assert history == shown


@pytest.mark.e2e
@pytest.mark.parametrize("workers", ["scripted"], indirect=True)
@pytest.mark.parametrize(("transport", "sdk"), [("ws", 7), ("ws-js", 6)])
def test_the_ai_sdk_chat_reloaded_on_the_other_worker_resumes_the_live_answer(
    workers: tuple[str, str], transport: str, sdk: int
) -> None:
    """The real ``Chat`` (ai@7's stock ``WebSocketChatTransport``, the served ``transport.js``
    under ai@6): the page on worker A unloads mid-answer (its socket closes), the reloaded page
    on worker B — hydrated from history, ``resumeStream()`` on a new socket — gets the whole
    answer, then sends the next message on B."""
    a, b = workers
    chat_id = f"live-{transport}-{sdk}-{secrets.token_hex(4)}"

    def spec(base: str, *steps: Any) -> dict[str, Any]:
        return {
            "transport": transport,
            "wsUrl": live_url(base),
            "transportJsUrl": f"{base}/agent/transport.js",
            "chatId": chat_id,
            "steps": list(steps),
            "idleMs": 50,
        }

    left = drive_chat(spec(a, {"send": PROMPT, "background": True}, {"stop": "unload"}), sdk)
    [stop] = left["stops"]
    assert (stop["status"], stop["statusAfter"]) == ("streaming", "error")
    assert stop["textBefore"] and stop["textBefore"] != ANSWER
    reload = {"reload": {"url": f"{b}/agent/chat/{chat_id}/messages", "resume": True}}
    again = drive_chat(spec(b, reload, {"send": "hello"}), sdk)
    assert (again["status"], again["error"], again["timeout"]) == ("ready", None, False)
    # the reloaded page found the answer under way, and B replayed all of it
    assert [(r["status"], r["messageCount"]) for r in again["reloads"]] == [(200, 1)]
    [first, second] = responses(again)
    assert first[0] == {"type": "start", "messageId": "<msg1>"}
    assert first[-1] == {"type": "finish", "finishReason": "stop"}
    assert [c["delta"] for c in first if c["type"] == "text-delta"] == [ANSWER]
    assert [c["delta"] for c in second if c["type"] == "text-delta"] == [HELLO]
    step = {"type": "step-start"}
    assert comparable(again["messages"]) == comparable(
        [
            {"id": "user-1", "role": "user", "parts": [{"type": "text", "text": PROMPT}]},
            {
                "id": "answer-1",
                "role": "assistant",
                "parts": [step, {"type": "text", "text": ANSWER, "state": "done"}],
            },
            {"id": "user-2", "role": "user", "parts": [{"type": "text", "text": "hello"}]},
            {
                "id": "answer-2",
                "role": "assistant",
                "parts": [step, {"type": "text", "text": HELLO, "state": "done"}],
            },
        ]
    )
    history = httpx.get(f"{b}/agent/chat/{chat_id}/messages", timeout=10).json()
    assert history == again["messages"]
