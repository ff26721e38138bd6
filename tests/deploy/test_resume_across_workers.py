"""A resume served by the other worker: two uvicorn processes on one database, with Redis locks
and the Redis stream store. The answer is asked of worker A, its reader leaves, and worker B
replays it whole — to a plain HTTP client and to the real ai@6/ai@7 ``Chat`` reloaded
mid-answer."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tests.e2e.node_client import drive_chat
from tests.live.test_live_connection import HELLO
from tests.servers import uvicorn_server
from tests.support import normalize_ids, parse_sse

pytestmark = pytest.mark.backing

APP = "tests.deploy.payment_app:app"


@pytest.fixture(scope="module")
def workers(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("resume")
    env = {
        "PAYMENT_DB_URL": f"sqlite+aiosqlite:///{root / 'sessions.db'}",
        "PAYMENT_LOCKS": f"redis:{redis_url}",
        "PAYMENT_STREAMS": f"redis:{redis_url}",
        "PAYMENT_SLOW": "1",
        "PAYMENT_LEDGER": str(root / "ledger.txt"),
    }
    args = ["--lifespan", "on"]
    with ExitStack() as stack:
        a = stack.enter_context(uvicorn_server(APP, env=env, ready_path="/ready", args=args))
        b = stack.enter_context(uvicorn_server(APP, env=env, ready_path="/ready", args=args))
        yield a, b


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

    left = drive_chat(spec(a, {"send": "hello", "background": True}, {"stop": True}), sdk)
    [stop] = left["stops"]
    assert stop["textBefore"] and stop["textBefore"] != HELLO
    reload = {"reload": {"url": f"{b}/agent/chat/{chat_id}/messages", "resume": True}}
    again = drive_chat(spec(b, reload), sdk)
    assert (again["status"], again["error"]) == ("ready", None)
    assert [(r["status"], r["messageCount"]) for r in again["reloads"]] == [(200, 1)]
    assert [(r["method"], r["status"]) for r in again["responses"]] == [("GET", 200)]
    texts = [p["text"] for p in again["messages"][1]["parts"] if p["type"] == "text"]
    assert texts == [HELLO]
