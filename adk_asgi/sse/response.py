"""The SSE transport: one ``run_async`` call streamed as one UI message stream response.

Thin on purpose: the request was validated before this response was created (a 4xx is only
possible before the first byte), the converter decides what the chunks are, and this module
only moves bytes and watches the connection.

A client that goes away must stop the run, not cancel it mid-step: the disconnect watcher sets
ADK's ``abort_signal``, and the response keeps draining ``run_async`` (ADK stops promptly and
records the abort) before it returns, so the chat lock is released only when ADK is done with
the session and no task is left behind. ADK sees the abort only once the results of the tools
that ran are stored (:mod:`adk_asgi.serving.finish_tools`): a client that leaves never loses what
ran.

Writes are coalesced (:mod:`.writer`): the body is iterated by the request's own task, which
also makes the writes that are due at once (ADK's OpenTelemetry context is attached and
detached per task; and a second task would only add a task switch before the first delta).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing

from google.adk.events.event import Event
from starlette.types import Receive, Scope, Send

from adk_asgi.convert.events import EventConverter
from adk_asgi.errors import log_failure
from adk_asgi.serving import load
from adk_asgi.serving.options import DEFAULT_KEEP_ALIVE, DEFAULT_WRITE_INTERVAL
from adk_asgi.serving.pace import RunSignal
from adk_asgi.sse.writer import MAX_BUFFER, CoalescedWriter
from adk_asgi.wire.chunks import UIMessageChunk
from adk_asgi.wire.encoding import SSE_DONE, SSE_HEADERS, ChunkEncoder


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
    except Exception as exc:
        # (after an error event ADK raises it again: that failure was logged once already)
        if not converter.errored:
            log_failure("the run failed", exc)
        yield b"".join(encoder.sse(c) for c in converter.fail_with(exc))
    yield b"".join(encoder.sse(c) for c in converter.finish()) + SSE_DONE


class SSEResponse:
    """An ASGI response streaming ``body`` that reports a client disconnect to ``abort``.

    ``detached``: the body is drained to its end whether or not anyone still reads it (a
    resumable stream, :mod:`adk_asgi.stores.resumable`): a disconnect stops the writes, not the run.
    ``write_interval``: seconds. A chunk goes out at once when nothing was written in the last
    interval, or no chunk came in it (the first words after a pause), otherwise with everything
    else that arrives before the interval is over. The
    first write (``start``) does not start an interval, so the first delta is never held back,
    and the end of the body is written at once. ``0`` writes each chunk as it comes.
    ``keep_alive``: seconds without a write after which an SSE comment is written (``None``:
    never).
    """

    def __init__(
        self,
        body: AsyncGenerator[bytes, None],
        *,
        abort: asyncio.Event,
        headers: Mapping[str, str] | None = None,
        write_interval: float = DEFAULT_WRITE_INTERVAL,
        max_buffer: int = MAX_BUFFER,
        detached: bool = False,
        keep_alive: float | None = DEFAULT_KEEP_ALIVE,
    ) -> None:
        if not write_interval >= 0:
            raise ValueError(f"write_interval must be >= 0 seconds, not {write_interval!r}")
        self.body = body
        self.abort = abort
        self.detached = detached
        self.gone = asyncio.Event()
        """The client is gone (or a write failed): nothing more is sent."""
        self.headers = {**SSE_HEADERS, **(headers or {})}
        self.write_interval = write_interval
        self.max_buffer = max_buffer
        self.keep_alive = keep_alive
        self.reader_ready = abort.reader_ready if isinstance(abort, RunSignal) else asyncio.Event()
        """Cleared while bytes wait for the reader: the model waits too
        (:mod:`adk_asgi.serving.pace`)."""
        self._writer: CoalescedWriter | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        # A task of its own, not a task group: the body's own exceptions (a failed write) must
        # reach the server as they are, not wrapped in an ExceptionGroup.
        watcher = asyncio.create_task(
            self._watch_disconnect(receive), name="adk_asgi sse disconnect watcher"
        )
        load.stream_began()
        try:
            await send({"type": "http.response.start", "status": 200, "headers": raw_headers})
            async with aclosing(self.body) as body:
                if self.write_interval > 0 or self.keep_alive is not None:
                    await self._pump_coalesced(body, send)
                else:
                    await self._pump(body, send)
        finally:
            load.stream_ended()
            watcher.cancel()
            await asyncio.wait([watcher])  # no task outlives the response

    async def _pump(self, body: AsyncIterator[bytes], send: Send) -> None:
        """One write per chunk, from this task."""
        async for data in body:
            if self._silent():
                continue  # the client is gone: drain the run, send nothing
            self.reader_ready.clear()  # (a write that waits for the reader holds the model)
            try:
                await send({"type": "http.response.body", "body": data, "more_body": True})
            except OSError:
                self._client_gone()
            finally:
                self.reader_ready.set()
        if not self._silent():
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pump_coalesced(self, body: AsyncIterator[bytes], send: Send) -> None:
        """This task iterates the body and writes what is due at once; bytes held for the rest
        of an interval are written by a second task when it ends."""
        writer = self._writer = CoalescedWriter(
            send, self._client_gone, self._silent, self.reader_ready
        )
        writer.interval, writer.max_buffer = self.write_interval, self.max_buffer
        writer.keep_alive = self.keep_alive
        flusher = asyncio.create_task(writer.flush_held(), name="adk_asgi sse flusher")
        try:
            async for data in body:
                if self._silent():
                    continue  # the client is gone: drain the run, send nothing
                await writer.put(data)
        except BaseException:
            flusher.cancel()  # a cancelled or failed request does not wait for a write
            raise
        finally:
            writer.stop()
            await asyncio.wait([flusher])  # it returns at once, or after the write it is in
        flusher.result()  # (a bug in the flusher is not lost)
        if writer.error is not None:
            raise writer.error  # after the drain: the run was aborted, not cut off
        if not self._silent():
            await writer.write(more_body=False)  # the end, with anything held, never delayed
            if writer.error is not None:
                raise writer.error

    async def _watch_disconnect(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self._client_gone()
                if self._writer is not None:
                    self._writer.stop()  # nothing more to send; don't sit out an interval
                return

    def _silent(self) -> bool:
        """Nothing more is sent: the client is gone, or (unless detached) the run was aborted
        by whoever set ``abort``."""
        return self.gone.is_set() or (self.abort.is_set() and not self.detached)

    def _client_gone(self) -> None:
        """Nothing more can be sent; the run stops too unless it is ``detached``."""
        self.gone.set()
        self.reader_ready.set()  # nothing is written any more: the run goes on, or stops
        if not self.detached:
            self.abort.set()
