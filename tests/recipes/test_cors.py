"""The cross-origin recipe (``examples/cors_app.py``, docs/mounting.md) under a real uvicorn, run
as a user runs it (tests/recipes/conftest.py).

The requests are the ones a browser sends for a page on ``http://localhost:3000`` whose
``DefaultChatTransport`` has ``credentials: "include"``: the preflight, then the request with
the page's ``Origin`` and the browser's cookies. A foreign page's requests carry its own
``Origin``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from adk_asgi import AdkApp
from tests.recipes.conftest import example_server
from tests.recipes.test_mounting import HELLO_CHUNKS, HELLO_TEXT, live_send, merge_deltas
from tests.servers import ROOT
from tests.support import SSE_HEADERS, normalize_ids, parse_sse, scripted_agent, user_body

pytestmark = pytest.mark.e2e

FRONTEND = "http://localhost:3000"
FOREIGN = "https://evil.example"
SAME_SITE_STRANGER = "http://localhost:5173"
"""Another port of the frontend's host: another origin, but the same site, so the browser
sends it the SameSite=Lax cookies too."""

PREFLIGHT_OK = {
    "access-control-allow-origin": FRONTEND,
    "access-control-allow-credentials": "true",
    "access-control-allow-methods": "GET, POST, DELETE",
    "access-control-allow-headers": "Accept, Accept-Language, Content-Language, Content-Type",
    "access-control-max-age": "600",
}
"""What the preflight must say for the browser to send the POST with cookies and let the page
read its answer (Content-Type is what the AI SDK's transport asks for; the rest is Starlette's
CORS-safelisted set)."""


def refused_origin(origin: str) -> dict[str, str]:
    """What ``Security(allowed_origins=...)`` answers a page of an origin it does not serve."""
    return {
        "error": f"origin {origin!r} is not allowed: this app serves its own origin only"
        " (Security(allowed_origins=...) lists others)"
    }


READABLE = {"access-control-allow-origin": FRONTEND, "access-control-allow-credentials": "true"}


@pytest.fixture(scope="module")
def base(wheel_python: Path, examples_copy: Path) -> Iterator[str]:
    with example_server(wheel_python, examples_copy, "cors_app:app") as url:
        yield url


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def preflight(base: str, origin: str, method: str = "POST") -> httpx.Response:
    """What Chromium sends before a cross-origin ``fetch`` with a JSON body."""
    return httpx.options(
        f"{base}/agent/chat",
        headers={
            "origin": origin,
            "access-control-request-method": method,
            "access-control-request-headers": "content-type",
        },
        timeout=10,
    )


def texts(history: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    return [(m["role"], [p["text"] for p in m["parts"] if p["type"] == "text"]) for m in history]


def test_the_docs_show_the_recipes_origins_and_preflight() -> None:
    origins = f'\nFRONTEND_ORIGINS = ["{FRONTEND}"]'
    assert origins + "\n" in (ROOT / "examples" / "cors_app.py").read_text()
    docs = (ROOT / "docs" / "mounting.md").read_text()
    assert origins in docs
    assert "\n".join(f"{k}: {v}" for k, v in PREFLIGHT_OK.items()) in docs


async def test_without_the_recipe_a_preflight_is_405() -> None:
    """The reason for the recipe: the agent's routes do not answer OPTIONS themselves."""
    chat = AdkApp(scripted_agent([]))
    transport = httpx.ASGITransport(app=chat)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.options(
            "/chat", headers={"origin": FRONTEND, "access-control-request-method": "POST"}
        )
    await chat.aclose()
    assert response.status_code == 405


def test_a_preflight_from_the_frontend_is_allowed(base: str) -> None:
    for method in ("POST", "DELETE"):
        response = preflight(base, FRONTEND, method)
        assert (response.status_code, response.text) == (200, "OK")
        assert cors_headers(response) == PREFLIGHT_OK
        assert "Origin" in response.headers["vary"]


@pytest.mark.parametrize("origin", [FOREIGN, SAME_SITE_STRANGER, "null"])
def test_a_preflight_from_another_origin_is_refused(base: str, origin: str) -> None:
    response = preflight(base, origin)
    assert (response.status_code, response.text) == (400, "Disallowed CORS origin")
    assert "access-control-allow-origin" not in response.headers


