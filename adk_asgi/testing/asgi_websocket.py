"""A WebSocket client that speaks ASGI to an app in the test's own event loop.

Starlette's ``TestClient`` runs the app in another thread (and warns about its httpx); this one
drives the handshake and the frames by hand, with the ``websocket.http.response`` extension
that uvicorn offers, so a refused handshake shows the status and body the app sent, and a
close shows its code and reason. :class:`~adk_asgi.testing.ChatClient`'s live transport runs
on it; tests of the protocol itself use it raw.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message

__all__ = ["TIMEOUT", "Closed", "Denied", "Socket", "websocket"]

TIMEOUT = 10.0
"""Seconds a read waits for the app before the test fails: an app that never answers is a
failure, not a hang."""


class Denied(Exception):
    """The app refused the handshake with an HTTP response."""

    def __init__(self, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]]) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = list(headers)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Closed:
    """The app closed the socket (``websocket.close``), or returned without closing it (1000,
    as an ASGI server then closes it)."""

    code: int
    reason: str = ""


class Socket:
    """The client's side of one accepted connection."""

    def __init__(
        self,
        inbox: asyncio.Queue[Message],
        outbox: asyncio.Queue[Message],
        task: asyncio.Task[None],
        accept: Message,
    ) -> None:
        self._inbox = inbox
        self._outbox = outbox
        self._task = task
        self.accept_headers: list[tuple[bytes, bytes]] = list(accept.get("headers") or [])
        """The headers of the app's ``websocket.accept`` (a ``set-cookie``, say)."""
        self.subprotocol: str | None = accept.get("subprotocol")
        self.closed: Closed | None = None
        """Set once the app closed the socket: reads then return it."""
        self.timeout = TIMEOUT

    async def send_text(self, text: str) -> None:
        await self._inbox.put({"type": "websocket.receive", "text": text})

    async def send_bytes(self, data: bytes) -> None:
        await self._inbox.put({"type": "websocket.receive", "bytes": data})

    async def send_json(self, frame: Mapping[str, Any]) -> None:
        await self.send_text(json.dumps(frame))

    async def receive(self) -> str | bytes | Closed:
        """The app's next frame, or how it closed the socket. An app that raised raises here;
        one silent for :attr:`timeout` seconds is a ``TimeoutError``."""
        timeout = self.timeout
        if self.closed is not None:
            return self.closed
        message = self._outbox.get_nowait() if not self._outbox.empty() else None
        if message is None:
            getting = asyncio.ensure_future(self._outbox.get())
            try:
                done, _ = await asyncio.wait(
                    {getting, self._task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                if not getting.done():
                    getting.cancel()
            if getting in done:
                message = getting.result()
            elif self._task in done:
                self._task.result()  # the app's exception, if it raised
                message = {"type": "websocket.close", "code": 1000}
            else:
                raise TimeoutError(f"the app sent nothing for {timeout} s")
        return self._read(message)

    def receive_nowait(self) -> str | bytes | Closed | None:
        """The frame or close the app has already sent, if any, without waiting."""
        if self.closed is not None:
            return self.closed
        if self._outbox.empty():
            return None
        return self._read(self._outbox.get_nowait())

    def _read(self, message: Message) -> str | bytes | Closed:
        if message["type"] == "websocket.close":
            self.closed = Closed(message.get("code", 1000), message.get("reason") or "")
            return self.closed
        assert message["type"] == "websocket.send", message
        text: str | None = message.get("text")
        if text is not None:
            return text
        data: bytes = message["bytes"]
        return data

    async def receive_json(self) -> Any:
        """The app's next text frame, as JSON; a binary frame or a close fails the test."""
        frame = await self.receive()
        assert isinstance(frame, str), frame
        return json.loads(frame)

    async def close(self, code: int = 1000) -> None:
        """The client leaves (``websocket.disconnect``); returns once the app has ended."""
        await self._inbox.put({"type": "websocket.disconnect", "code": code})
        await asyncio.wait_for(asyncio.shield(self._task), TIMEOUT)


def _scope(
    path: str, headers: Mapping[str, str], host: str, subprotocols: Sequence[str]
) -> dict[str, Any]:
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
        "subprotocols": list(subprotocols),
        "extensions": {"websocket.http.response": {}},
    }


@asynccontextmanager
async def websocket(
    app: ASGIApp,
    path: str,
    headers: Mapping[str, str] | None = None,
    host: str = "testserver",
    subprotocols: Sequence[str] = (),
) -> AsyncIterator[Socket]:
    """Open ``path`` (with its query); raise :class:`Denied` when the app answers the
    handshake with HTTP. Leaving the block disconnects and waits for the app to end."""
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    outbox: asyncio.Queue[Message] = asyncio.Queue()
    await inbox.put({"type": "websocket.connect"})

    async def send(message: Message) -> None:
        await outbox.put(message)

    scope = _scope(path, headers or {}, host, subprotocols)

    async def run() -> None:
        await app(scope, inbox.get, send)

    task = asyncio.create_task(run())
    try:
        first = await asyncio.wait_for(outbox.get(), TIMEOUT)
        if first["type"] == "websocket.http.response.start":
            body = b""
            while True:
                part = await asyncio.wait_for(outbox.get(), TIMEOUT)
                body += part.get("body", b"")
                if not part.get("more_body"):
                    break
            raise Denied(first["status"], body, first.get("headers") or [])
        assert first["type"] == "websocket.accept", first
        socket = Socket(inbox, outbox, task, first)
        yield socket
        await socket.close()
    finally:
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
