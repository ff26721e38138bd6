"""The mounting recipes (docs/mounting.md): ``AdkApp`` inside Starlette, FastAPI and Django.

The ``e2e`` tests run each file of ``examples/`` as a user does, from a copy of the directory by
a venv with the built wheel installed (tests/recipes/conftest.py), under a real uvicorn, and talk
to it over loopback; its agent is Gemini, answered by the offline stand-in (it echoes, and runs
a tool on ``call <tool> {args}``). The others drive ``AdkMiddleware`` in process (routing,
scopes, lifespan).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from google.adk.apps.app import App
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions.database_session_service import DatabaseSessionService
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import Message, Receive, Scope, Send
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from adk_asgi import AdkApp, AdkMiddleware, Limits
from tests.recipes.conftest import RECIPES, user_env
from tests.streams import weather_answer
from tests.support import SSE_HEADERS, normalize_ids, parse_sse, scripted_agent, user_body

# --- the recipes under real uvicorn -------------------------------------------------------------

WEATHER_ASK = 'call get_weather {"city": "Paris"}'
"""What makes the offline stand-in call the examples' tool."""
WEATHER_RESULT = {"city": "Paris", "forecast": "sunny", "temperature_c": 21}
WEATHER_TEXT = 'get_weather returned {"city": "Paris", "forecast": "sunny", "temperature_c": 21}.'
WEATHER_CHUNKS = weather_answer(output=WEATHER_RESULT, deltas=[WEATHER_TEXT])

HOME_PAGES = {
    "starlette": ("text/plain", "Hello from Starlette. The agent is at /agent/chat."),
    "fastapi": ("application/json", '{"host":"fastapi","agent":"/agent/chat"}'),
    "django": ("text/plain", "Hello from Django. The agent is at /agent/chat."),
}


def merge_deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join consecutive text deltas of one block (how the text is cut is the model's affair)."""
    merged: list[dict[str, Any]] = []
    for chunk in chunks:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and chunk["type"] == previous["type"] == "text-delta"
            and chunk["id"] == previous["id"]
        ):
            merged[-1] = {**previous, "delta": previous["delta"] + chunk["delta"]}
        else:
            merged.append(chunk)
    return merged


def host_404(name: str, response: httpx.Response) -> bool:
    """Whether a 404 is the host's own page, not the AdkApp's plain ``Not Found``."""
    if name == "starlette":
        return response.json() == {"host": "starlette", "error": "no such page"}
    if name == "fastapi":
        return response.json() == {"detail": "Not Found"}
    return response.headers["content-type"].startswith("text/html") and (
        "<h1>Not Found</h1>" in response.text
    )


@pytest.mark.e2e
def test_a_chat_streams_through_the_host(host: tuple[str, str]) -> None:
    _, base = host
    chat_id = f"weather-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=base, timeout=30) as client:
        with client.stream(
            "POST", "/agent/chat", json=user_body(WEATHER_ASK, chat_id=chat_id)
        ) as response:
            assert response.status_code == 200
            assert {k: response.headers[k] for k in SSE_HEADERS} == SSE_HEADERS
            assert "adk_asgi_uid=" in response.headers["set-cookie"]
            body = b"".join(response.iter_raw())
        assert merge_deltas(normalize_ids(parse_sse(body))) == WEATHER_CHUNKS

        # The GET routes go through the host too, with the browser's cookie.
        history = client.get(f"/agent/chat/{chat_id}/messages")
    assert history.status_code == 200
    assert [
        (m["role"], [p["text"] for p in m["parts"] if p["type"] == "text"]) for m in history.json()
    ] == [("user", [WEATHER_ASK]), ("assistant", [WEATHER_TEXT])]


@pytest.mark.e2e
def test_the_hosts_own_route_still_works(host: tuple[str, str]) -> None:
    name, base = host
    response = httpx.get(base + "/", timeout=10)
    media_type, text = HOME_PAGES[name]
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media_type)
    assert response.text == text


