"""The SSE transport: one ``run_async`` call streamed as one UI message stream response.

Thin on purpose: the request was validated before this response was created (a 4xx is only
possible before the first byte), the converter decides what the chunks are, and this module
only moves bytes and watches the connection.

A client that goes away must stop the run, not cancel it mid-step: the disconnect watcher sets
ADK's ``abort_signal``, and the response keeps draining ``run_async`` (ADK stops promptly and
records the abort) before it returns, so the chat lock is released only when ADK is done with
the session and no task is left behind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing

import anyio
from google.adk.events.event import Event
from starlette.types import Receive, Scope, Send

from .chunks import UIMessageChunk
from .convert import EventConverter
from .encoding import SSE_DONE, SSE_HEADERS, ChunkEncoder

logger = logging.getLogger("adk_asgi")

GENERIC_ERROR = "The agent failed while answering."


async def sse_body(
    events: AsyncGenerator[Event, None] | None,
    converter: EventConverter,
    encoder: ChunkEncoder,
    lead: Sequence[UIMessageChunk] = (),
) -> AsyncGenerator[bytes, None]:
    """The SSE body of one response: ``start`` … ``finish``, ``[DONE]``.

    A failure of the run becomes an ``error`` chunk and a normal end of the body: a body cut
    short is reported by Node's fetch as ``TypeError: terminated``, which the AI SDK treats as
    an ordinary error, and the user would lose the text already shown.
    """
    yield b"".join(encoder.sse(c) for c in [*converter.start(), *lead])
    if events is None:  # nothing for ADK to do (an approval the browser acts on first)
        yield b"".join(encoder.sse(c) for c in converter.finish()) + SSE_DONE
        return
    try:
        async with aclosing(events) as run:
            async for event in run:
                chunks = converter.feed(event)
                if chunks:
                    yield b"".join(encoder.sse(c) for c in chunks)
    except Exception:
        logger.exception("adk_asgi: the run failed")
        yield b"".join(encoder.sse(c) for c in converter.fail(GENERIC_ERROR))
    yield b"".join(encoder.sse(c) for c in converter.finish()) + SSE_DONE


class SSEResponse:
    """An ASGI response streaming ``body`` that reports a client disconnect to ``abort``."""

    def __init__(
        self,
        body: AsyncGenerator[bytes, None],
        *,
        abort: asyncio.Event,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.body = body
        self.abort = abort
        self.headers = {**SSE_HEADERS, **(headers or {})}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_disconnect, receive)
            try:
                await send({"type": "http.response.start", "status": 200, "headers": raw_headers})
                async with aclosing(self.body) as body:
                    await self._pump(body, send)
            finally:
                tg.cancel_scope.cancel()

    async def _pump(self, body: AsyncIterator[bytes], send: Send) -> None:
        async for data in body:
            if self.abort.is_set():
                continue  # the client is gone: drain the run, send nothing
            try:
                await send({"type": "http.response.body", "body": data, "more_body": True})
            except OSError:
                self.abort.set()
        if not self.abort.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _watch_disconnect(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.abort.set()
                return
