"""The live transport's socket to a real server (``ChatClient(base_url=…, transport="live")``).

The same reads as the in-process :class:`~adk_asgi.testing.asgi_websocket.Socket` — frames, a
close with its code and reason, what has already arrived without waiting — over the
``websockets`` client (it comes with ``uvicorn[standard]``), so a chat runs unchanged against a
server in another task or process: a uvicorn with its real sockets, pings and close handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from adk_asgi.testing.asgi_websocket import TIMEOUT, Closed, Denied

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

__all__ = ["NetworkSocket", "open_network_socket"]


class NetworkSocket:
    """One connection; a task reads it into a queue, so :meth:`receive_nowait` can tell what
    has arrived."""

    def __init__(self, connection: ClientConnection) -> None:
        self._connection = connection
        self._frames: asyncio.Queue[str | bytes | Closed] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read(), name="adk_asgi test socket reader")
        response = connection.response
        headers = response.headers.raw_items() if response is not None else []
        self.accept_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        self.closed: Closed | None = None
        self.timeout = TIMEOUT

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for message in self._connection:
                self._frames.put_nowait(message)
        except ConnectionClosed:
            pass
        code = self._connection.close_code
        self._frames.put_nowait(
            Closed(1006 if code is None else code, self._connection.close_reason or "")
        )

    async def send_text(self, text: str) -> None:
        """Send a frame; on a connection the server has closed meanwhile it is lost, and the
        next :meth:`receive` tells the close (as the stock transport fails the request)."""
        from websockets.exceptions import ConnectionClosed

        with contextlib.suppress(ConnectionClosed):
            await self._connection.send(text)

    async def receive(self) -> str | bytes | Closed:
        if self.closed is not None:
            return self.closed
        async with asyncio.timeout(self.timeout):
            return self._read_one(await self._frames.get())

    def receive_nowait(self) -> str | bytes | Closed | None:
        if self.closed is not None:
            return self.closed
        if self._frames.empty():
            return None
        return self._read_one(self._frames.get_nowait())

    def _read_one(self, frame: str | bytes | Closed) -> str | bytes | Closed:
        if isinstance(frame, Closed):
            self.closed = frame
        return frame

    async def close(self, code: int = 1000) -> None:
        """Close the connection (the close handshake) and stop reading it."""
        await self._connection.close(code)
        await self._reader


async def open_network_socket(url: str, headers: Mapping[str, str]) -> NetworkSocket:
    """Open ``url`` (``ws://`` or ``wss://``); :class:`Denied` when the server refuses the
    handshake with an HTTP response."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    try:
        connection = await connect(url, additional_headers=dict(headers), open_timeout=TIMEOUT)
    except InvalidStatus as exc:
        response = exc.response
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.raw_items()]
        raise Denied(response.status_code, response.body or b"", raw) from None
    return NetworkSocket(connection)
