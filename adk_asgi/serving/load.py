"""How many answers this process streams at once, and how far that stretches write intervals.

Each stream gets the process's CPU in turn, so with many of them a stream's deltas come further
apart than its write interval, and every delta becomes a write (an SSE body write or a
WebSocket frame) of its own: about 50 µs of kernel, server and writer time for SSE, more for
a compressed frame (docs/internals/performance-notes.md). The interval grows with the streams of the
process, SSE and live alike, up to :data:`MAX_INTERVAL`, so writes keep grouping deltas under load.
One event loop per process: a plain counter needs no lock.
"""

from __future__ import annotations

from typing import Final

STREAMS_PER_INTERVAL: Final = 16
"""Streams of one process that share the write interval before it grows with them."""
MAX_INTERVAL: Final = 0.05
"""Seconds: how far the write interval grows under load (a 20 Hz refresh)."""

_streaming = 0


def stream_began() -> None:
    global _streaming
    _streaming += 1


def stream_ended() -> None:
    global _streaming
    _streaming -= 1


def streams() -> int:
    """Answers streaming in this process now."""
    return _streaming


def under_load(interval: float) -> float:
    """``interval`` stretched for the streams under way in this process."""
    if not interval or _streaming <= STREAMS_PER_INTERVAL:
        return interval
    return max(interval, min(MAX_INTERVAL, interval * _streaming / STREAMS_PER_INTERVAL))
