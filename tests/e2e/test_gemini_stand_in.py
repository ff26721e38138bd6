"""The Gemini stand-in's connections behave as Google's front end's: google-genai keeps a pool
of them, and a server that closes one sooner than Google would breaks a request sent on it."""

from __future__ import annotations

import ssl
import time

import httpx

from adk_asgi.testing import GeminiStandIn, Text
from adk_asgi.testing.gemini_server import KEEP_ALIVE_S

UVICORNS_KEEP_ALIVE_S = 5


def test_an_idle_connection_outlives_uvicorns_five_seconds_as_on_googles_front_end() -> None:
    """uvicorn's default closed a connection idle for 5 s, and google-genai's client (httpx)
    keeps one in its pool for 5 s too: in a full run a chat's next request went out on one the
    stand-in was closing ("Server disconnected without sending a response", the chat's error).
    Google's front end keeps it 610 s, so the client's pool always lets go first. Here a pool
    that keeps it longer finds it still open."""
    assert KEEP_ALIVE_S > UVICORNS_KEEP_ALIVE_S
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with (
        GeminiStandIn(turns=[[Text("one")], [Text("two")]]) as gemini,
        httpx.Client(
            base_url=gemini.base_url,
            verify=ssl.create_default_context(cafile=gemini.ca_bundle),
            limits=httpx.Limits(keepalive_expiry=60),
        ) as http,
    ):
        headers = {"x-goog-api-key": gemini.environ["GOOGLE_API_KEY"]}
        answers, connections = [], set()
        for wait in (0, UVICORNS_KEEP_ALIVE_S + 1):  # the idle time is the subject: no event
            time.sleep(wait)
            answer = http.post(path, json=body, headers=headers)
            answers.append(answer.status_code)
            connections.add(answer.extensions["network_stream"].get_extra_info("client_addr"))
    assert answers == [200, 200]
    assert len(connections) == 1
