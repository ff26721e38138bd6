"""Which model call an SSE event belongs to (sans-I/O): the key that ties the partial events of
one model call to its final event.

ADK gives the partial events of a model call and its final event one id, and mints a new id
after every complete event it yields (``BaseLlmFlow._run_one_step_async``). A response
processor that yields a complete event between them so gives the final event an id of its
own: ADK's built-in code executor does, before every final event (with the images it saved as
artifacts). That final event still ends the call its partials streamed: it must complete their
text, not show it again.
"""

from __future__ import annotations

from google.adk.events.event import Event


class ModelCalls:
    """The keys of one response's model calls, by author (agents of a tree stream at once)."""

    def __init__(self) -> None:
        self._streaming: dict[str, str] = {}
        """The id each author's partials stream under, until their final event."""
        self._renamed: dict[str, str] = {}
        """The calls whose final event will come under a new id: author → the partials' id."""

    def partial(self, event: Event) -> str:
        self._streaming[event.author] = event.id
        return event.id

    def between(self, event: Event) -> None:
        """A complete event with no content (a response processor's) from an author whose
        partials stream: their final event comes under another id."""
        streaming = self._streaming.get(event.author)
        if streaming is not None and streaming != event.id:
            self._renamed[event.author] = streaming

    def final(self, event: Event) -> str:
        """The key of a complete event with content: its own id, or that of the partials it
        ends."""
        self._streaming.pop(event.author, None)
        return self._renamed.pop(event.author, event.id)