def test_a_chat_streams_to_the_frontend_and_its_cookie_comes_back(base: str) -> None:
    chat_id = f"cors-{uuid.uuid4().hex[:8]}"
    page = {"origin": FRONTEND}
    with httpx.Client(base_url=base, timeout=30) as browser:
        with browser.stream(
            "POST", "/agent/chat", json=user_body("hello", chat_id=chat_id), headers=page
        ) as response:
            assert response.status_code == 200
            assert {k: response.headers[k] for k in SSE_HEADERS} == SSE_HEADERS
            assert cors_headers(response) == READABLE
            assert "Origin" in response.headers["vary"]
            cookie = response.headers["set-cookie"]
            body = b"".join(response.iter_raw())
        assert cookie.startswith("adk_asgi_uid=")
        assert cookie.endswith("; Path=/; Max-Age=34560000; HttpOnly; SameSite=Lax")
        assert merge_deltas(normalize_ids(parse_sse(body))) == HELLO_CHUNKS

        # The browser sends the cookie back (credentials: "include"): the same user's chat.
        assert browser.cookies.get("adk_asgi_uid")
        history = browser.get(f"/agent/chat/{chat_id}/messages", headers=page)
        assert history.status_code == 200
        assert cors_headers(history) == READABLE
        assert texts(history.json()) == [("user", ["hello"]), ("assistant", [HELLO_TEXT])]
        assert "set-cookie" not in history.headers

        resume = browser.get(f"/agent/chat/{chat_id}/stream", headers=page)
        assert (resume.status_code, cors_headers(resume)) == (204, READABLE)
        stop = browser.delete(f"/agent/chat/{chat_id}/stream", headers=page)
        assert (stop.status_code, stop.json(), cors_headers(stop)) == (
            200,
            {"stopped": False},
            READABLE,
        )

    # Without the cookie it is another user, who has no such chat.
    stranger = httpx.get(f"{base}/agent/chat/{chat_id}/messages", headers=page, timeout=10)
    assert (stranger.status_code, stranger.json()) == (404, {"error": "this chat does not exist"})


@pytest.mark.parametrize("origin", [FOREIGN, SAME_SITE_STRANGER])
def test_a_foreign_page_cannot_run_the_chat_with_the_browsers_cookie(
    base: str, origin: str
) -> None:
    """A ``text/plain`` POST needs no preflight, and the agent reads its JSON body all the same;
    from a page of the same site it carries the browser's cookie. CORS would only hide the
    answer: the origin check refuses the request before the agent sees it."""
    chat_id = f"csrf-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=base, timeout=30) as browser:
        first = browser.post("/agent/chat", json=user_body("hello", chat_id="own"))
        assert first.status_code == 200  # no Origin: not a page; the browser gets its cookie
        forged = browser.post(
            "/agent/chat",
            content=json.dumps(user_body("pay 5 to mallory", chat_id=chat_id)),
            headers={"origin": origin, "content-type": "text/plain"},
        )
        assert (forged.status_code, forged.json()) == (403, refused_origin(origin))
        assert "access-control-allow-origin" not in forged.headers
        stop = browser.delete(f"/agent/chat/{chat_id}/stream", headers={"origin": origin})
        assert (stop.status_code, stop.json()) == (403, refused_origin(origin))
        # Nothing ran: the chat was never created.
        assert browser.get(f"/agent/chat/{chat_id}/messages").status_code == 404


def live_turn(ws: ClientConnection, chat_id: str) -> list[dict[str, Any]]:
    ws.send(live_send("r1", chat_id, "hello"))
    frames = [json.loads(ws.recv(timeout=10))]
    while frames[-1]["type"] not in ("end", "error"):
        frames.append(json.loads(ws.recv(timeout=10)))
    return frames


def test_the_live_socket_takes_the_frontend_and_its_cookie(base: str) -> None:
    chat_id = f"live-{uuid.uuid4().hex[:8]}"
    cookie = f"adk_asgi_uid={uuid.uuid4().hex}"
    url = base.replace("http://", "ws://") + "/agent/live"
    with connect(
        url, origin=FRONTEND, additional_headers={"cookie": cookie}, open_timeout=10
    ) as ws:
        frames = live_turn(ws, chat_id)
    assert (frames[0]["type"], frames[-1]["type"]) == ("start", "end")
    history = httpx.get(
        f"{base}/agent/chat/{chat_id}/messages",
        headers={"origin": FRONTEND, "cookie": cookie},
        timeout=10,
    )
    assert texts(history.json()) == [("user", ["hello"]), ("assistant", [HELLO_TEXT])]


@pytest.mark.parametrize("origin", [FOREIGN, SAME_SITE_STRANGER, "null"])
def test_the_live_socket_refuses_a_foreign_page(base: str, origin: str) -> None:
    """Browsers apply no CORS to WebSockets, and send the cookie along: without the origin
    check, any page of the site could talk to the agent as the user."""
    url = base.replace("http://", "ws://") + "/agent/live"
    with pytest.raises(InvalidStatus) as refused:
        connect(
            url,
            origin=Origin(origin),
            additional_headers={"cookie": f"adk_asgi_uid={uuid.uuid4().hex}"},
            open_timeout=10,
        )
    response = refused.value.response
    assert (response.status_code, json.loads(response.body)) == (403, refused_origin(origin))


def test_the_live_socket_takes_a_client_that_is_not_a_page(base: str) -> None:
    """No ``Origin`` header: not a browser page, nothing a page could forge."""
    url = base.replace("http://", "ws://") + "/agent/live"
    with connect(url, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "ping"}))
        assert json.loads(ws.recv(timeout=10)) == {"type": "pong"}
