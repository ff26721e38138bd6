"""``POST /chat`` against a real uvicorn: JSON the bridge cannot take gets a 400 with its reason
(never a 500, never stored), a body that stops mid-way gets 408, a big body does not hold the
event loop, and ids are matched whole."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.sessions import DatabaseSessionService

from adk_asgi import AdkApp, Limits
from adk_asgi.serving import checks
from adk_asgi.serving.checks import MAX_METADATA, MAX_PARTS
from adk_asgi.sse import chat
from adk_asgi.testing import Text, demo_model, read_ui_message
from adk_asgi.wire.decoding import MAX_DEPTH
from adk_asgi.wire.values import CHAT_ID_RULE
from demo_app import change_bgm
from tests.backing_services import Postgres
from tests.servers import in_loop_uvicorn
from tests.support import counter, parse_sse, scripted_agent

pytestmark = [pytest.mark.e2e]

DEEP = f"the request body is refused: the JSON is nested deeper than {MAX_DEPTH} levels"
NOT_UTF8 = "the request body is refused: the JSON is not valid UTF-8"


def echo_app(**options: Any) -> AdkApp:
    agent = scripted_agent(responder=lambda contents: [Text("ok")])
    return AdkApp(agent, identify=lambda c: "u", **options)


def body(**change: Any) -> bytes:
    """A one-message body, compact, so that byte replacements below find their places."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    return json.dumps({"id": "c1", "messages": [message], **change}, separators=(",", ":")).encode()


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


HI = b'{"type":"text","text":"hi"}'
CASES = {
    "invalid UTF-8 in a string": (body().replace(b'"hi"', b'"h\xffi"'), NOT_UTF8),
    "invalid UTF-8 in a key": (body().replace(b'"text":"hi"', b'"text":"hi","\xff":1'), NOT_UTF8),
    "1e400 in an extra key": (
        body().replace(b'"id":"c1"', b'"id":"c1","x":1e400'),
        "x: a number is out of range: Number out of range",
    ),
    "1e400 in a data part": (
        body().replace(HI, HI + b',{"type":"data-x","data":[1e400]}'),
        "messages[0].parts[1]: a number is out of range: Number out of range - at `$.data[0]`",
    ),
    "1e400 in metadata": (
        body().replace(b'"role"', b'"metadata":{"n":1e400},"role"'),
        "messages: a number is out of range: Number out of range - at `$[0].metadata[...]`",
    ),
    **{
        f"nesting {depth} deep in {where}": (body().replace(old, new(nested(depth))), DEEP)
        for depth in (1_000, 100_000)
        for where, old, new in [
            ("an extra key", b'"id":"c1"', lambda v: b'"id":"c1","x":' + v),
            ("metadata", b'"role"', lambda v: b'"metadata":' + v + b',"role"'),
            ("a data part", HI, lambda v: HI + b',{"type":"data-x","data":' + v + b"}"),
        ]
    },
    "nesting one past the limit": (
        body().replace(b'"id":"c1"', b'"id":"c1","x":' + nested(MAX_DEPTH)),
        DEEP,
    ),
    "a NUL in a string": (
        body().replace(b'"hi"', b'"h\\u0000i"'),
        "the request body is refused: a string holds NUL (\\u0000), which cannot be stored",
    ),
}


async def test_json_the_bridge_cannot_take_gets_a_400_with_its_reason_never_a_500() -> None:
    async with in_loop_uvicorn(echo_app()) as url, httpx.AsyncClient(base_url=url) as client:
        for case, (content, reason) in CASES.items():
            response = await client.post(
                "/chat", content=content, headers={"content-type": "application/json"}
            )
            assert (case, response.status_code, response.json()) == (case, 400, {"error": reason})
        # the deepest nesting the limit allows (the body object counted) is taken
        fits = body().replace(b'"id":"c1"', b'"id":"c1","x":' + nested(MAX_DEPTH - 1))
        response = await client.post(
            "/chat", content=fits, headers={"content-type": "application/json"}
        )
        assert response.status_code == 200, response.text


