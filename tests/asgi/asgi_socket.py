"""A WebSocket client that speaks ASGI to the app in the test's own event loop.

Starlette's ``TestClient`` runs the app in another thread (and warns about its httpx); this one
drives the handshake and the frames by hand, with the ``websocket.http.response`` extension
that uvicorn offers, so a refused handshake shows the status and body the app sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from starlette.types import ASGIApp


class Denied(Exception):
    """The app refused the handshake with an HTTP response."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(status)
        self.status = status
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


class Socket:
    def __init__(self, inbox: asyncio.Queue[dict[str, Any]], outbox: asyncio.Queue[dict[str, Any]]):
        self._inbox = inbox
        self._outbox = outbox

    async def send_json(self, frame: Mapping[str, Any]) -> None:
        await self._inbox.put({"type": "websocket.receive", "text": json.dumps(frame)})

    async def receive_json(self) -> Any:
        message = await asyncio.wait_for(self._outbox.get(), 10)
        assert message["type"] == "websocket.send", message
        return json.loads(message["text"])


def _scope(path: str, headers: Mapping[str, str], host: str) -> dict[str, Any]:
    path, _, query = path.partition("?")
    return {
        "type": "websocket",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "scheme": "ws",
        "query_string": query.encode(),
        "headers": [(b"host", host.encode())]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": (host, 80),
        "subprotocols": [],
        "extensions": {"websocket.http.response": {}},
    }


@asynccontextmanager
async def websocket(
    app: ASGIApp, path: str, headers: Mapping[str, str] | None = None, host: str = "testserver"
) -> AsyncIterator[Socket]:
    """Open ``path``; raise :class:`Denied` when the app answers the handshake with HTTP."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await inbox.put({"type": "websocket.connect"})

    async def send(message: dict[str, Any]) -> None:
        await outbox.put(message)

    task = asyncio.create_task(app(_scope(path, headers or {}, host), inbox.get, send))
    try:
        first = await asyncio.wait_for(outbox.get(), 10)
        if first["type"] == "websocket.http.response.start":
            body = b""
            while True:
                part = await asyncio.wait_for(outbox.get(), 10)
                body += part.get("body", b"")
                if not part.get("more_body"):
                    break
            raise Denied(first["status"], body)
        assert first["type"] == "websocket.accept", first
        yield Socket(inbox, outbox)
        await inbox.put({"type": "websocket.disconnect", "code": 1000})
        await asyncio.wait_for(task, 10)
    finally:
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
