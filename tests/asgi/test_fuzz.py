"""Random bodies against the decoder and the endpoint: a clear answer, never a 500."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adk_asgi import AdkApp, RequestError, decode_chat_request
from adk_asgi.testing import Text
from tests.support import scripted_agent, user_body

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
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
        "url": st.sampled_from(["data:text/plain;base64,aGk=", "https://x", "data:,x", "ftp://x"])
        | json_values,
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


@settings(max_examples=300, deadline=None)
@given(raw_bodies)
def test_decoder_returns_a_request_or_names_the_problem(body: bytes) -> None:
    try:
        decode_chat_request(body)
    except RequestError as exc:
        assert str(exc)


APP = AdkApp(scripted_agent(responder=lambda contents: [Text("ok")]), identify=lambda c: "u")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_bodies)
@example(json.dumps(user_body("hi")).encode())
async def test_endpoint_never_fails_with_a_500(body: bytes) -> None:
    transport = httpx.ASGITransport(app=APP)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        headers = {"content-type": "application/json"}
        response = await client.post("/chat", content=body, headers=headers)
    if response.status_code == 200:
        assert response.text.endswith("data: [DONE]\n\n")
        return
    assert 400 <= response.status_code < 500, response.text
    payload: dict[str, Any] = response.json()
    assert isinstance(payload["error"], str) and payload["error"]