async def test_a_browser_tool_output_nested_past_the_limit_is_refused_and_never_stored() -> None:
    """It used to be stored, and every later read of the chat failed (history 500, the next
    message 503)."""
    agent = LlmAgent(
        name="demo_agent", model=demo_model(id_factory=counter("call_")), tools=[change_bgm]
    )
    app = AdkApp(agent, identify=lambda c: "u")
    async with in_loop_uvicorn(app) as url, httpx.AsyncClient(base_url=url) as client:
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "play track 3"}]}
        first = await client.post("/chat", json={"id": "c1", "messages": [user]})
        assistant = read_ui_message(parse_sse(first.content))
        part = assistant["parts"][-1]
        deep: Any = 3
        for _ in range(500):
            deep = [deep]
        part.update(state="output-available", output={"playing": deep})
        content = json.dumps({"id": "c1", "messages": [user, assistant]})
        refused = await client.post(
            "/chat", content=content, headers={"content-type": "application/json"}
        )
        assert (refused.status_code, refused.json()) == (400, {"error": DEEP})
        history = await client.get("/chat/c1/messages")
        assert history.status_code == 200
        assert history.json()[-1]["parts"][-1]["state"] == "input-available"
        part.update(output={"playing": 3})
        answered = await client.post("/chat", json={"id": "c1", "messages": [user, assistant]})
        assert answered.status_code == 200
        assert parse_sse(answered.content)[-1] == {"type": "finish", "finishReason": "stop"}
        assert (await client.get("/chat/c1/messages")).status_code == 200


async def test_ids_are_matched_whole_and_bounded() -> None:
    """``$`` matches before a final newline: ``"abc\\n"`` passed as a chat id."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    cases = [
        ({"id": "abc\n", "messages": [user]}, f"id: {CHAT_ID_RULE}"),
        (
            {"id": "c1", "messages": [{**user, "id": "u1\n"}]},
            "messages[0].id: an id is 1-256 characters, none of them a control character",
        ),
        (
            {"id": "c1", "messages": [{**user, "id": "u" * 257}]},
            "messages[0].id: an id is 1-256 characters, none of them a control character",
        ),
        (
            {"id": "c1", "messages": [user], "messageId": "m\n"},
            "messageId: an id is 1-256 characters, none of them a control character",
        ),
    ]
    async with in_loop_uvicorn(echo_app()) as url, httpx.AsyncClient(base_url=url) as client:
        for request, reason in cases:
            response = await client.post("/chat", json=request)
            assert (response.status_code, response.json()) == (400, {"error": reason})
        for path in ("/chat/abc%0A/messages", "/chat/abc%0A/stream"):
            assert (await client.get(path)).status_code == 400


async def test_a_message_of_more_parts_than_the_limit_is_refused_with_413() -> None:
    parts = [{"type": "text", "text": "hi"}] * (MAX_PARTS + 1)
    request = {"id": "c1", "messages": [{"id": "u1", "role": "user", "parts": parts}]}
    async with in_loop_uvicorn(echo_app()) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post("/chat", json=request)
    reason = f"messages[0].parts: a message holds at most {MAX_PARTS}"
    assert (response.status_code, response.json()) == (413, {"error": reason})


async def test_a_user_messages_metadata_over_the_limit_is_refused_with_413_and_not_stored() -> None:
    """The metadata is stored with the message (history returns it): its size is bounded."""
    app = echo_app()
    metadata = {"note": "x" * MAX_METADATA}
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    async with in_loop_uvicorn(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post(
            "/chat", json={"id": "c1", "messages": [{**message, "metadata": metadata}]}
        )
        history = await client.get("/chat/c1/messages")
    reason = f"messages[0].metadata: at most {MAX_METADATA} bytes of JSON"
    assert (response.status_code, response.json()) == (413, {"error": reason})
    assert history.status_code == 404


async def test_an_assistant_messages_metadata_is_not_held_to_the_user_limit() -> None:
    """A continuation sends back the assistant message with the metadata the app's hook gave
    it, which may be large: it is the server's own (ignored), not the user's to store. The
    4 KiB check of a user message's metadata refused such continuations with 413; they reach
    the continuation's own checks (here: nothing is open, 409)."""
    app = echo_app()
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    async with in_loop_uvicorn(app) as url, httpx.AsyncClient(base_url=url) as client:
        first = await client.post("/chat", json={"id": "c1", "messages": [user]})
        answer = read_ui_message(parse_sse(first.content))
        answer["metadata"] = {"note": "x" * MAX_METADATA}
        again = await client.post("/chat", json={"id": "c1", "messages": [user, answer]})
    assert first.status_code == 200
    assert (again.status_code, again.json()) == (
        409,
        {"error": "this request answers no open tool call of the chat"},
    )


