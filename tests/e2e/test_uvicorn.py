"""The demo app under a real uvicorn, read by a real HTTP client over loopback."""

from __future__ import annotations

import httpx
import pytest

from tests.servers import uvicorn_server
from tests.streams import WEATHER_SAID, weather_answer
from tests.support import SSE_HEADERS, normalize_ids, parse_sse, user_body

pytestmark = pytest.mark.e2e


def test_weather_over_real_http(demo_server: str) -> None:
    with (
        httpx.Client(base_url=demo_server, timeout=30) as client,
        client.stream(
            "POST", "/agent/chat", json=user_body("What's the weather in Paris?")
        ) as response,
    ):
        assert response.status_code == 200
        assert {k: response.headers[k] for k in SSE_HEADERS} == SSE_HEADERS
        assert "adk_asgi_uid=" in response.headers["set-cookie"]
        body = b"".join(response.iter_raw())
    chunks = normalize_ids(parse_sse(body))
    text_deltas = [c["delta"] for c in chunks if c["type"] == "text-delta"]
    assert "".join(text_deltas) == WEATHER_SAID  # however the stream cut it
    assert [c for c in chunks if c["type"] != "text-delta"] == weather_answer(deltas=())


def test_cookie_identity_keeps_a_browser_on_its_chat(demo_server: str) -> None:
    with httpx.Client(base_url=demo_server, timeout=30) as client:
        first = client.post("/agent/chat", json=user_body("hello", chat_id="cookie-chat"))
        second = client.post("/agent/chat", json=user_body("hello again", chat_id="cookie-chat"))
    assert first.status_code == second.status_code == 200
    assert "set-cookie" in first.headers and "set-cookie" not in second.headers


def test_the_offline_demo_runs_adks_gemini_class_on_the_stand_in() -> None:
    """``make demo`` without a key (``uvicorn demo_app:app``): ADK's ``Gemini`` and
    google-genai answer through the stand-in the demo starts, a trip handed to the planner on a
    model of its own included; the call ids are the ones ADK mints for Gemini's id-less calls."""
    with (
        uvicorn_server("demo_app:app") as base,
        httpx.Client(base_url=base, timeout=30) as client,
    ):
        weather = parse_sse(client.post("/agent/chat", json=user_body("weather in Paris")).content)
        trip = client.post("/agent/chat", json=user_body("plan a trip to Rome", chat_id="trip"))
    [call_id] = {c["toolCallId"] for c in weather if "toolCallId" in c}
    assert call_id.startswith("adk-")  # (ScriptedLlm's calls have ids of their own)
    assert weather[-1] == {"type": "finish", "finishReason": "stop"}
    texts = "".join(c["delta"] for c in parse_sse(trip.content) if c["type"] == "text-delta")
    assert "Rome" in texts.split("Our trip planner can help with that.", 1)[1]
