"""An app's hook that raises at the door (issue 36, 4): ``identify`` and ``allowed_file_url``.
The documented GCS recipe raised ``ValueError`` on ``gs://[``: over SSE that was a 500 page with
a traceback, and in a live ``send`` it ended the connection's task group instead of answering
the frame. Now ``on_error`` hears the failure once and words it, the request gets that text
(a ``500`` JSON reason, a live ``error`` frame), and the connection and the chat go on."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.requests import HTTPConnection

from adk_asgi import AdkApp, Messages, Security
from adk_asgi.convert.failures import MASKED, AgentError
from adk_asgi.convert.metadata import MessageMoment
from adk_asgi.serving.identity import USER_ID_RULE
from adk_asgi.testing import ChatClient, Text
from adk_asgi.testing.live_transport import LiveTransport
from tests.support import normalize_ids, parse_sse, scripted_agent, user_body

DOCS = Path(__file__).resolve().parents[2] / "docs"
PICTURE = {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw0K"}


def recipe(name: str) -> Any:
    """The function ``name`` of the python block of docs/sse.md that defines it."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "sse.md").read_text(), re.S)
    [block] = [b for b in blocks if f"def {name}(" in b]
    source = block.split("\n\nchat = AdkApp(")[0]  # (the function, not the app it builds)
    scope: dict[str, Any] = {}
    exec(source, scope)
    return scope[name]


class Heard:
    """An ``on_error`` that records what it was given."""

    def __init__(self) -> None:
        self.errors: list[AgentError] = []

    def __call__(self, error: AgentError) -> str:
        self.errors.append(error)
        return f"could not check that: {type(error.exception).__name__}"


def naive_allow(url: str, user_id: str) -> bool:
    """The recipe as the docs gave it: ``urlsplit`` raises on ``gs://[``."""
    return urlsplit(url).scheme == "gs" and urlsplit(url).netloc == "uploads"


def with_url(url: str, chat_id: str = "pics") -> dict[str, Any]:
    parts = [{"type": "text", "text": "what is this?"}, {**PICTURE, "url": url}]
    return {"id": chat_id, "messages": [{"id": "u1", "role": "user", "parts": parts}]}


def app(heard: Heard, messages: Messages | None = None, **options: Any) -> AdkApp:
    """An app whose ``on_error`` is ``heard``, with ``messages``' other hooks."""
    agent = scripted_agent(responder=lambda contents: [Text("ok")])
    hooks = dataclasses.replace(messages or Messages(), on_error=heard)
    return AdkApp(agent, messages=hooks, **options)


def client(chat: AdkApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=chat), base_url="http://t")


@pytest.mark.asyncio
async def test_an_allowed_file_url_hook_that_raises_is_a_500_in_on_errors_words() -> None:
    heard = Heard()
    async with client(app(heard, security=Security(allowed_file_url=naive_allow))) as browser:
        failed = await browser.post("/chat", json=with_url("gs://["))
        after = await browser.post("/chat", json=with_url(PICTURE["url"]))
    assert (failed.status_code, failed.json()) == (
        500,
        {"error": "could not check that: ValueError"},
    )
    assert after.status_code == 200  # the chat goes on
    [error] = heard.errors
    assert isinstance(error.exception, ValueError)


@pytest.mark.asyncio
async def test_an_identify_hook_that_raises_is_a_500_in_on_errors_words() -> None:
    heard = Heard()

    def identify(conn: HTTPConnection) -> str:
        raise RuntimeError("the token service is down")

    async with client(app(heard, identify=identify)) as browser:
        sent = await browser.post("/chat", json=user_body("hi"))
        listed = await browser.get("/chats")
    expected = {"error": "could not check that: RuntimeError"}
    assert [(r.status_code, r.json()) for r in (sent, listed)] == [(500, expected)] * 2
    assert [type(e.exception) for e in heard.errors] == [RuntimeError, RuntimeError]


@pytest.mark.asyncio
@pytest.mark.parametrize("user_id", ["../alice", "C:alice", "..", " ", "a\x00", "x" * 129])
async def test_a_user_id_the_artifact_services_refuse_is_the_identify_hooks_failure(
    user_id: str,
) -> None:
    """``identify`` returning a user id ADK's artifact services refuse as a path segment (or
    the SQL services' 128-character keys): such a user's chats could be made but their files
    never read and the chats never deleted. Refused at the door as the hook's bug, a 500."""
    heard = Heard()
    async with client(app(heard, identify=lambda conn: user_id)) as browser:
        sent = await browser.post("/chat", json=user_body("hi"))
    assert (sent.status_code, sent.json()) == (500, {"error": "could not check that: ValueError"})
    [error] = heard.errors
    assert str(error.exception) == f"identify() returned {user_id!r}: {USER_ID_RULE}"


