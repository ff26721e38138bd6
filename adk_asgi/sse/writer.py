"""Coalesced SSE body writes: at most one per interval, one in flight, a comment when quiet.

One socket write costs more than producing a chunk (docs/internals/performance-notes.md), so chunks
that arrive within ``interval`` of the previous write wait for the rest of the interval and go out
together; the interval grows with the streams of the process (:mod:`adk_asgi.serving.load`).
Coalescing only starts once text is flowing: the first chunk of an answer, and the first after a
pause (no chunk for an interval), are written at once, since the user waits for the first words and
nothing could be merged with them. The producer (the
request's task, :class:`~.response.SSEResponse`) writes what is due at once itself; a second task
writes the bytes held for the rest of an interval when it ends, and a comment after
``keep_alive`` seconds without a write, since proxies cut a response that sends nothing for 30
to 60 s. Its waits are a timer handle and a future each: this runs for every write of every
stream.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Final

from starlette.types import Send

from adk_asgi.serving import load
from adk_asgi.serving.options import DEFAULT_WRITE_INTERVAL
from adk_asgi.wire.encoding import SSE_KEEP_ALIVE

MAX_BUFFER: Final = 64 * 1024
"""Bytes waiting for the writer beyond which the run waits too (backpressure, as when the run
itself awaited each write)."""


class CoalescedWriter:
    """Writes the body's bytes, at most once per ``interval`` seconds.

    ``put`` (from the body's task) writes at once when the last write is an interval old, and
    otherwise holds the bytes for ``flush_held`` (a second task) to write when the interval
    ends. One write is in flight at a time: bytes put while ``flush_held`` writes are held
    for its next write. ``put`` waits only while ``max_buffer`` bytes are held; ``ready`` is
    cleared then, and while a write is in flight (it waits only for a reader that does not
    read), so the model waits too (:mod:`adk_asgi.serving.pace`). A write raising
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
        self._span = 0.0  # the interval the last write started (stretched by load); 0: none
        self._arrived = -math.inf  # loop time of the last put: a pause writes at once
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
            now = self._loop.time()
            # Due, or the first bytes after a pause: the stream is not flowing (nothing came
            # for an interval), so there is nothing to merge them with yet.
            paused, self._arrived = now - self._arrived >= self._span, now
            if paused or now >= self._not_before:
                await self.write()
                return
            self._due.set()
        else:
            self._arrived = self._loop.time()
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
            self._span = load.under_load(self.interval)
            self._not_before = self._written + self._span
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
        interval under another: 11 µs a cycle against 4.5 now,
        docs/internals/performance-notes.md.)"""
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
