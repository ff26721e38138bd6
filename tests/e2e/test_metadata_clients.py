"""Message metadata with the real ai@6 and ai@7 clients against a real uvicorn, over SSE and
live: what a page reads from ``message.metadata`` (the hook's ``createdAt``, ``model``,
``totalTokens`` and ``finishReason``; the user's own metadata on its message) is what the
client built from the stream and what history returns after a reload (docs/metadata.md)."""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.node_client import drive_chat
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

CLIENTS = [("sse", 6), ("sse", 7), ("ws", 7), ("ws-js", 6)]
SENT = {"sentAt": "2026-11-27T09:00:00Z", "draft": {"edited": False}}


@pytest.fixture(scope="module")
def metadata_server() -> Iterator[str]:
    with uvicorn_server("tests.e2e.metadata_app:app", ready_path="/agent/chats") as base:
        yield base


@pytest.mark.parametrize("client", CLIENTS, ids=[f"{t}-v{s}" for t, s in CLIENTS])
def test_the_page_reads_the_hooks_metadata_and_a_reload_shows_it(
    metadata_server: str, client: tuple[str, int]
) -> None:
    transport, sdk = client
    cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    chat_id = f"chat-{secrets.token_hex(4)}"
    before = round(time.time() * 1000)
    report = drive_chat(
        {
            "transport": transport,
            "api": f"{metadata_server}/agent/chat",
            "wsUrl": f"{metadata_server.replace('http', 'ws', 1)}/agent/live",
            "transportJsUrl": f"{metadata_server}/agent/transport.js",
            "chatId": chat_id,
            "headers": {"cookie": cookie},
            "steps": [{"send": {"text": "hello", "metadata": SENT}}, {"send": "weather in Paris"}],
        },
        sdk,
    )
    assert (report["status"], report["error"], report["loop"]) == ("ready", None, False), report
    after = round(time.time() * 1000)
    messages = report["messages"]
    shown = copy.deepcopy([m.get("metadata") for m in messages])
    assert [(m["role"], m.get("metadata")) for m in messages[::2]] == [
        ("user", SENT),
        ("user", None),
    ]
    answers = [m["metadata"] for m in messages[1::2]]
    for answer in answers:
        assert before <= answer.pop("createdAt") <= after
    # the scripted model counts a token per 4 characters of the prompt and of its answer
    assert [a.pop("totalTokens") > 0 for a in answers] == [True, True]
    assert answers == [{"model": "scripted", "finishReason": "stop"}] * 2
    reloaded = httpx.get(
        f"{metadata_server}/agent/chat/{chat_id}/messages", headers={"cookie": cookie}
    )
    assert reloaded.status_code == 200, reloaded.text
    assert [m.get("metadata") for m in reloaded.json()] == shown