async def test_a_body_that_stops_mid_way_gets_408_and_its_connection_is_closed() -> None:
    async with in_loop_uvicorn(echo_app(limits=Limits(body_timeout=0.3))) as url:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /chat HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
            b"content-length: 1000\r\n\r\n" + body()[:20]
        )
        await writer.drain()
        try:
            async with asyncio.timeout(5):
                answer = await reader.read()  # to the end: the server closes the connection
        finally:
            writer.close()
            await writer.wait_closed()
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 408 Request Timeout"
    assert json.loads(payload) == {"error": "the request body paused for over 0.3 s"}


def probe_body(parts: int) -> bytes:
    """The probe's body: ``parts`` text parts (3.9 MB for 125,000), in messages of at most
    :data:`MAX_PARTS`, the last one a user message."""
    messages = []
    for i in range(0, parts, MAX_PARTS):
        role = "user" if i + MAX_PARTS >= parts else "assistant"
        text = [{"type": "text", "text": f"{j:05}"} for j in range(i, min(i + MAX_PARTS, parts))]
        messages.append({"id": f"m{i}", "role": role, "parts": text})
    return json.dumps({"id": "c1", "messages": messages}, separators=(",", ":")).encode()


async def test_a_big_body_is_decoded_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism that keeps one big body from stalling every other client: it is decoded
    in a worker thread, and its last message is bounded in parts (the probe's 125,000 parts in
    one message held the event loop 2.7 s). The largest gap a ticker in the server's loop
    sees is printed; docs/internals/performance-notes.md has the figures."""
    threads: list[str] = []

    def decode_and_check(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return checks.decode_and_check(*args)

    monkeypatch.setattr(chat, "decode_and_check", decode_and_check)
    content = probe_body(125_000)
    assert len(content) > 3_800_000
    async with (
        in_loop_uvicorn(echo_app()) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        gaps: list[float] = []
        loop = asyncio.get_running_loop()

        async def ticker() -> None:
            last = loop.time()
            while True:
                await asyncio.sleep(0.005)
                now = loop.time()
                gaps.append(now - last)
                last = now

        ticking = asyncio.create_task(ticker())
        response = await client.post("/chat", content=content, headers=JSON)
        small = await client.post("/chat", content=body(), headers=JSON)
        ticking.cancel()
    assert response.status_code == 200, response.text
    assert small.status_code == 200, small.text
    assert threads[0] != threading.main_thread().name
    assert threads[1] == threading.main_thread().name  # a small body is not worth a thread
    print(f"largest gap the ticker saw: {max(gaps) * 1000:.0f} ms")


JSON = {"content-type": "application/json"}


async def test_a_nul_postgresql_cannot_store_is_refused_before_anything_is_stored(
    postgres: Postgres,
) -> None:
    """It used to reach the database: asyncpg's "unsupported Unicode escape sequence", an
    error chunk in a 200, and the user's message lost."""
    sessions = DatabaseSessionService(postgres.url)
    agent = scripted_agent(responder=lambda contents: [Text("ok")])
    app = AdkApp(agent, identify=lambda c: "u", session_service=sessions)
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "a\u0000b"}]}
    try:
        async with in_loop_uvicorn(app) as url, httpx.AsyncClient(base_url=url) as client:
            response = await client.post("/chat", json={"id": "c-nul", "messages": [user]})
            history = await client.get("/chat/c-nul/messages")
    finally:
        await sessions.close()
    reason = "the request body is refused: a string holds NUL (\\u0000), which cannot be stored"
    assert (response.status_code, response.json()) == (400, {"error": reason})
    assert (history.status_code, history.json()) == (404, {"error": "this chat does not exist"})
