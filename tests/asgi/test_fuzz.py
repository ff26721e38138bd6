"""Random bodies against the decoder and the endpoint: a clear answer, never a 500."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adk_asgi import AdkApp, RequestError, decode_chat_request
from adk_asgi.serving.file_urls import FileUrlRule
from adk_asgi.serving.origins import OriginPolicy
from adk_asgi.testing import Text
from adk_asgi.wire.decoding import json_depth
from tests.support import scripted_agent, user_body

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
FILE_URLS = [
    "data:text/plain;base64,aGk=",
    "https://x",
    "data:,x",
    "ftp://x",
    "gs://bucket/app/user/chat/f/0",
    "file:///etc/passwd",
    "/chat/chat-1/files/a.png",
    "/chat/chat-1/files/../x",
    "http://[",
    "",
]
"""Allowed (data:, the chat's own upload) and refused (422) file URLs, and malformed ones."""
ORIGINS = [None, "http://testserver", "https://evil.example", "null", "", "http://[", "garbage"]
"""No Origin, the own origin (allowed), foreign and malformed ones (403)."""

part_types = st.sampled_from(
    [
        "text",
        "file",
        "reasoning",
        "step-start",
        "tool-x",
        "dynamic-tool",
        "data-y",
        "source-url",
        "bogus",
        "",
    ]
)
parts = st.fixed_dictionaries(
    {"type": part_types},
    optional={
        "text": st.text(max_size=10) | json_values,
        "url": st.sampled_from(FILE_URLS) | json_values,
        "mediaType": st.sampled_from(["text/plain", "image/png"]) | json_values,
        "toolCallId": st.text(max_size=5) | json_values,
        "state": st.sampled_from(["input-available", "output-available", "nope"]) | json_values,
        "toolName": st.text(max_size=5),
        "data": json_values,
    },
)
messages = st.fixed_dictionaries(
    {
        "id": st.text(max_size=5) | json_values,
        "role": st.sampled_from(["user", "assistant", "system", "robot"]),
        "parts": st.lists(parts, max_size=3) | json_values,
    }
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["chat-1", "", "x" * 200, "a/b"]) | json_values,
        "messages": st.lists(messages, max_size=3) | json_values,
        "trigger": st.sampled_from(["submit-message", "regenerate-message", "x"]) | json_values,
        "messageId": st.text(max_size=5) | json_values,
        "extra": json_values,
    },
)
raw_bodies = st.binary(max_size=200) | bodies.map(lambda b: json.dumps(b).encode())


def _hostile(value: bytes, where: int, body: bytes) -> bytes:
    """``value`` put into ``body`` as an extra key, a message's metadata or a data part."""
    if where == 0:
        return body.replace(b'{"id"', b'{"x": ' + value + b', "id"', 1)
    if where == 1:
        return body.replace(b'"role"', b'"metadata": ' + value + b', "role"', 1)
    return body.replace(b'"parts": [', b'"parts": [{"type": "data-x", "data": ' + value + b"}, ", 1)


hostile_values = (
    # nesting around the limit and far past it
    st.integers(1, 3_000).map(lambda n: b"[" * n + b"1" + b"]" * n)
    | st.integers(1, 300).map(lambda n: b'{"a": ' * n + b"1" + b"}" * n)
    # numbers a float or a 64-bit integer cannot hold
    | st.integers(300, 100_000).map(lambda e: f"1e{e}".encode())
    | st.integers(19, 5_000).map(lambda n: b"-" + b"9" * n)
    # not UTF-8 inside a string (a lone byte, a surrogate's encoding, an overlong form)
    | st.sampled_from([b"\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80"]).map(
        lambda bad: b'"a' + bad.decode("unicode_escape").encode("latin-1") + b'b"'
    )
    | st.just(b'"nul\\u0000"')
)
hostile_bodies = st.builds(
    _hostile,
    hostile_values,
    st.integers(0, 2),
    st.just(json.dumps(user_body("hi")).encode()),
)


@settings(max_examples=300, deadline=None)
@given(raw_bodies)
def test_decoder_returns_a_request_or_names_the_problem(body: bytes) -> None:
    try:
        decode_chat_request(body)
    except RequestError as exc:
        assert str(exc)


APP = AdkApp(scripted_agent(responder=lambda contents: [Text("ok")]), identify=lambda c: "u")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_bodies, st.sampled_from(ORIGINS))
@example(json.dumps(user_body("hi")).encode(), None)
async def test_endpoint_never_fails_with_a_500(body: bytes, origin: str | None) -> None:
    transport = httpx.ASGITransport(app=APP)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        headers = {"content-type": "application/json"}
        if origin is not None:
            headers["origin"] = origin
        response = await client.post("/chat", content=body, headers=headers)
    if response.status_code == 200:
        assert response.text.endswith("data: [DONE]\n\n")
        return
    assert 400 <= response.status_code < 500, response.text
    payload: dict[str, Any] = response.json()
    assert isinstance(payload["error"], str) and payload["error"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.sampled_from(ORIGINS[1:]), st.text(max_size=20))
def test_the_origin_check_answers_any_origin_and_host_with_none_or_a_403(
    origin: str, host: str
) -> None:
    scope = {
        "type": "websocket",
        "scheme": "ws",
        "headers": [
            (b"origin", origin.encode("latin-1", "replace")),
            (b"host", host.encode("latin-1", "replace")),
        ],
    }
    for trusted in (False, True):
        refusal = OriginPolicy(trust_forwarded=trusted).refusal(scope)
        assert refusal is None or (refusal.status, bool(refusal.reason)) == (403, True)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.sampled_from(FILE_URLS))
def test_the_file_url_rule_allows_or_refuses_any_url(url: str) -> None:
    own = "/chat/chat-1/files/"
    allowed = FileUrlRule(user_id="u", root="", allow=None).allows(url, "chat-1")
    if url.startswith("data:"):
        assert allowed
    elif not url.startswith(own):
        assert not allowed  # gs:, https:, file:, another chat's uploads, anything else
    else:
        name = url[len(own) :]
        assert allowed == (name not in ("", ".", "..") and not any(c in name for c in "/?#"))


@settings(max_examples=300, deadline=None)
@given(hostile_bodies)
def test_the_decoder_refuses_what_the_bridge_cannot_take_by_name(body: bytes) -> None:
    """Invalid UTF-8, numbers out of range and deep nesting, in every ``Any`` field msgspec
    decodes recursively: a request or a :class:`RequestError`, never another exception."""
    try:
        decode_chat_request(body)
    except RequestError as exc:
        assert str(exc)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_bodies)
async def test_hostile_json_never_gets_a_500(body: bytes) -> None:
    transport = httpx.ASGITransport(app=APP)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.post("/chat", content=body, headers=JSON)
    if response.status_code == 200:
        assert response.text.endswith("data: [DONE]\n\n")
        return
    assert 400 <= response.status_code < 500, response.text
    assert isinstance(response.json()["error"], str)


JSON = {"content-type": "application/json"}


tricky_text = st.text(alphabet='[]{}"\\ab\n', max_size=12)
tricky_values = st.recursive(
    st.none() | st.integers() | tricky_text,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(tricky_text, children, max_size=3)
    ),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=500, deadline=None)
@given(tricky_values, st.booleans())
def test_the_depth_scan_counts_brackets_outside_strings_only(value: Any, ascii: bool) -> None:
    """Strings full of brackets, quotes and backslashes (escaped every way JSON escapes them)
    do not fool the byte scanner that refuses deep nesting before msgspec decodes."""
    assert json_depth(json.dumps(value, ensure_ascii=ascii).encode()) == _depth(value)
