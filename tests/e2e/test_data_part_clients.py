"""Data parts with the real ai@5, ai@6 and ai@7 clients against a real uvicorn, over SSE and live:
the message the client built holds the tool's ``data-weather`` card, updated in place by its
id; ``onData`` got every part, the transient notice included, which is in no message; and a
reload shows the same message (docs/data-parts.md)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.node_client import drive_chat
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

CLIENTS = [("sse", 6), ("sse", 7), ("sse", 5), ("ws", 7), ("ws-js", 6), ("ws-js", 5)]
LOADING = {"city": "Paris", "status": "loading"}
SUNNY = {"city": "Paris", "status": "sunny", "temperature": 21}


@pytest.fixture(scope="module")
def data_server() -> Iterator[str]:
    with uvicorn_server("tests.e2e.data_parts_app:app", ready_path="/agent/chats") as base:
        yield base


@pytest.mark.parametrize("client", CLIENTS, ids=[f"{t}-v{s}" for t, s in CLIENTS])
def test_the_page_shows_the_card_and_on_data_gets_the_notice(
    data_server: str, client: tuple[str, int]
) -> None:
    transport, sdk = client
    base = f"{data_server}/{'v5' if sdk == 5 else 'agent'}"
    cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    chat_id = f"chat-{secrets.token_hex(4)}"
    report = drive_chat(
        {
            "transport": transport,
            "api": f"{base}/chat",
            "wsUrl": f"{base.replace('http', 'ws', 1)}/live",
            "transportJsUrl": f"{base}/transport.js",
            "chatId": chat_id,
            "headers": {"cookie": cookie},
            "steps": [{"send": "weather in Paris"}],
        },
        sdk,
    )
    assert (report["status"], report["error"], report["loop"]) == ("ready", None, False), report
    assert report["dataParts"] == [
        {"type": "data-weather", "id": "w1", "data": LOADING},
        {"type": "data-notice", "data": {"text": "Looking up Paris"}, "transient": True},
        {"type": "data-weather", "id": "w1", "data": SUNNY},
    ]
    answer = report["messages"][1]
    assert [p["type"] for p in answer["parts"]] == [
        "step-start",
        "tool-get_weather",
        "data-weather",
        "step-start",
        "text",
    ]
    assert answer["parts"][2] == {"type": "data-weather", "id": "w1", "data": SUNNY}
    reloaded = httpx.get(f"{base}/chat/{chat_id}/messages", headers={"cookie": cookie})
    assert reloaded.status_code == 200, reloaded.text
    assert reloaded.json() == report["messages"]