@pytest.mark.asyncio
async def test_a_live_send_whose_file_url_hook_raises_gets_an_error_frame_and_goes_on() -> None:
    heard = Heard()
    chat = app(heard, security=Security(allowed_file_url=naive_allow))
    async with ChatClient(chat, transport="live") as browser:
        refused = await browser.send("what is this?", files=[{**PICTURE, "url": "gs://["}])
        assert isinstance(browser.transport, LiveTransport)
        connection = browser.transport.socket
        del browser.messages[-1]  # (the user takes the picture back)
        answered = await browser.send("hi")
        assert browser.transport.socket is connection  # the same connection went on
    assert (refused.status, refused.chunks, refused.error, refused.closed) == (
        0,
        [],
        "could not check that: ValueError",
        None,
    )
    assert answered.chunks[-1] == {"type": "finish", "finishReason": "stop"}
    assert [type(e.exception) for e in heard.errors] == [ValueError]


@pytest.mark.parametrize("url", ["gs://[", "http://[::1", "gs://uploads/other/app/x/y"])
def test_the_documented_gcs_rule_refuses_what_is_no_url_of_its_bucket(url: str) -> None:
    own_upload = recipe("own_upload")
    assert own_upload(url, "alice") is False
    assert own_upload("gs://uploads/assistant/alice/chat-1/f.png/0", "alice") is True


def broken_state(extras: dict[str, Any], user_id: str) -> dict[str, Any]:
    raise KeyError("mode")


@pytest.mark.asyncio
async def test_a_request_state_hook_that_raises_is_a_500_in_on_errors_words() -> None:
    """Over SSE it escaped the endpoint: the server's 500 page, with a traceback."""
    heard = Heard()
    async with client(app(heard, request_state=broken_state)) as browser:
        sent = await browser.post("/chat", json=user_body("hi"))
    assert (sent.status_code, sent.json()) == (500, {"error": "could not check that: KeyError"})
    assert [type(e.exception) for e in heard.errors] == [KeyError]


@pytest.mark.asyncio
async def test_a_live_send_whose_request_state_hook_raises_gets_on_errors_words() -> None:
    heard = Heard()
    async with ChatClient(app(heard, request_state=broken_state), transport="live") as browser:
        refused = await browser.send("hi")
    assert (refused.status, refused.chunks, refused.error, refused.closed) == (
        0,
        [],
        "could not check that: KeyError",
        None,
    )
    assert [type(e.exception) for e in heard.errors] == [KeyError]


def broken_metadata(moment: MessageMoment) -> dict[str, Any]:
    raise ZeroDivisionError("the app's own bug")


OK_ANSWER = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    {"type": "text-start", "id": "<block1>"},
    {"type": "text-delta", "id": "<block1>", "delta": "ok"},
    {"type": "text-end", "id": "<block1>"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


@pytest.mark.asyncio
async def test_a_message_metadata_hook_that_raises_leaves_the_answer_whole_without_it() -> None:
    """It is called as the answer starts and ends, inside the stream: raising there broke the
    stream. The answer goes on without that metadata; on_error hears the failure once."""
    heard = Heard()
    async with client(app(heard, messages=Messages(message_metadata=broken_metadata))) as browser:
        sent = await browser.post("/chat", json=user_body("hi"))
        assert sent.status_code == 200
        assert normalize_ids(parse_sse(sent.content)) == OK_ANSWER
        assert [type(e.exception) for e in heard.errors] == [ZeroDivisionError]
        history = (await browser.get("/chat/chat-1/messages")).json()
    assert [(m["role"], "metadata" in m) for m in history] == [
        ("user", False),
        ("assistant", False),
    ]


@pytest.mark.asyncio
async def test_a_live_answer_whose_message_metadata_hook_raises_streams_whole() -> None:
    heard = Heard()
    chat = app(heard, messages=Messages(message_metadata=broken_metadata))
    async with ChatClient(chat, transport="live") as browser:
        answered = await browser.send("hi")
        again = await browser.send("hi again")
    assert [normalize_ids(answered.chunks), normalize_ids(again.chunks)] == [OK_ANSWER, OK_ANSWER]
    assert (answered.closed, again.closed) == (None, None)
    assert [type(e.exception) for e in heard.errors] == [ZeroDivisionError] * 2  # (a message each)


def raising_on_error(error: AgentError) -> str:
    raise LookupError("on_error's own bug")


FAILED_ANSWER = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "data-error", "data": {"errorText": MASKED}, "id": "<block1>"},
    {"type": "error", "errorText": MASKED},
    {"type": "finish", "finishReason": "error"},
]


@pytest.mark.asyncio
async def test_an_on_error_that_raises_leaves_the_masked_words_and_a_clean_end() -> None:
    """It runs while another failure is worded, inside the stream: raising there broke it."""

    def failing(contents: list[Any]) -> list[Text]:
        raise RuntimeError("the model is down")

    agent = scripted_agent(responder=failing)
    async with client(AdkApp(agent, messages=Messages(on_error=raising_on_error))) as browser:
        sent = await browser.post("/chat", json=user_body("hi"))
    assert sent.status_code == 200
    assert normalize_ids(parse_sse(sent.content)) == FAILED_ANSWER
