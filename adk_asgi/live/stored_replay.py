"""A live ``resume`` answered from the stream store, as frames (sans-I/O).

The store keeps a chat's active answer as the body of a UI message stream over SSE
(``data: <chunk>`` events, ``data: [DONE]`` last), whichever transport writes it: an SSE
request, or a live connection on any worker. A live client resuming on a new connection reads
it back as the frames of its ``resume`` request — ``start``, one ``chunk`` per event numbered
from 0, ``end`` — without the chunks being decoded: each event's JSON goes into its frame as it
was stored.
"""

from __future__ import annotations

import json

from adk_asgi.wire.sse_frames import DONE, SSEParser


class StoredReplay:
    """The frames of one ``resume`` request, from the stored pieces of the stream it follows.

    ``last_sequence``: the last chunk the client has (``lastSequence`` of its frame); those up
    to it are counted but not sent again. The stock clients send none: a replay starts at the
    message's ``start``, which every AI SDK client rebuilds the message from.
    """

    __slots__ = ("_events", "done", "last_sequence", "request_id", "sequence")

    def __init__(self, request_id: str, last_sequence: int | None = None) -> None:
        self.request_id = request_id
        self.last_sequence = -1 if last_sequence is None else last_sequence
        self.sequence = 0
        """The number the next chunk gets."""
        self.done = False
        """The stream's ``[DONE]`` was read."""
        self._events = SSEParser()

    def start(self) -> str:
        return self._frame("start")

    def end(self) -> str:
        return self._frame("end")

    def feed(self, piece: bytes) -> list[str]:
        """The chunk frames of the events that ``piece`` completes (an event may span pieces)."""
        frames: list[str] = []
        for payload in self._events.feed(piece):
            if payload == DONE:
                self.done = True
                continue
            if self.sequence > self.last_sequence:
                frames.append(
                    f'{{"type":"chunk","requestId":{json.dumps(self.request_id)},'
                    f'"sequence":{self.sequence},"chunk":{payload}}}'
                )
            self.sequence += 1
        return frames

    def _frame(self, kind: str) -> str:
        return json.dumps({"type": kind, "requestId": self.request_id}, separators=(",", ":"))