@pytest.mark.e2e
@pytest.mark.parametrize("path", ["/nope", "/agentx", "/agentx/chat"])
def test_a_404_outside_the_prefix_is_the_hosts(host: tuple[str, str], path: str) -> None:
    name, base = host
    response = httpx.post(base + path, json={}, timeout=10)
    assert response.status_code in (404, 405)
    response = httpx.get(base + path, timeout=10)
    assert response.status_code == 404
    assert host_404(name, response), response.text


HELLO_TEXT = 'You said: "hello".'
HELLO_CHUNKS = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    {"type": "text-start", "id": "<block1>"},
    {"type": "text-delta", "id": "<block1>", "delta": HELLO_TEXT},
    {"type": "text-end", "id": "<block1>"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


def live_send(request_id: str, chat_id: str, text: str) -> str:
    """A ``WebSocketChatTransport`` send frame: one new user message."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return json.dumps(
        {
            "type": "send",
            "requestId": request_id,
            "id": chat_id,
            "trigger": "submit-message",
            "messageId": None,
            "messages": [message],
            "headers": {},
            "body": {},
            "metadata": None,
        }
    )


@pytest.mark.e2e
def test_a_live_chat_turn_through_the_host(host: tuple[str, str]) -> None:
    _, base = host
    chat_id = f"live-{uuid.uuid4().hex[:8]}"
    cookie = f"adk_asgi_uid={uuid.uuid4().hex}"
    url = base.replace("http://", "ws://") + "/agent/live"
    frames: list[dict[str, Any]] = []
    with connect(
        url, open_timeout=10, close_timeout=5, additional_headers={"cookie": cookie}
    ) as ws:
        ws.send(json.dumps({"type": "ping"}))
        assert json.loads(ws.recv(timeout=10)) == {"type": "pong"}
        ws.send(live_send("r1", chat_id, "hello"))
        while not frames or frames[-1]["type"] not in ("end", "error"):
            frames.append(json.loads(ws.recv(timeout=10)))

    # start, the chunks numbered from 0 without a gap, end: all of request r1, nothing else
    assert frames[0] == {"type": "start", "requestId": "r1"}
    assert frames[-1] == {"type": "end", "requestId": "r1"}
    chunks = frames[1:-1]
    assert [(f["type"], f["requestId"], f["sequence"]) for f in chunks] == [
        ("chunk", "r1", n) for n in range(len(chunks))
    ]
    assert all(f["chunk"]["delta"] for f in chunks if f["chunk"]["type"] == "text-delta")
    assert merge_deltas(normalize_ids([f["chunk"] for f in chunks])) == HELLO_CHUNKS

    # The turn is in the chat's session: the same browser reads it back through the host.
    history = httpx.get(
        f"{base}/agent/chat/{chat_id}/messages", headers={"cookie": cookie}, timeout=10
    )
    assert history.status_code == 200
    assert [
        (m["role"], [p["text"] for p in m["parts"] if p["type"] == "text"]) for m in history.json()
    ] == [("user", ["hello"]), ("assistant", [HELLO_TEXT])]


@pytest.mark.e2e
def test_django_alone_refuses_websockets(django_host: str) -> None:
    """The contrast: outside the prefix a WebSocket reaches Django, which cannot take it."""
    url = django_host.replace("http://", "ws://") + "/live"
    with pytest.raises(InvalidStatus) as refused:
        connect(url, open_timeout=10)
    assert refused.value.response.status_code == 500


@pytest.mark.e2e
def test_django_streams_the_body(gated_django_host: str) -> None:
    """The run is held open by its own tool until this test releases it from another chat, so
    the chunks read before the release cannot come from a body buffered until the run ends
    (a buffered body would time out here instead)."""
    gate = uuid.uuid4().hex[:8]
    with (
        httpx.Client(base_url=gated_django_host, timeout=10) as client,
        client.stream(
            "POST", "/agent/chat", json=user_body(f"hold {gate}", chat_id=f"held-{gate}")
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        pieces = response.iter_text()
        received = ""
        try:
            while '"type":"tool-input-available"' not in received:
                received += next(pieces)
        except httpx.ReadTimeout:
            pytest.fail(f"nothing streamed while the run was held; got {received!r}")
        held = parse_sse(received.rsplit("\n\n", 1)[0] + "\n\ndata: [DONE]\n\n")
        assert [chunk["type"] for chunk in held] == [
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-available",
        ]

        released = client.post(
            "/agent/chat", json=user_body(f"release {gate}", chat_id=f"release-{gate}")
        )
        assert released.status_code == 200
        assert {"type": "finish", "finishReason": "stop"} in parse_sse(released.content)

        body = received + "".join(pieces)
    assert merge_deltas(normalize_ids(parse_sse(body))) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": "<call1>",
            "toolName": "hold",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "hold",
            "input": {"gate": gate},
            "providerExecuted": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "<call1>",
            "output": {"gate": gate, "status": "released"},
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-delta", "id": "<block1>", "delta": "Done."},
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


IMPORT_AND_LIFESPAN = """
import asyncio, importlib, importlib.util, json, sys

import adk_asgi


async def lifespan(app):
    sent, started = [], asyncio.Event()
    incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive():
        message = next(incoming)
        if message["type"] == "lifespan.shutdown":
            await started.wait()
        return message

    async def send(message):
        sent.append(message)
        if message["type"].startswith("lifespan.startup."):
            started.set()

    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    await asyncio.wait_for(app(scope, receive, send), 30)
    return sent


seen = {
    "adk_asgi": adk_asgi.__file__,
    "demo_app": importlib.util.find_spec("demo_app") is not None,
    "examples": importlib.util.find_spec("examples") is not None,
}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    chat = module.chat if hasattr(module, "chat") else module.app.chat  # Django: the middleware's
    closed = []
    aclose = chat.aclose

    async def recorded(aclose=aclose, closed=closed):
        closed.append(name)
        await aclose()

    chat.aclose = recorded
    sent = asyncio.run(lifespan(module.app))
    seen[name] = {"lifespan": sent, "closed": closed, "model": module.agent.model}
print(json.dumps(seen))
"""
"""Import each example by its module name, warnings being errors; then run the lifespan of its
``app`` as a server does (startup, then shutdown) and record its ``AdkApp``'s ``aclose``."""


@pytest.mark.e2e
def test_the_examples_import_and_close_their_agent_from_the_wheel(
    wheel_python: Path, examples_copy: Path
) -> None:
    """In a user's copy of ``examples/``, by the wheel's venv, the examples import without a
    warning (a server would only log them) and with nothing of the checkout (no ``demo_app``);
    each one's lifespan starts and stops, and closes its ``AdkApp`` at shutdown, Django's
    included (Django's handler speaks no lifespan: ``AdkMiddleware`` answers it)."""
    done = subprocess.run(
        [str(wheel_python), "-W", "error", "-c", IMPORT_AND_LIFESPAN, *RECIPES],
        cwd=examples_copy,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    seen = json.loads(done.stdout)
    site_packages = wheel_python.parents[1] / "lib"
    assert Path(seen.pop("adk_asgi")).is_relative_to(site_packages), seen
    assert seen == {
        "demo_app": False,
        "examples": False,
        **{
            name: {"lifespan": STARTED_AND_STOPPED, "closed": [name], "model": "gemini-2.5-flash"}
            for name in RECIPES
        },
    }


# --- AdkMiddleware in process ---------------------------------------------------------------


class Recorder(BasePlugin):
    """Writes down when the runner closes it (``AdkApp.aclose`` → ``Runner.close``)."""

    def __init__(self, log: list[str]) -> None:
        super().__init__(name="recorder")
        self.log = log

    async def close(self) -> None:
        self.log.append("chat closed")


class RecordingChat(AdkApp):
    """A real ``AdkApp`` that keeps the scopes it is called with."""

    def __init__(self, log: list[str] | None = None) -> None:
        super().__init__(scripted_agent([]), plugins=[Recorder(log if log is not None else [])])
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(dict(scope))
        await super().__call__(scope, receive, send)


async def host_app(scope: Scope, receive: Receive, send: Send) -> None:
    """A host that speaks only HTTP and says which path it got (like Django: raises on the
    other scope types)."""
    if scope["type"] != "http":
        raise ValueError(f"this host can only handle HTTP, not {scope['type']}")
    body = f"host {scope['root_path']} {scope['path']}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def client_for(app: Any, root_path: str = "") -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, root_path=root_path), base_url="http://test"
    )


@pytest.mark.parametrize(
    ("path", "reaches"),
    [
        ("/agent/chat/c1/stream", "chat"),
        ("/agent/chat/c1/messages", "chat"),
        ("/agent", "chat"),
        ("/agent/", "chat"),
        ("/agent/nope", "chat"),
        ("/", "host"),
        ("/agentx", "host"),
        ("/agentx/chat/c1/stream", "host"),
        ("/Agent/chat/c1/stream", "host"),
        ("/other/agent/chat/c1/stream", "host"),
    ],
)
async def test_the_prefix_and_what_is_under_it_go_to_the_chat(path: str, reaches: str) -> None:
    chat = RecordingChat()
    async with client_for(AdkMiddleware(host_app, chat=chat)) as client:
        response = await client.get(path)
    if reaches == "host":
        assert (response.status_code, response.text) == (200, f"host  {path}")
        assert chat.scopes == []
    else:
        assert response.status_code in (200, 204, 404)
        assert not response.text.startswith("host")
        assert [scope["path"] for scope in chat.scopes] == [path]


async def test_a_nested_prefix_and_a_trailing_slash() -> None:
    chat = RecordingChat()
    middleware = AdkMiddleware(host_app, prefix="/api/agent/", chat=chat)
    assert middleware.prefix == "/api/agent"
    async with client_for(middleware) as client:
        inside = await client.get("/api/agent/chat/c1/stream")
        outside = await client.get("/api/agents")
    assert inside.status_code == 204
    assert outside.text == "host  /api/agents"


@pytest.mark.parametrize("root_path", ["", "/outer"])
async def test_the_child_scope_is_the_one_a_starlette_mount_makes(root_path: str) -> None:
    path = f"{root_path}/agent/chat/c1/stream"
    mounted, wrapped = RecordingChat(), RecordingChat()
    async with client_for(Starlette(routes=[Mount("/agent", app=mounted)]), root_path) as client:
        assert (await client.get(path)).status_code == 204
    async with client_for(AdkMiddleware(host_app, chat=wrapped), root_path) as client:
        assert (await client.get(path)).status_code == 204
        # The host's scope is left as it was.
        assert (await client.get(f"{root_path}/x")).text == f"host {root_path} {root_path}/x"

    def seen(scope: Scope) -> tuple[str, str, str]:
        return scope["path"], scope["root_path"], scope["app_root_path"]

    assert seen(wrapped.scopes[0]) == seen(mounted.scopes[0])
    assert seen(wrapped.scopes[0]) == (path, f"{root_path}/agent", root_path)


async def test_an_app_root_path_set_outside_is_kept() -> None:
    chat = RecordingChat()
    middleware = AdkMiddleware(host_app, chat=chat)
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/outer/inner/agent/chat/c1/stream",
        "root_path": "/outer/inner",
        "app_root_path": "/outer",
        "query_string": b"",
        "headers": [],
    }
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await middleware(scope, receive, send)
    assert sent[0]["status"] == 204
    assert chat.scopes[0]["root_path"] == "/outer/inner/agent"
    assert chat.scopes[0]["app_root_path"] == "/outer"


