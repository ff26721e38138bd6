"""The order in which the converter takes the events of agents that stream at once (sans-I/O).

The sub-agents of a ``ParallelAgent`` call their models at the same time, so over SSE the
partials of one model call arrive interleaved with other agents' events. A client shows a
model call as one step with one text part only if the call is shown whole, so while one call
streams (from its first partial to its final event, same ``event.id``) the events of other
agents are held, in order, and fed once it has ended — as history, which reads the stored
final events one after the other, shows them. Part of :class:`~.events.EventConverter`,
which decides what each event shows; this decides only *when* it is fed.
"""

from __future__ import annotations

from collections.abc import Callable

from google.adk.events.event import Event

from adk_asgi.wire.chunks import UIMessageChunk

Feed = Callable[[Event], list[UIMessageChunk]]


class ParallelCalls:
    """``feed``: what showing one event sends. ``live``: a live connection has no partials
    of its own model calls to keep together (its text is matched by step)."""

    def __init__(self, feed: Feed, *, live: bool) -> None:
        self._feed = feed
        self._live = live
        self._streaming_call: tuple[str, str] | None = None
        """The model call (event id, author) whose partials stream now (SSE), until its
        final event."""
        self._later_calls: list[Event] = []
        """Events of other model calls made meanwhile (parallel agents), held in order."""

    def feed(self, event: Event) -> list[UIMessageChunk]:
        """Show ``event`` now, or hold it until the call that streams has ended."""
        if self._must_wait(event, {e.author for e in self._later_calls}):
            self._later_calls.append(event)  # another agent's, under way at the same time
            return []
        out = self._feed_now(event)
        if self._streaming_call is None and self._later_calls:
            out += self._feed_later_calls()
        return out

    def end(self) -> list[UIMessageChunk]:
        """The response ends: a call cut short ends here, and what the others said is shown."""
        self._streaming_call = None
        return self._feed_later_calls()

    def _must_wait(self, event: Event, waiting: set[str]) -> bool:
        """Whether ``event`` is another agent's while a model call streams (over SSE), or
        comes after such an event of its agent (``waiting``: the agents with events held)."""
        streaming = self._streaming_call
        other = streaming is not None and event.author not in ("user", streaming[1])
        return other or event.author in waiting

    def _feed_now(self, event: Event) -> list[UIMessageChunk]:
        content = event.content
        if not self._live and content is not None and content.role == "model":
            # a model call streams from its first partial to its final event (same event.id)
            self._streaming_call = (event.id, event.author) if event.partial else None
        return self._feed(event)

    def _feed_later_calls(self) -> list[UIMessageChunk]:
        """What other agents did while a call streamed, in order, once it has ended: what
        one of them streamed meanwhile goes out at once."""
        out: list[UIMessageChunk] = []
        while self._streaming_call is None and self._later_calls:
            waiting, self._later_calls = self._later_calls, []
            held: set[str] = set()
            for event in waiting:
                if self._must_wait(event, held):
                    held.add(event.author)
                    self._later_calls.append(event)
                else:
                    out += self._feed_now(event)
        return out
