"""The SSE transport: one ``run_async`` call streamed as one UI message stream response.

Thin on purpose: the request was validated before this response was created (a 4xx is only
possible before the first byte), the converter decides what the chunks are, and this module
only moves bytes and watches the connection.

A client that goes away must stop the run, not cancel it mid-step: the disconnect watcher sets
ADK's ``abort_signal``, and the response keeps draining ``run_async`` (ADK stops promptly and
records the abort) before it returns, so the chat lock is released only when ADK is done with
the session and no task is left behind.

Writes are coalesced: one socket write costs more than producing a chunk (docs/performance.md),
so chunks that arrive within ``write_interval`` of the previous write wait for the rest of the
interval and go out together. The body is iterated by the request's own task, which also makes
the writes that are due at once (ADK's OpenTelemetry context is attached and detached per task;
and a second task would only add a task switch before the first delta); a second task writes
the bytes held for the rest of an interval when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Final

from google.adk.events.event import Event
from starlette.types import Receive, Scope, Send

from . import load
from .chunks import UIMessageChunk
from .convert import EventConverter
from .encoding import SSE_DONE, SSE_HEADERS, SSE_KEEP_ALIVE, ChunkEncoder
from .pace import RunSignal

logger = logging.getLogger("adk_asgi")

DEFAULT_WRITE_INTERVAL: Final = 0.01
"""Seconds: at most one body write per interval (finer than a 60 Hz frame)."""

DEFAULT_KEEP_ALIVE: Final = 15.0
"""Seconds of silence after which a comment is written: proxies (nginx, Next.js rewrites,
load balancers) cut a response that sends nothing for 30 to 60 s, and a tool or the model can
think that long."""

MAX_BUFFER: Final = 64 * 1024
"""Bytes waiting for the writer beyond which the run waits too (backpressure, as when the run
itself awaited each write)."""


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
        logger.exception("adk_asgi: the run failed")
        yield b"".join(encoder.sse(c) for c in converter.fail_with(exc))
    yield b"".join(encoder.sse(c) for c in converter.finish()) + SSE_DONE


class SSEResponse:
    """An ASGI response streaming ``body`` that reports a client disconnect to ``abort``.

    ``detached``: the body is drained to its end whether or not anyone still reads it (a
    resumable stream, :mod:`.resumable`): a disconnect stops the writes, not the run.
    ``write_interval``: seconds. A chunk goes out at once when nothing was written in the last
    interval, otherwise with everything else that arrives before the interval is over. The
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
        """Cleared while bytes wait for the reader: the model waits too (:mod:`.pace`)."""
        self._writer: _Writer | None = None

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
        writer = self._writer = _Writer(send, self._client_gone, self._silent, self.reader_ready)
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