class WebSocketPeer:
    """The server's side of one WebSocket for an ASGI app: what it sent, and what to give it."""

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.scope: Scope = {
            "type": "websocket",
            "asgi": {"version": "3.0"},
            "scheme": "ws",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"test")],
            "subprotocols": [],
        }
        self.to_app, self.app_inbox = anyio.create_memory_object_stream[Message](10)
        self.app_outbox, self.from_app = anyio.create_memory_object_stream[Message](10)

    async def run(self) -> None:
        async with self.app_inbox, self.app_outbox:
            await self.app(self.scope, self.app_inbox.receive, self.app_outbox.send)

    def close(self) -> None:
        self.to_app.close()
        self.from_app.close()


async def test_a_websocket_under_the_prefix_reaches_the_chat() -> None:
    """Even when the host cannot take WebSockets at all (Django)."""
    peer = WebSocketPeer(AdkMiddleware(host_app, chat=RecordingChat()), "/agent/live")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(peer.run)
            await peer.to_app.send({"type": "websocket.connect"})
            assert (await peer.from_app.receive())["type"] == "websocket.accept"
            await peer.to_app.send({"type": "websocket.receive", "text": '{"type":"ping"}'})
            pong = await peer.from_app.receive()
            assert json.loads(pong["text"]) == {"type": "pong"}
            await peer.to_app.send({"type": "websocket.disconnect", "code": 1000})
    peer.close()


