"""Merging a live response's text deltas into fewer frames (sans-I/O).

Each WebSocket frame costs far more (the hand-off to the writer, one socket write, the
client's parse) than making a delta does (docs/internals/performance-notes.md, "Live mode"), so a
delta that follows another within ``interval`` seconds waits for the rest of the interval and goes
out merged with the deltas of the same block that arrive meanwhile. Merging only starts once text
is flowing: the first delta of an answer, and the first after a pause (no delta for an
interval, however recent the last frame), go out at once, since the user waits for those words
and nothing could be merged with them. The owner flushes before sending any other frame, so
order is kept.

No timer lives here: the caller passes the time in, reads :attr:`deadline`, and calls
:meth:`tick` when it is reached, so tests drive it with a fake clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec

from adk_asgi.wire.chunks import ReasoningDelta, TextDelta, UIMessageChunk

Stream = TypeVar("Stream")
"""Whatever the owner sends a chunk on (the live protocol: a response)."""

Due = list[tuple[Stream, UIMessageChunk]]
"""Chunks to send now, in order, each with its stream."""


class DeltaCoalescer(Generic[Stream]):
    """``under_load``: the interval for the load of the moment
    (:func:`adk_asgi.serving.load.under_load` in a server); ``None``: the interval as it is."""

    def __init__(self, interval: float, under_load: Callable[[float], float] | None = None) -> None:
        self.interval = interval
        self._under_load = under_load or float
        self._held: tuple[Stream, TextDelta | ReasoningDelta] | None = None
        self._quiet_at = 0.0  # clock time from which a delta goes out at once
        self._span = 0.0  # the interval the last frame started (stretched by load); 0: none
        self._arrived = -math.inf  # clock time of the last delta: after a pause, at once
        self.deadline: float | None = None
        """When the held delta is due (:meth:`tick`), or ``None`` when nothing is held."""

    def deliver(self, stream: Stream, chunk: UIMessageChunk, now: float) -> Due[Stream]:
        """What to send now for ``chunk`` on ``stream``: it, or nothing while it is held to be
        merged (a text or reasoning delta), with anything held before it."""
        if not self.interval or not isinstance(chunk, TextDelta | ReasoningDelta):
            return [*self.flush(), (stream, chunk)]
        paused, self._arrived = now - self._arrived >= self._span, now
        held = self._held
        if held is not None and _same_block(held, stream, chunk):
            merged = msgspec.structs.replace(held[1], delta=held[1].delta + chunk.delta)
            self._held = (stream, merged)
            return []
        due = self.flush()
        if paused or now >= self._quiet_at:
            self._start(now)
            return [*due, (stream, chunk)]
        self._held = (stream, chunk)
        self.deadline = self._quiet_at
        return due

    def flush(self) -> Due[Stream]:
        """What is held, to send before any other frame goes out."""
        held, self._held = self._held, None
        self.deadline = None
        return [] if held is None else [held]

    def tick(self, now: float) -> Due[Stream]:
        """What is due by ``now``."""
        if self.deadline is None or now < self.deadline:
            return []
        self._start(now)
        return self.flush()

    def _start(self, now: float) -> None:
        """A frame of deltas goes out at ``now``: the next waits out an interval."""
        self._span = self._under_load(self.interval)
        self._quiet_at = now + self._span

    def drop(self, stream: Stream) -> None:
        """``stream`` stops (its request went away): what it holds is not sent."""
        if self._held is not None and self._held[0] is stream:
            self._held = None
            self.deadline = None


def _same_block(
    held: tuple[object, TextDelta | ReasoningDelta],
    stream: object,
    chunk: TextDelta | ReasoningDelta,
) -> bool:
    return held[0] is stream and type(held[1]) is type(chunk) and held[1].id == chunk.id
