"""A live connection's answers, written to the stream store so that any connection can resume
them (:mod:`adk_asgi.stores.resumable`).

The protocol machine says what to record (:class:`~.outputs.Record`); this writes
it in order, in the form SSE streams are kept in (the body of a UI message stream: ``data:``
events, ``[DONE]`` last), so an SSE ``GET /chat/{id}/stream`` and a live ``resume`` read either.
Recording never makes the connection wait: records queue up, and one task writes what has
queued as one piece, at most every ``flush_interval`` seconds (a task woken per model event
would cost the answer more than the writing does), at once when a response begins or ends.
"""

from __future__ import annotations

import asyncio
from typing import Final

from adk_asgi.errors import log_failure
from adk_asgi.live.outputs import Record
from adk_asgi.stores.locks import ChatKey
from adk_asgi.stores.resumable import StreamStore
from adk_asgi.wire.encoding import SSE_CUT_SHORT, SSE_DONE, sse_events

FLUSH_INTERVAL: Final = 0.01
"""Seconds a recorded chunk may wait to be written (what a resume can lag behind)."""


class LiveRecorder:
    """Writes one live connection's responses, as streams of its chat, to ``store``."""

    def __init__(
        self, store: StreamStore, key: ChatKey, flush_interval: float = FLUSH_INTERVAL
    ) -> None:
        self.store = store
        self.key = key
        self.flush_interval = flush_interval
        self._flush: asyncio.TimerHandle | None = None
        self.stream_id: str | None = None
        """The stream being written (the chat's active one), once its ``begin`` is done."""
        self._records: list[Record] = []
        self._ready = asyncio.Event()
        self._closing = False
        self._task = asyncio.create_task(self._write(), name="adk_asgi live recorder")

    def record(self, record: Record) -> None:
        if self._closing:
            return  # (a session that failed after its chat was released: nobody resumes it)
        self._records.append(record)
        if record.begin or record.end:
            self._wake()
        elif self._flush is None and not self._ready.is_set():
            loop = asyncio.get_running_loop()
            self._flush = loop.call_later(self.flush_interval, self._wake)

    def _wake(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        self._ready.set()

    async def aclose(self) -> None:
        """Write what is queued; a stream left open (the connection stopped before its answer
        ended) is closed with :data:`~adk_asgi.wire.encoding.SSE_CUT_SHORT`, so its readers do not
        wait forever."""
        self._closing = True
        self._wake()
        await self._task
        if self.stream_id is not None:
            await self._end(SSE_CUT_SHORT)

    async def _write(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            records, self._records = self._records, []
            try:
                await self._apply(records)
            except Exception as exc:
                log_failure("a live answer could not be recorded for resuming", exc)
                self.stream_id = None
            if self._closing and not self._records:
                return

    async def _apply(self, records: list[Record]) -> None:
        piece: list[bytes] = []
        for record in records:
            if record.begin:
                if self.stream_id is not None:  # (defensive: every stream ends before the next)
                    await self._end(b"".join(piece) + SSE_DONE)
                self.stream_id = await self.store.begin(self.key)
                piece = []
            piece.append(sse_events(record.chunks))
            if record.end:
                await self._end(b"".join(piece) + SSE_DONE)
                piece = []
        if piece and self.stream_id is not None:
            await self.store.append(self.key, self.stream_id, b"".join(piece))

    async def _end(self, tail: bytes) -> None:
        stream_id, self.stream_id = self.stream_id, None
        if stream_id is None:
            return
        await self.store.append(self.key, stream_id, tail)
        await self.store.end(self.key, stream_id)