async def test_a_websocket_outside_the_prefix_reaches_the_host() -> None:
    peer = WebSocketPeer(AdkMiddleware(host_app, chat=RecordingChat()), "/agentx/live")
    with pytest.raises(ValueError, match="only handle HTTP, not websocket"):
        await peer.run()
    peer.close()


def test_the_prefix_is_checked() -> None:
    with pytest.raises(ValueError, match="start with '/'"):
        AdkMiddleware(host_app, prefix="agent", chat=RecordingChat())
    with pytest.raises(ValueError, match="must not be '/'"):
        AdkMiddleware(host_app, prefix="/", chat=RecordingChat())


def test_the_chat_can_be_built_from_adk_app_arguments() -> None:
    agent = scripted_agent([])
    built = AdkMiddleware(host_app, agent=agent, limits=Limits(busy_timeout=3.0))
    assert built.chat.services.limits.busy_timeout == 3.0
    # `app=` is AdkApp's (a google.adk App), not the wrapped ASGI app.
    from_app = AdkMiddleware(host_app, app=App(name="from_app", root_agent=scripted_agent([])))
    assert from_app.app is host_app
    assert from_app.chat.app_name == "from_app"
    with pytest.raises(TypeError, match="not both"):
        AdkMiddleware(host_app, chat=RecordingChat(), limits=Limits(busy_timeout=3.0))


