"""Merging a live response's text deltas into fewer frames (sans-I/O but for a timer).

Each WebSocket frame costs far more (the hand-off to the writer, one socket write, the
client's parse) than making a delta does (docs/performance.md, "Live mode"), so a delta that
follows another within ``interval`` seconds waits for the rest of the interval and goes out
merged with the deltas of the same block that arrive meanwhile. The first delta after a quiet
interval goes out at once; the owner flushes before sending any other frame, so order is kept.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec

from .chunks import ReasoningDelta, TextDelta, UIMessageChunk

Stream = TypeVar("Stream")
"""Whatever the owner sends a chunk on (the live bridge: a response)."""


class DeltaCoalescer(Generic[Stream]):
    def __init__(self, interval: float, send: Callable[[Stream, UIMessageChunk], None]) -> None:
        self.interval = interval
        self._send = send
        self._held: tuple[Stream, TextDelta | ReasoningDelta] | None = None
        self._quiet_at = 0.0  # monotonic time from which a delta goes out at once
        self._timer: asyncio.TimerHandle | None = None

    def deliver(self, stream: Stream, chunk: UIMessageChunk) -> None:
        """Send ``chunk`` on ``stream`` now, or hold it to merge (a text or reasoning delta)."""
        if not self.interval or not isinstance(chunk, TextDelta | ReasoningDelta):
            self.flush()
            self._send(stream, chunk)
            return
        held = self._held
        if held is not None and _same_block(held, stream, chunk):
            merged = msgspec.structs.replace(held[1], delta=held[1].delta + chunk.delta)
            self._held = (stream, merged)
            return
        self.flush()
        now = time.monotonic()
        if now >= self._quiet_at:
            self._send(stream, chunk)
            self._quiet_at = now + self.interval
            return
        self._held = (stream, chunk)
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._quiet_at - now, self._on_time)

    def flush(self) -> None:
        """Send what is held (before any other frame goes out)."""
        held, self._held = self._held, None
        self._cancel_timer()
        if held is not None:
            self._send(*held)

    def drop(self, stream: Stream) -> None:
        """``stream`` stops (its request went away): what it holds is not sent."""
        if self._held is not None and self._held[0] is stream:
            self._held = None
            self._cancel_timer()

    def close(self) -> None:
        self._held = None
        self._cancel_timer()

    def _on_time(self) -> None:
        self._timer = None
        self.flush()
        self._quiet_at = time.monotonic() + self.interval

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _same_block(
    held: tuple[object, TextDelta | ReasoningDelta],
    stream: object,
    chunk: TextDelta | ReasoningDelta,
) -> bool:
    return held[0] is stream and type(held[1]) is type(chunk) and held[1].id == chunk.id
