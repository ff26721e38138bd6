"""``ChatClient``'s live transport: the stock AI SDK v7 ``WebSocketChatTransport`` on ``WS /live``.

One connection, opened by the first request and kept for the chat's next ones, as the stock
transport keeps it; each request is a ``send`` frame built as that transport builds it
(``requestId``, ``id``, ``trigger``, ``messageId`` when there is one, ``messages``,
``headers``, ``body``), and its answer is read to its ``end``, every frame checked: ``start``
first, ``chunk`` sequences from 0 without a gap, then ``end``. A frame the stock transport
would reject raises :class:`LiveFrameError` (it would drop the connection); an ``error``
frame and a close are what ``useChat`` shows, so they are the response's ``error``. After a
close the next request opens a new connection, as the stock transport does.

Unlike a browser, the handshake carries the chat's ``headers`` beside the cookies (an
``identify`` hook that reads a header sees the same browser over SSE and live); the frames
carry them too, as the stock transport's ``headers`` option does.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from starlette.types import ASGIApp

from adk_asgi.convert.ui_parts import Chunk, UIMessageDict
from adk_asgi.testing.asgi_websocket import Closed, Denied, websocket
from adk_asgi.testing.network_websocket import open_network_socket
from adk_asgi.testing.response import Exchange
from adk_asgi.testing.sse_transport import refusal

if TYPE_CHECKING:
    import httpx

__all__ = ["LiveFrameError", "LiveTransport", "closed_error"]


class Socket(Protocol):
    """The client's side of a connection: in process
    (:class:`~adk_asgi.testing.asgi_websocket.Socket`) or to a real server
    (:class:`~adk_asgi.testing.network_websocket.NetworkSocket`)."""

    accept_headers: list[tuple[bytes, bytes]]

    async def send_text(self, text: str) -> None: ...

    async def receive(self) -> str | bytes | Closed: ...

    def receive_nowait(self) -> str | bytes | Closed | None: ...


class LiveFrameError(Exception):
    """A frame the stock ``WebSocketChatTransport`` rejects (a chunk out of sequence, before
    ``start``, a frame of an unknown type): the server broke the protocol."""


def closed_error(closed: Closed) -> str:
    """The stock transport's error for a connection that closed under a request."""
    reason = f": {closed.reason}" if closed.reason else ""
    return f"WebSocket chat network connection closed (code {closed.code}{reason})."


class LiveTransport:
    def __init__(
        self,
        app: ASGIApp | None,
        http: httpx.AsyncClient,
        path: str,
        params: Mapping[str, str],
        headers: Mapping[str, str],
    ) -> None:
        self.app = app
        """The app, in process; ``None``: the server at ``http``'s base URL, over the network."""
        self.http = http
        """The chat's HTTP client: its cookies are the browser's, on both transports."""
        self.path = path
        self.params = dict(params)
        self.headers = headers
        """The chat's own headers (the client's dict: changes to it apply)."""
        self.socket: Socket | None = None
        """The connection the next request goes over, once one is open."""
        self._stack: AsyncExitStack | None = None
        self._request_ids = itertools.count(1)

    def body(
        self,
        chat_id: str,
        messages: list[UIMessageDict],
        trigger: str,
        message_id: str | None,
        extra: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        """The ``send`` frame; ``requestId`` is ``r1``, ``r2``… in the order frames are built
        (the stock transport's are random)."""
        frame: dict[str, Any] = {
            "type": "send",
            "requestId": f"r{next(self._request_ids)}",
            "id": chat_id,
            "trigger": trigger,
        }
        if message_id is not None:  # (JSON.stringify leaves an undefined messageId out)
            frame["messageId"] = message_id
        frame["messages"] = copy.deepcopy(messages)
        frame["headers"] = {**self.headers, **(headers or {})}
        frame["body"] = dict(extra or {})
        return frame

    async def exchange(self, body: dict[str, Any], headers: Mapping[str, str] | None) -> Exchange:
        try:
            socket = await self.connect()
        except Denied as denied:
            refused = refusal(denied.body.decode(errors="replace"))
            return Exchange(denied.status, error=refused, started=False)
        await socket.send_text(json.dumps(body))
        return await self._read(socket, body["requestId"])

    async def connect(self) -> Socket:
        """The open connection, or a new one (the last was closed, or there was none):
        ``Denied`` when the app refuses the handshake."""
        if self.socket is not None:
            if _closed_meanwhile(self.socket) is None:
                return self.socket
            await self.disconnect()
        query = f"?{urlencode(self.params)}" if self.params else ""
        handshake = dict(self.headers)
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.http.cookies.jar)
        if cookies:
            handshake["cookie"] = cookies
        stack = AsyncExitStack()
        url = self.http.base_url
        socket: Socket
        if self.app is not None:
            socket = await stack.enter_async_context(
                websocket(self.app, self.path + query, handshake, host=url.host)
            )
        else:
            scheme = "wss" if url.scheme == "https" else "ws"
            address = url.copy_with(scheme=scheme, raw_path=(self.path + query).encode())
            network = await open_network_socket(str(address), handshake)
            stack.push_async_callback(network.close)
            socket = network
        self._stack, self.socket = stack, socket
        self._keep_cookies(socket, url.join(self.path))
        return socket

    def _keep_cookies(self, socket: Socket, url: httpx.URL) -> None:
        """A ``set-cookie`` on the accept (the browser's first request was this handshake)
        goes into the jar, as the browser keeps it."""
        import httpx

        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in socket.accept_headers]
        accepted = httpx.Response(101, headers=headers, request=httpx.Request("GET", url))
        self.http.cookies.extract_cookies(accepted)

    async def _read(self, socket: Socket, request_id: str) -> Exchange:
        chunks: list[Chunk] = []
        started = False
        while True:
            frame = await socket.receive()
            if isinstance(frame, Closed):
                await self.disconnect()
                return Exchange(200 if started else 0, chunks, closed_error(frame), frame, started)
            if isinstance(frame, bytes):
                continue  # the model's speech (``?audio=1``)
            data = json.loads(frame)
            if not isinstance(data, dict) or data.get("requestId") != request_id:
                continue  # another request's, or no request's (``pong``, ``interrupted``)
            kind = data.get("type")
            if kind == "start" and not started:
                started = True
            elif kind == "chunk" and started and data.get("sequence") == len(chunks):
                chunks.append(data["chunk"])
            elif kind == "end" and started:
                return await self._ended(socket, Exchange(200, chunks))
            elif kind == "error":
                text = data.get("errorText") or "WebSocket chat server returned an error."
                failed = Exchange(200 if started else 0, chunks, text, started=started)
                return await self._ended(socket, failed)
            else:
                raise LiveFrameError(f"after {len(chunks)} chunks: {data!r}")

    async def _ended(self, socket: Socket, exchange: Exchange) -> Exchange:
        """The request is over; if the app has closed the socket already (right after the
        ``end`` of a failed answer, say), that is told with it, and the next request opens
        a new connection."""
        exchange.closed = _closed_meanwhile(socket)
        if exchange.closed is not None:
            await self.disconnect()
        return exchange

    async def disconnect(self) -> None:
        """Close the connection, if one is open (``transport.close()``, a reload); the next
        request opens a new one."""
        stack, self._stack, self.socket = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def aclose(self) -> None:
        await self.disconnect()


def _closed_meanwhile(socket: Socket) -> Closed | None:
    """How the app closed the socket, if it has already (without waiting). What else it sent
    meanwhile is no request's of this chat (a ``pong``, the rest of an aborted answer)."""
    while (frame := socket.receive_nowait()) is not None:
        if isinstance(frame, Closed):
            return frame
    return None
