"""A failure is one ERROR line an operator can read and search, naming the chat and the request
(the answer's message over SSE, the ``send`` frame's ``requestId`` live), with the exception;
its traceback at DEBUG only."""

from __future__ import annotations

import logging

import httpx
import pytest

from adk_asgi import AdkApp, Messages
from adk_asgi.errors import about, log_failure
from adk_asgi.testing import ChatClient, Fail, Text
from tests.support import counter, parse_sse, scripted_agent, user_body


async def test_a_failed_answer_is_one_error_line_naming_the_chat_and_the_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = scripted_agent([[Text("Partial"), Fail("backend exploded")]])
    app = AdkApp(agent, messages=Messages(message_id_factory=counter("msg")))
    transport = httpx.ASGITransport(app=app)
    with caplog.at_level(logging.DEBUG, logger="adk_asgi"):
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.post("/chat", json=user_body("hi", chat_id="trip"))
    assert parse_sse(response.text) == [
        {"type": "start", "messageId": "msg1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "msg1-txt1"},
        {"type": "text-delta", "id": "msg1-txt1", "delta": "Parti"},
        {"type": "text-delta", "id": "msg1-txt1", "delta": "al"},
        {"type": "text-end", "id": "msg1-txt1"},
        {"type": "data-error", "data": {"errorText": "An error occurred."}, "id": "msg1-error"},
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]
    assert ours(caplog, logging.WARNING) == [
        "adk_asgi: the agent failed: ScriptedModelError: backend exploded "
        "(chat 'trip', request 'msg1')"
    ]


def test_an_exceptions_traceback_is_logged_at_debug_only(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="adk_asgi"), about("trip", "msg1"):
        try:
            raise ValueError("no tables")
        except ValueError as exc:
            log_failure("the run failed", exc)
    records = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert records == [
        (
            "ERROR",
            "adk_asgi: the run failed (chat 'trip', request 'msg1'): ValueError: no tables",
            False,
        ),
        ("DEBUG", "adk_asgi: the run failed (chat 'trip', request 'msg1'): the traceback", True),
    ]


def ours(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    """What the package logged at ``level`` or above (ADK logs its own errors besides)."""
    return [r.getMessage() for r in caplog.records if r.name == "adk_asgi" and r.levelno >= level]


async def test_a_failed_live_session_names_the_chat_and_the_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = scripted_agent([[Fail("backend exploded")]])
    async with ChatClient(AdkApp(agent), transport="live") as live:
        with caplog.at_level(logging.ERROR, logger="adk_asgi"):
            reply = await live.send("hi")
    request_id = reply.body["requestId"]
    assert reply.chunks[-2:] == [
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish", "finishReason": "error"},
    ]
    assert ours(caplog, logging.ERROR) == [
        f"adk_asgi: the live session failed (chat {live.id!r}, request {request_id!r}): "
        "ScriptedModelError: backend exploded"
    ]


def test_a_failure_outside_a_chat_names_none(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="adk_asgi"):
        log_failure("preparing failed", ValueError("no tables"))
        with about("c1", "r1"):
            log_failure("given ids win", chat_id="c2")
    assert [r.getMessage() for r in caplog.records] == [
        "adk_asgi: preparing failed: ValueError: no tables",
        "adk_asgi: given ids win (chat 'c2', request 'r1')",
    ]
