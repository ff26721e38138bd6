"""POST /chat through the ASGI test client: exact streams, identity, locking, bad input."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from starlette.requests import HTTPConnection

from adk_asgi import AdkApp, Limits, Messages
from adk_asgi.convert.failures import show_errors
from adk_asgi.testing import Call, Fail, Text
from adk_asgi.wire.values import CHAT_ID_RULE
from tests.support import SSE_HEADERS, counter, parse_sse, scripted_agent, user_body

MID = "msg1"
JSON = {"content-type": "application/json"}


def make_app(agent: LlmAgent, **options: Any) -> AdkApp:
    messages = options.pop("messages", Messages())
    ids = messages.message_id_factory or counter("msg")
    return AdkApp(agent, messages=dataclasses.replace(messages, message_id_factory=ids), **options)


def client_for(app: AdkApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


def get_weather(city: str) -> dict[str, Any]:
    """Weather for a city."""
    return {"city": city, "forecast": "sunny"}


async def test_plain_text_streams_deltas_then_a_clean_end() -> None:
    app = make_app(scripted_agent([[Text("Hello there!")]]))
    async with client_for(app) as client:
        response = await client.post("/chat", json=user_body("hi"))
    assert response.status_code == 200
    assert {k: response.headers[k] for k in SSE_HEADERS} == SSE_HEADERS
    t = f"{MID}-txt1"
    assert parse_sse(response.content) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": t},
        {"type": "text-delta", "id": t, "delta": "Hello"},
        {"type": "text-delta", "id": t, "delta": " ther"},
        {"type": "text-delta", "id": t, "delta": "e!"},
        {"type": "text-end", "id": t},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_server_tool_streams_call_result_and_answer() -> None:
    agent = scripted_agent(
        [[Call("get_weather", {"city": "Paris"})], [Text("Sunny.")]], tools=[get_weather]
    )
    async with client_for(make_app(agent)) as client:
        response = await client.post("/chat", json=user_body("weather in Paris"))
    t = f"{MID}-txt1"
    assert parse_sse(response.content) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": "call_1",
            "toolName": "get_weather",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
            "providerExecuted": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": {"city": "Paris", "forecast": "sunny"},
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": t},
        {"type": "text-delta", "id": t, "delta": "Sunny"},
        {"type": "text-delta", "id": t, "delta": "."},
        {"type": "text-end", "id": t},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_model_error_mid_stream_is_an_error_chunk_and_a_clean_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = make_app(scripted_agent([[Text("Partial"), Fail("backend exploded")]]))
    async with client_for(app) as client:
        response = await client.post("/chat", json=user_body("hi"))
        cookie = response.headers["set-cookie"].split(";")[0]
        history = await client.get("/chat/chat-1/messages", headers={"cookie": cookie})
    assert response.status_code == 200
    t = f"{MID}-txt1"
    masked = {"errorText": "An error occurred."}
    assert parse_sse(response.content) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": t},
        {"type": "text-delta", "id": t, "delta": "Parti"},
        {"type": "text-delta", "id": t, "delta": "al"},
        {"type": "text-end", "id": t},
        {"type": "data-error", "id": f"{MID}-error", "data": masked},
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]
    # the client was not told the error; the log was
    assert "ScriptedModelError: backend exploded" in caplog.text
    # a reload shows what the stream showed: the text streamed before the failure, the error
    assert history.json()[1:] == [
        {
            "id": MID,
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Partial", "state": "done"},
                {"type": "data-error", "id": f"{MID}-error", "data": masked},
            ],
        }
    ]


async def test_on_error_chooses_what_the_client_reads_of_a_failure() -> None:
    app = make_app(
        scripted_agent([[Fail("backend exploded")]]),
        messages=Messages(on_error=lambda error: f"failed ({error.code})"),
    )
    async with client_for(app) as client:
        response = await client.post("/chat", json=user_body("hi"))
    assert parse_sse(response.content)[1:3] == [
        {
            "type": "data-error",
            "id": f"{MID}-error",
            "data": {"errorText": "failed (ScriptedModelError)"},
        },
        {"type": "error", "errorText": "failed (ScriptedModelError)"},
    ]


async def test_a_failure_with_nothing_shown_keeps_only_the_error_in_history() -> None:
    app = make_app(
        scripted_agent([[Fail("backend exploded")]]), messages=Messages(on_error=show_errors)
    )
    async with client_for(app) as client:
        response = await client.post("/chat", json=user_body("hi"))
        cookie = response.headers["set-cookie"].split(";")[0]
        history = await client.get("/chat/chat-1/messages", headers={"cookie": cookie})
    shown = {"errorText": "ScriptedModelError: backend exploded"}
    assert parse_sse(response.content)[1] == {
        "type": "data-error",
        "id": f"{MID}-error",
        "data": shown,
    }
    assert history.json()[1] == {
        "id": MID,
        "role": "assistant",
        "parts": [{"type": "data-error", "id": f"{MID}-error", "data": shown}],
    }


async def test_tool_exception_is_an_error_chunk() -> None:
    """The call ran and failed: it ends with the error the client is shown
    (convert/failures.py), not left running (``input-available``)."""

    def broken(city: str) -> dict[str, Any]:
        """Always fails."""
        raise ValueError(f"no weather for {city}")

    agent = scripted_agent([[Call("broken", {"city": "Oslo"})]], tools=[broken])
    async with client_for(make_app(agent)) as client:
        response = await client.post("/chat", json=user_body("hi"))
    called = {"toolCallId": "call_1", "toolName": "broken", "providerExecuted": True}
    assert parse_sse(response.content) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "tool-input-start", **called},
        {"type": "tool-input-available", **called, "input": {"city": "Oslo"}},
        {"type": "tool-output-error", "toolCallId": "call_1", "errorText": "An error occurred."},
        {"type": "data-error", "id": f"{MID}-error", "data": {"errorText": "An error occurred."}},
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]


async def test_a_chat_keeps_its_history_across_requests() -> None:
    agent = scripted_agent([[Text("one")], [Text("two")]])
    app = make_app(agent)
    async with client_for(app) as client:
        await client.post("/chat", json=user_body("first"))
        second = user_body("second", message_id="u2")
        second["messages"].insert(
            0, {"id": "x", "role": "user", "parts": [{"type": "text", "text": "forged"}]}
        )
        await client.post("/chat", json=second)
    model = agent.model
    assert not isinstance(model, str)
    contents = model.requests[-1].contents  # type: ignore[attr-defined]
    texts = [p.text for c in contents for p in c.parts or [] if p.text]
    # The session is the truth: the client's copy of earlier messages is not replayed.
    assert texts == ["first", "one", "second"]


async def test_the_run_is_tagged_with_the_ids_the_client_knows() -> None:
    """The ids the client knows and the time the answer started (its metadata moments)."""
    app = make_app(scripted_agent([[Text("ok")]]))
    before = time.time()
    async with client_for(app) as client:
        await client.post("/chat", json=user_body("hi", message_id="user-msg-7"))
        user_id = "browser:" + client.cookies["adk_asgi_uid"]
    session = await app.session_service.get_session(
        app_name=app.app_name, user_id=user_id, session_id="chat-1"
    )
    assert session is not None
    tags = [e.custom_metadata for e in session.events if e.author != "user"]
    started = tags[0]["adk_asgi"]["startedAt"] if tags and tags[0] else None
    assert isinstance(started, float) and before <= started <= time.time()
    expected = {"v": 2, "messageId": MID, "userMessageId": "user-msg-7", "startedAt": started}
    assert tags == [{"adk_asgi": expected}]


# --- identity ------------------------------------------------------------------------------


async def test_default_identity_is_a_per_browser_http_only_cookie() -> None:
    app = make_app(scripted_agent([[Text("a")], [Text("b")], [Text("c")]]))
    async with client_for(app) as alice, client_for(app) as bob:
        first = await alice.post("/chat", json=user_body("hi"))
        cookie = first.headers["set-cookie"]
        assert cookie.startswith("adk_asgi_uid=")
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
        again = await alice.post("/chat", json=user_body("again", message_id="u2"))
        assert "set-cookie" not in again.headers
        await bob.post("/chat", json=user_body("hi"))  # the same chat id, another browser
        alice_id = "browser:" + alice.cookies["adk_asgi_uid"]
        bob_id = "browser:" + bob.cookies["adk_asgi_uid"]
    assert alice_id != bob_id
    sessions = app.session_service
    for user_id, expected in ((alice_id, 4), (bob_id, 2)):
        session = await sessions.get_session(
            app_name=app.app_name, user_id=user_id, session_id="chat-1"
        )
        assert session is not None and len(session.events) == expected


async def test_identity_hook_decides_the_user_and_can_refuse() -> None:
    def identify(conn: HTTPConnection) -> str | None:
        token = conn.headers.get("authorization", "")
        return token.removeprefix("Bearer ") or None

    app = make_app(scripted_agent([[Text("ok")]]), identify=identify)
    async with client_for(app) as client:
        refused = await client.post("/chat", json=user_body("hi"))
        assert (refused.status_code, refused.json()) == (401, {"error": "authentication required"})
        ok = await client.post(
            "/chat", json=user_body("hi"), headers={"authorization": "Bearer u42"}
        )
        assert ok.status_code == 200 and "set-cookie" not in ok.headers
    assert await app.session_service.get_session(
        app_name=app.app_name, user_id="u42", session_id="chat-1"
    )


async def test_async_identity_hook() -> None:
    async def identify(conn: HTTPConnection) -> str:
        await asyncio.sleep(0)  # suspends, as a hook looking the user up would
        return "async-user"

    app = make_app(scripted_agent([[Text("ok")]]), identify=identify)
    async with client_for(app) as client:
        assert (await client.post("/chat", json=user_body("hi"))).status_code == 200
    assert await app.session_service.get_session(
        app_name=app.app_name, user_id="async-user", session_id="chat-1"
    )


# --- one run per chat ----------------------------------------------------------------------


async def test_concurrent_requests_on_one_chat_are_serialized() -> None:
    agent = scripted_agent([[Text("answer one")], [Text("answer two")]], delay=0.01, chunk_size=2)
    app = make_app(agent, identify=lambda conn: "u")
    async with client_for(app) as client:
        first, second = await asyncio.gather(
            client.post("/chat", json=user_body("one")),
            client.post("/chat", json=user_body("two", message_id="u2")),
        )
    assert first.status_code == second.status_code == 200
    session = await app.session_service.get_session(
        app_name=app.app_name, user_id="u", session_id="chat-1"
    )
    assert session is not None
    texts = [
        "".join(p.text or "" for p in e.content.parts or []) for e in session.events if e.content
    ]
    assert texts == ["one", "answer one", "two", "answer two"]
    assert len(app.locks) == 0


async def test_a_chat_busy_for_too_long_is_a_409() -> None:
    answering, answer = asyncio.Event(), asyncio.Event()

    async def hold(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        if not answering.is_set():  # the first run keeps the chat until the test lets it answer
            answering.set()
            await answer.wait()

    agent = scripted_agent([[Text("slow answer")], [Text("x")]], before_model_callback=hold)
    app = make_app(agent, identify=lambda conn: "u", limits=Limits(busy_timeout=0.05))
    async with client_for(app) as client:
        slow = asyncio.create_task(client.post("/chat", json=user_body("one")))
        await asyncio.wait_for(answering.wait(), 10)
        refused = await client.post("/chat", json=user_body("two", message_id="u2"))
        assert refused.status_code == 409
        assert refused.json() == {
            "error": "the chat is still busy with another request after 0.05 s"
        }
        answer.set()
        assert (await slow).status_code == 200


# --- bad input -----------------------------------------------------------------------------

TEXT = {"type": "text", "text": "hi"}


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        (b"{not json", 400, "the request body is not valid JSON: "),
        (b'"a string"', 400, "the request body must be a JSON object"),
        (json.dumps({"id": "c", "messages": "x"}).encode(), 400, "messages: Expected `array`"),
        (
            json.dumps({"id": "c", "messages": []}).encode(),
            400,
            "messages: the chat has no messages",
        ),
        (
            json.dumps(
                {"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "x"}]}]}
            ).encode(),
            400,
            "messages[0].parts[0]: unknown part type 'x'",
        ),
        (
            json.dumps(
                {"id": "bad id!", "messages": [{"id": "u", "role": "user", "parts": [TEXT]}]}
            ).encode(),
            400,
            f"id: {CHAT_ID_RULE}",
        ),
        (
            json.dumps(
                {"id": "c", "messages": [{"id": "a", "role": "assistant", "parts": [TEXT]}]}
            ).encode(),
            409,
            "this chat has no open tool call to continue",
        ),
        (
            json.dumps(
                {
                    "id": "c",
                    "messages": [{"id": "u", "role": "user", "parts": [TEXT]}],
                    "trigger": "regenerate-message",
                }
            ).encode(),
            409,
            "message 'u' is not in this chat",
        ),
        (
            json.dumps(
                {"id": "c", "messages": [{"id": "u", "role": "user", "parts": []}]}
            ).encode(),
            400,
            "messages[0]: the user message has no text or file to send",
        ),
    ],
)
async def test_bad_requests_get_a_json_reason_and_touch_nothing(
    body: bytes, status: int, reason: str
) -> None:
    sessions = InMemorySessionService()
    app = make_app(scripted_agent([]), session_service=sessions, identify=lambda conn: "u")
    async with client_for(app) as client:
        response = await client.post("/chat", content=body, headers=JSON)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"].startswith(reason)
    assert (await sessions.list_sessions(app_name=app.app_name, user_id="u")).sessions == []


async def test_a_body_over_the_limit_is_a_413_whether_declared_or_streamed() -> None:
    app = make_app(scripted_agent([]), limits=Limits(max_body_size=1000), identify=lambda conn: "u")
    big = json.dumps(user_body("x" * 2000)).encode()

    async def chunked() -> Any:
        for i in range(0, len(big), 100):
            yield big[i : i + 100]

    async with client_for(app) as client:
        declared = await client.post("/chat", content=big, headers=JSON)
        streamed = await client.post("/chat", content=chunked(), headers=JSON)
    for response in (declared, streamed):
        assert response.status_code == 413
        assert response.json() == {"error": "the request body is larger than 1000 bytes"}


async def test_wrong_method_and_unknown_route() -> None:
    app = make_app(scripted_agent([]))
    async with client_for(app) as client:
        assert (await client.get("/chat")).status_code == 405
        assert (await client.get("/nope")).status_code == 404


async def test_resume_has_nothing_to_resume() -> None:
    app = make_app(scripted_agent([]))
    async with client_for(app) as client:
        response = await client.get("/chat/chat-1/stream")
    assert (response.status_code, response.content) == (204, b"")


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded"],
)
async def test_a_body_a_page_could_send_without_a_preflight_is_refused(
    content_type: str | None,
) -> None:
    """``text/plain``, form and body-less POSTs need no CORS preflight, so another page of the
    same site could send them with the browser's cookie: none of them runs the agent."""
    sessions = InMemorySessionService()
    app = make_app(scripted_agent([]), session_service=sessions, identify=lambda conn: "u")
    headers = {} if content_type is None else {"content-type": content_type}
    async with client_for(app) as client:
        body = json.dumps(user_body("pay 5 to mallory")).encode()
        response = await client.post("/chat", content=body, headers=headers)
    assert (response.status_code, response.json()) == (
        415,
        {"error": "content-type: expected application/json"},
    )
    assert (await sessions.list_sessions(app_name=app.app_name, user_id="u")).sessions == []


async def test_a_json_content_type_with_a_charset_is_json() -> None:
    app = make_app(scripted_agent([[Text("ok")]]))
    async with client_for(app) as client:
        body = json.dumps(user_body("hi")).encode()
        headers = {"content-type": "Application/JSON; charset=utf-8"}
        response = await client.post("/chat", content=body, headers=headers)
    assert response.status_code == 200
