"""A browser's live connection to a real uvicorn server, frame by frame: for the tests of the
protocol itself (frames out of order, resumes, aborts, close codes, audio), which read what a
chat client would hide. A test that only plays a chat uses ``ChatClient(app, transport="live")``
instead (docs/testing.md), or :func:`live_chat` for one over uvicorn's socket.

:class:`Live` (``send``/``response``/``turn``) is kept for those protocol tests: a turn
played next to a resume, an abort, audio, a cut or a close the test reads off the socket, where
the test also needs the socket itself. And for the hundred-connection load tests of
test_live_connection: a hundred ``ChatClient(base_url=…)`` opened at once time out in their
handshakes on a loaded machine (each builds its own ``httpx.AsyncClient``, with its TLS
context, in the loop that serves), where a hundred bare sockets do not."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from adk_asgi import AdkApp
from adk_asgi.testing import ChatClient, read_ui_message
from tests.servers import in_loop_uvicorn


@asynccontextmanager
async def serve(app: AdkApp) -> AsyncIterator[str]:
    """``app`` under uvicorn in this event loop; yields the live URL."""
    async with in_loop_uvicorn(app) as base:
        yield base.replace("http://", "ws://", 1) + "/live"


@asynccontextmanager
async def live_chat(app: AdkApp, **options: Any) -> AsyncIterator[ChatClient]:
    """A new browser's chat with ``app`` under uvicorn in this event loop, over its live socket
    (``ChatClient(base_url=…, transport="live", **options)``): for the tests that only play a
    chat over the network."""
    async with (
        in_loop_uvicorn(app) as base,
        ChatClient(base_url=base, transport="live", **options) as chat,
    ):
        yield chat


class Live:
    """One browser's live connection, speaking the WebSocketChatTransport frames."""

    def __init__(self, socket: ClientConnection, chat_id: str) -> None:
        self.socket = socket
        self.chat_id = chat_id
        self.count = 0
        self.user: dict[str, Any] = {}
        self.assistant: dict[str, Any] = {}
        self.body: dict[str, Any] = {}
        """Extra body keys of the next ``send`` (``sendMessage(..., {body})``)."""

    async def send(self, text: str | None = None) -> str:
        self.count += 1
        request_id = f"r{self.count}"
        if text is not None:
            self.user = {
                "id": f"u{self.count}",
                "role": "user",
                "parts": [{"type": "text", "text": text}],
            }
            messages = [self.user]
        else:
            messages = [self.user, self.assistant]
        frame = {
            "type": "send",
            "requestId": request_id,
            "id": self.chat_id,
            "trigger": "submit-message",
            "messageId": None,
            "messages": messages,
            "headers": {},
            "body": self.body,
            "metadata": None,
        }
        await self.socket.send(json.dumps(frame))
        return request_id

    async def response(self, request_id: str) -> list[dict[str, Any]]:
        """The chunks of one request, checking its frames: start, contiguous sequences, end."""
        chunks: list[dict[str, Any]] = []
        started = False
        while True:
            message = await asyncio.wait_for(self.socket.recv(), 10)
            if isinstance(message, bytes):
                continue  # the model's audio
            frame = json.loads(message)
            if frame.get("requestId") != request_id:
                continue
            if frame["type"] == "start":
                started = True
            elif frame["type"] == "chunk":
                assert started and frame["sequence"] == len(chunks), frame
                chunks.append(frame["chunk"])
            elif frame["type"] == "end":
                return chunks
            else:
                raise AssertionError(frame)

    async def turn(self, text: str | None = None) -> list[dict[str, Any]]:
        chunks = await self.response(await self.send(text))
        if text is not None:
            self.assistant = {"role": "assistant"}
        self.assistant = read_ui_message(chunks, self.assistant)
        return chunks


async def open_live(
    url: str, chat_id: str | None = None, *, cookie: str | None = None, **params: str
) -> tuple[Live, ClientConnection]:
    """A new connection; a new browser (identity cookie) unless ``cookie`` is given."""
    query = "&".join(f"{k}={v}" for k, v in params.items())
    cookie = cookie or f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    socket = await connect(f"{url}?{query}", additional_headers={"cookie": cookie})
    return Live(socket, chat_id or f"chat-{secrets.token_hex(4)}"), socket


async def text_frames_until_end(socket: ClientConnection, request_id: str) -> list[dict[str, Any]]:
    """Every frame up to the ``end`` of ``request_id``; all of them must be text frames."""
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1] != {"type": "end", "requestId": request_id}:
        message = await asyncio.wait_for(socket.recv(), 10)
        assert isinstance(message, str), message
        frames.append(json.loads(message))
    return frames


def unframe(frames: list[dict[str, Any]], request_id: str) -> list[dict[str, Any]]:
    """The chunks of one request's frames, checking the framing exactly: ``start``, chunks
    numbered from 0, ``end``, and nothing else in between."""
    chunks = [frame.get("chunk", {}) for frame in frames[1:-1]]
    assert frames == [
        {"type": "start", "requestId": request_id},
        *(
            {"type": "chunk", "requestId": request_id, "sequence": number, "chunk": chunk}
            for number, chunk in enumerate(chunks)
        ),
        {"type": "end", "requestId": request_id},
    ]
    return chunks


async def send_resume(socket: ClientConnection, chat_id: str, request_id: str) -> None:
    frame = {"type": "resume", "requestId": request_id, "id": chat_id, "headers": {}, "body": {}}
    await socket.send(json.dumps(frame))


def cookie_of(socket: ClientConnection) -> str:
    assert socket.request is not None
    cookie: str = socket.request.headers["cookie"]
    return cookie


async def http_history(url: str, cookie: str, chat_id: str) -> list[dict[str, Any]]:
    """``GET /chat/{id}/messages`` as the browser with ``cookie``, as a page reload does."""
    base = url.replace("ws://", "http://").removesuffix("/live")
    async with httpx.AsyncClient() as client:
        reply = await client.get(f"{base}/chat/{chat_id}/messages", headers={"cookie": cookie})
    assert reply.status_code == 200, reply.text
    messages: list[dict[str, Any]] = reply.json()
    return messages