class _Writer:
    """Writes the body's bytes, at most once per ``interval`` seconds.

    ``put`` (from the body's task) writes at once when the last write is an interval old, and
    otherwise holds the bytes for ``flush_held`` (a second task) to write when the interval
    ends. One write is in flight at a time: bytes put while ``flush_held`` writes are held
    for its next write. ``put`` waits only while ``max_buffer`` bytes are held; ``ready`` is
    cleared then, and while a write is in flight (it waits only for a reader that does not
    read), so the model waits too (:mod:`.pace`). A write raising
    ``OSError`` calls ``gone``, as a disconnect does; any other exception is kept in ``error``
    (and calls ``gone``) so that the run is drained before it is raised.
    """

    def __init__(
        self,
        send: Send,
        gone: Callable[[], None],
        silent: Callable[[], bool],
        ready: asyncio.Event,
    ) -> None:
        self.send = send
        self.ready = ready
        self.gone = gone
        self.silent = silent
        """Whether nothing more may be written (see ``SSEResponse``)."""
        self.interval = DEFAULT_WRITE_INTERVAL
        self.max_buffer = MAX_BUFFER
        self.keep_alive: float | None = None
        self.error: Exception | None = None
        self._loop = asyncio.get_running_loop()
        self._written = self._loop.time()  # of the last write
        self._held: list[bytes] = []
        self._size = 0
        self._not_before = -math.inf  # loop time of the next write
        self._writes = 0
        self._writing = False  # a write is in flight (the one: see ``_keep_alive_due``)
        self._due = asyncio.Event()  # set: held bytes wait for flush_held (or stop, idle)
        self._stopping = False
        self._idle = False  # nothing was written for keep_alive s: flush_held writes a comment
        self._nap: asyncio.Future[None] | None = None  # flush_held waiting out an interval
        self._keep_alive_timer: asyncio.TimerHandle | None = None
        self._room = asyncio.Event()  # set: put need not wait
        self._room.set()
        self._closed = False  # flush_held has returned

    async def put(self, data: bytes) -> None:
        self._held.append(data)
        self._size += len(data)
        if not self._due.is_set():  # else held bytes wait, or the flusher is writing
            if self._loop.time() >= self._not_before:
                await self.write()
                return
            self._due.set()
        if self._size >= self.max_buffer and not self._closed:
            self._room.clear()
            self.ready.clear()
            await self._room.wait()

    async def write(self, *, more_body: bool = True) -> None:
        """Write what is held now (its callers make sure that no other write is in flight)."""
        data = b"".join(self._held)
        self._held.clear()
        self._size = 0
        self._room.set()
        self._written = self._loop.time()
        if self._writes:  # the first write (``start``) does not start an interval
            self._not_before = self._written + load.under_load(self.interval)
        self._writes += 1
        self.ready.clear()
        self._writing = True
        try:
            await self.send({"type": "http.response.body", "body": data, "more_body": more_body})
        except OSError:
            self.gone()
        except Exception as exc:
            self.error = exc
            self.gone()
        finally:
            self._writing = False
            if self._size < self.max_buffer or self._closed:
                self.ready.set()

    def stop(self) -> None:
        """Make ``flush_held`` return (what it holds is the producer's again)."""
        self._stopping = True
        self._due.set()
        _wake(self._nap)

    async def flush_held(self) -> None:
        self._arm_keep_alive()
        try:
            while True:
                await self._due.wait()
                if self._stopping:
                    return
                if self._idle:
                    # Nothing was written for ``keep_alive`` s: a comment, as the one write in
                    # flight (``_due`` stays set meanwhile, so ``put`` holds its bytes).
                    self._idle = False
                    if self.silent():
                        return
                    self._held.insert(0, SSE_KEEP_ALIVE)
                else:
                    delay = self._not_before - self._loop.time()
                    if delay > 0:
                        await self._sleep(delay)
                        if self._stopping:
                            return
                    if self.silent():
                        return
                await self.write()  # ``_due`` stays set: what is put meanwhile is held
                if self._keep_alive_timer is None:  # (it woke this task for the comment)
                    self._arm_keep_alive()
                if not self._held and not self._stopping:
                    self._due.clear()
        finally:
            self._closed = True
            if self._keep_alive_timer is not None:
                self._keep_alive_timer.cancel()
            self._room.set()
            self.ready.set()

    async def _sleep(self, delay: float) -> None:
        """Wait ``delay`` seconds, or until ``stop``: a timer handle and a future, not an
        ``asyncio.timeout`` (this runs once per write of every stream)."""
        nap = self._nap = self._loop.create_future()
        timer = self._loop.call_later(delay, _wake, nap)
        try:
            await nap
        finally:
            timer.cancel()
            self._nap = None

    def _arm_keep_alive(self) -> None:
        if self.keep_alive is not None:
            self._keep_alive_timer = self._loop.call_at(
                self._written + self.keep_alive, self._keep_alive_due
            )

    def _keep_alive_due(self) -> None:
        """One timer per ``keep_alive`` seconds, not one per write: it finds the last write
        and waits again from there, or wakes ``flush_held`` for a comment. (``flush_held``
        used to wait for bytes under an ``asyncio.timeout`` of ``keep_alive``, and out an
        interval under another: 11 µs a cycle against 4.5 now, docs/performance.md.)"""
        assert self.keep_alive is not None
        if self._closed:
            return
        if self._writing:  # stalled on a reader that does not read: a comment would be a
            # second write in flight; the connection is not silent, its reader is
            self._keep_alive_timer = self._loop.call_later(self.keep_alive, self._keep_alive_due)
            return
        if self._loop.time() < self._written + self.keep_alive:
            self._arm_keep_alive()  # written meanwhile: wait from that write
            return
        self._keep_alive_timer = None
        self._idle = True
        self._due.set()


def _wake(nap: asyncio.Future[None] | None) -> None:
    if nap is not None and not nap.done():
        nap.set_result(None)