# --- lifespan --------------------------------------------------------------------------------

LIFESPAN_SCOPE: Scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
STARTED_AND_STOPPED = [
    {"type": "lifespan.startup.complete"},
    {"type": "lifespan.shutdown.complete"},
]


async def run_lifespan(app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> list[Message]:
    """Play a server's part: startup, then shutdown once startup was answered."""
    sent: list[Message] = []
    started = anyio.Event()
    incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> Message:
        message = next(incoming)
        if message["type"] == "lifespan.shutdown":
            await started.wait()
        return message

    async def send(message: Message) -> None:
        sent.append(message)
        if message["type"].startswith("lifespan.startup."):
            started.set()

    with anyio.fail_after(10):
        await app(dict(LIFESPAN_SCOPE), receive, send)
    return sent


def starlette_host(log: list[str], *, fail: str = "") -> Starlette:
    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        log.append("host startup")
        if fail == "startup":
            raise RuntimeError("the host failed to start")
        yield
        log.append("host shutdown")
        if fail == "shutdown":
            raise RuntimeError("the host failed to stop")

    return Starlette(lifespan=lifespan)


async def test_lifespan_reaches_the_host_and_the_chat_closes_after_it() -> None:
    log: list[str] = []
    middleware = AdkMiddleware(starlette_host(log), chat=RecordingChat(log))
    assert await run_lifespan(middleware) == STARTED_AND_STOPPED
    assert log == ["host startup", "host shutdown", "chat closed"]


async def test_a_host_without_lifespan_support_still_gets_the_chat_closed() -> None:
    log: list[str] = []
    assert await run_lifespan(AdkMiddleware(host_app, chat=RecordingChat(log))) == (
        STARTED_AND_STOPPED
    )
    assert log == ["chat closed"]


async def test_a_host_that_ignores_lifespan_still_gets_the_chat_closed() -> None:
    async def silent(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await receive()  # reads the startup message, then leaves without a word

    log: list[str] = []
    assert await run_lifespan(AdkMiddleware(silent, chat=RecordingChat(log))) == (
        STARTED_AND_STOPPED
    )
    assert log == ["chat closed"]


async def test_a_host_startup_failure_is_not_hidden() -> None:
    log: list[str] = []
    middleware = AdkMiddleware(starlette_host(log, fail="startup"), chat=RecordingChat(log))
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        sent.append(message)

    with pytest.raises(RuntimeError, match="failed to start"):
        await middleware(dict(LIFESPAN_SCOPE), receive, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.failed"]
    assert log == ["host startup"]


async def test_a_host_shutdown_failure_still_closes_the_chat() -> None:
    log: list[str] = []
    middleware = AdkMiddleware(starlette_host(log, fail="shutdown"), chat=RecordingChat(log))
    with pytest.raises(RuntimeError, match="failed to stop"):
        await run_lifespan(middleware)
    assert log == ["host startup", "host shutdown", "chat closed"]


async def test_a_chat_that_fails_to_close_fails_the_shutdown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(RecordingChat):
        async def aclose(self) -> None:
            raise RuntimeError("plugin exploded")

    sent = await run_lifespan(AdkMiddleware(starlette_host([]), chat=Broken()))
    assert sent == [
        {"type": "lifespan.startup.complete"},
        {
            "type": "lifespan.shutdown.failed",
            "message": "closing the AdkApp failed: plugin exploded",
        },
    ]
    assert "closing the AdkApp failed" in caplog.text


class PreparingChat(RecordingChat):
    """A real ``AdkApp`` on a real SQLite database (ADK's ``DatabaseSessionService``)."""

    def __init__(self, url: str, log: list[str]) -> None:
        self.sessions = DatabaseSessionService(db_url=url)
        AdkApp.__init__(
            self,
            scripted_agent([]),
            plugins=[Recorder(log)],
            session_service=self.sessions,
        )
        self.scopes = []


def tables_of(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        return {row[0] for row in db.execute("select name from sqlite_master where type='table'")}


async def test_the_middleware_creates_the_session_tables_at_startup(tmp_path: Path) -> None:
    log: list[str] = []
    database = tmp_path / "sessions.db"
    chat = PreparingChat(f"sqlite+aiosqlite:///{database}", log)
    try:
        assert await run_lifespan(AdkMiddleware(host_app, chat=chat)) == STARTED_AND_STOPPED
        assert {"sessions", "events"} <= tables_of(database)  # before any request
    finally:
        await chat.sessions.close()


async def test_a_session_store_that_cannot_be_prepared_fails_startup(tmp_path: Path) -> None:
    log: list[str] = []
    chat = PreparingChat(f"sqlite+aiosqlite:///{tmp_path}/missing/dir/sessions.db", log)
    try:
        sent = await run_lifespan(AdkMiddleware(host_app, chat=chat))
    finally:
        await chat.sessions.close()
    # (a server stops after a failed startup: no shutdown follows)
    assert [m["type"] for m in sent] == ["lifespan.startup.failed"]
    assert sent[0]["message"].startswith("preparing the AdkApp failed: ")
