"""The ``Origin`` check (adk_asgi/serving/origins.py): a page of another origin can neither open
``WS /live`` nor send ``POST``/``DELETE`` with the browser's cookies; same-origin pages, listed
origins and clients that are not browsers (no ``Origin``) go on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from adk_asgi import AdkApp, Security
from adk_asgi.serving.origins import OriginPolicy
from adk_asgi.testing import Text
from adk_asgi.testing.asgi_websocket import Denied, websocket
from tests.servers import uvicorn_server
from tests.support import scripted_agent, user_body

EVIL = "https://evil.example"


def refused(origin: str) -> dict[str, str]:
    return {
        "error": f"origin {origin!r} is not allowed: this app serves its own origin only"
        " (Security(allowed_origins=...) lists others)"
    }


def chat_app(**options: Any) -> AdkApp:
    return AdkApp(scripted_agent(responder=lambda contents: [Text("ok")]), **options)


def client(app: AdkApp, base_url: str = "http://testserver") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with uvicorn_server("tests.asgi.origins_app:app", ready_path="/transport.js") as url:
        yield url


def test_a_cross_origin_handshake_is_refused_with_403_and_a_json_reason_by_uvicorn(
    base: str,
) -> None:
    url = base.replace("http://", "ws://") + "/live"
    with pytest.raises(InvalidStatus) as refusal:
        connect(url, origin=Origin(EVIL), open_timeout=10)
    response = refusal.value.response
    assert (response.status_code, json.loads(response.body)) == (403, refused(EVIL))


def test_a_same_origin_handshake_and_one_without_origin_are_accepted_by_uvicorn(
    base: str,
) -> None:
    url = base.replace("http://", "ws://") + "/live"
    for origin in (Origin(base), None):
        with connect(url, origin=origin, open_timeout=10) as ws:
            ws.send(json.dumps({"type": "ping"}))
            assert json.loads(ws.recv(timeout=10)) == {"type": "pong"}


@pytest.mark.parametrize("origin", [EVIL, "http://testserver:8080", "https://testserver", "null"])
async def test_a_cross_origin_handshake_is_refused_with_403_and_a_json_reason_in_asgi(
    origin: str,
) -> None:
    """Another host, another port, another scheme, an opaque origin: each another origin."""
    with pytest.raises(Denied) as refusal:
        async with websocket(chat_app(), "/live", {"origin": origin}):
            pass
    assert (refusal.value.status, refusal.value.json()) == (403, refused(origin))


async def ping(app: AdkApp, headers: dict[str, str], host: str = "testserver") -> None:
    async with websocket(app, "/live", headers, host) as ws:
        await ws.send_json({"type": "ping"})
        assert await ws.receive_json() == {"type": "pong"}


async def test_a_same_origin_handshake_and_one_without_origin_are_accepted_in_asgi() -> None:
    app = chat_app()
    await ping(app, {"origin": "http://testserver"})
    await ping(app, {})


async def test_a_server_without_denial_responses_gets_close_1008_with_the_reason() -> None:
    """Without the ``websocket.http.response`` extension the handshake can only be closed: the
    live route's own refusals do the same."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "websocket",
        "path": "/live",
        "raw_path": b"/live",
        "root_path": "",
        "scheme": "ws",
        "query_string": b"",
        "headers": [(b"host", b"t"), (b"origin", EVIL.encode())],
        "subprotocols": [],
    }
    await chat_app()(scope, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1008, "reason": refused(EVIL)["error"]}]


