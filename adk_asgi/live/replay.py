"""``resume`` requests of one live connection answered from the stream store (sans-I/O).

A new connection (a reloaded page) resumes an answer this connection has nothing of: it is
being written by the connection that is gone, which goes on until the answer ends
(:mod:`.connection`), into the stream store (:mod:`adk_asgi.stores.resumable`), maybe on another
worker. Each such ``resume`` asks the connection to read the store (:class:`~.outputs.Replay`) and
is fed the stored pieces back; :class:`~.stored_replay.StoredReplay` turns them into the
request's frames.
"""

from __future__ import annotations

from typing import Final

from adk_asgi.live.outputs import Output, Replay, StopReplay
from adk_asgi.live.stored_replay import StoredReplay
from adk_asgi.live.streams import Streams

REPLAYS: Final = 8
"""``resume`` requests read from the stream store at once (each a task following a stored
answer to its end); past this they are refused."""


class StoreReplays:
    """The ``resume`` requests of one connection being answered from the store."""

    __slots__ = ("out", "replays", "streams")

    def __init__(self, out: list[Output], streams: Streams) -> None:
        self.out = out
        self.streams = streams
        self.replays: dict[str, StoredReplay] = {}

    def resume(self, request_id: str, last_sequence: int | None) -> None:
        """A ``resume`` the connection has nothing for: read from the store (once per
        request, :data:`REPLAYS` at a time)."""
        if request_id in self.replays:
            self.streams.frame(type="no-active", requestId=request_id)
        elif len(self.replays) >= REPLAYS:
            error = f"more than {REPLAYS} resumes under way on this connection"
            self.streams.frame(type="error", requestId=request_id, errorText=error)
        else:
            self.replays[request_id] = StoredReplay(request_id, last_sequence)
            self.out.append(Replay(request_id))

    def started(self, request_id: str) -> None:
        """The store has an answer under way for the :class:`Replay` of ``request_id``."""
        replay = self.replays.get(request_id)
        if replay is not None:
            self.streams.send(replay.start())

    def replayed(self, request_id: str, piece: bytes) -> None:
        """The next stored piece of the answer a :class:`Replay` follows."""
        replay = self.replays.get(request_id)
        if replay is not None:
            for frame in replay.feed(piece):
                self.streams.send(frame)

    def ended(self, request_id: str, *, found: bool) -> None:
        """The stored answer ended (or, ``found`` False, there was none): the request ends."""
        replay = self.replays.pop(request_id, None)
        if replay is not None and found:
            self.streams.send(replay.end())
        elif replay is not None:
            self.streams.frame(type="no-active", requestId=request_id)

    def stop(self, request_id: str) -> None:
        """The client aborted ``request_id``: a replay of it stops reading the store."""
        if self.replays.pop(request_id, None) is not None:
            self.out.append(StopReplay(request_id))