async def test_a_post_or_delete_from_a_foreign_origin_is_refused_and_nothing_runs() -> None:
    app = chat_app(identify=lambda conn: "alice")
    foreign = {"origin": EVIL}
    async with client(app) as browser:
        post = await browser.post("/chat", json=user_body("hi", chat_id="c1"), headers=foreign)
        stop = await browser.delete("/chat/c1/stream", headers=foreign)
        delete = await browser.delete("/chat/c1", headers=foreign)
        history = await browser.get("/chat/c1/messages", headers=foreign)  # a read: not checked
    assert (post.status_code, post.json()) == (403, refused(EVIL))
    assert (stop.status_code, stop.json()) == (403, refused(EVIL))
    assert (delete.status_code, delete.json()) == (403, refused(EVIL))
    assert (history.status_code, history.json()) == (404, {"error": "this chat does not exist"})


async def test_a_post_from_the_own_origin_or_without_origin_runs() -> None:
    app = chat_app(identify=lambda conn: "alice")
    async with client(app, "https://app.example") as browser:
        own = {"origin": "https://app.example"}
        same = await browser.post("/chat", json=user_body("hi", chat_id="c1"), headers=own)
        bare = await browser.post("/chat", json=user_body("hi", chat_id="c2"))
    assert same.status_code == bare.status_code == 200


async def test_allowed_origins_are_honoured() -> None:
    app = chat_app(
        identify=lambda conn: "alice", security=Security(allowed_origins=["http://localhost:3000"])
    )
    async with client(app) as browser:
        listed = await browser.post(
            "/chat", json=user_body("hi"), headers={"origin": "http://localhost:3000"}
        )
        other = await browser.post(
            "/chat", json=user_body("hi"), headers={"origin": "http://localhost:5173"}
        )
    assert listed.status_code == 200
    assert (other.status_code, other.json()) == (403, refused("http://localhost:5173"))
    await ping(app, {"origin": "http://localhost:3000"})
    with pytest.raises(Denied) as refusal:
        await ping(app, {"origin": "http://localhost:5173"})
    assert (refusal.value.status, refusal.value.json()) == (403, refused("http://localhost:5173"))


async def test_any_origin_is_allowed_only_when_listed_as_a_star() -> None:
    await ping(
        chat_app(identify=lambda conn: "alice", security=Security(allowed_origins=["*"])),
        {"origin": EVIL},
    )


def test_any_origin_with_the_cookie_identity_is_refused_at_construction() -> None:
    """Every site's page could act as the visitor: the cookie goes with every request (the
    docs called it a mistake, and the app took it)."""
    with pytest.raises(ValueError, match=r"allowed_origins=\['\*'\] with the default identity"):
        chat_app(security=Security(allowed_origins=["https://app.example", "*"]))


@pytest.mark.parametrize(
    "origin", ["localhost:3000", "http://localhost:3000/app", "ftp://x", "http://"]
)
def test_an_allowed_origin_that_is_not_an_origin_fails_at_construction(origin: str) -> None:
    with pytest.raises(ValueError, match="is not an origin"):
        OriginPolicy.of([origin])
    with pytest.raises(TypeError, match="not one string"):
        OriginPolicy.of("http://localhost:3000")


BEHIND_A_PROXY = [
    {"x-forwarded-host": "app.example", "x-forwarded-proto": "https"},
    {"forwarded": 'for=1.2.3.4;host="app.example";proto=https, for=10.0.0.1;host=internal'},
]
"""What a proxy serving ``https://app.example`` from an app on ``internal:8000`` adds."""


@pytest.mark.parametrize("forwarded", BEHIND_A_PROXY, ids=["x-forwarded", "forwarded"])
async def test_forwarded_headers_name_the_own_origin_only_when_trusted(
    forwarded: dict[str, str],
) -> None:
    page = {"origin": "https://app.example", **forwarded}
    for trust, status in ((False, 403), (True, 200)):
        app = chat_app(identify=lambda conn: "alice", security=Security(trust_forwarded=trust))
        async with client(app, "http://internal:8000") as proxy:
            response = await proxy.post("/chat", json=user_body("hi"), headers=page)
        assert response.status_code == status
        if trust:
            await ping(app, page, host="internal:8000")
        else:
            with pytest.raises(Denied):
                await ping(app, page, host="internal:8000")
