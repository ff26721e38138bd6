"""Chunk → bytes: JSON for one chunk, SSE events (framed by :mod:`.sse_frames`), and the v6/v7
gate, for chunks and for the messages of history (:func:`admit_messages`).

Kept apart from the chunk types so both transports share one encoder, and so the v6 gate sits at
the last point before the wire, where nothing can slip past it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from adk_asgi.wire.chunks import Error, Finish, UIMessageChunk, is_v7_only
from adk_asgi.wire.messages import ToolPart, UIMessage
from adk_asgi.wire.sse_frames import DONE, sse_event

SSE_HEADERS: Final[dict[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
SSE_DONE: Final = sse_event(DONE.encode())
SSE_KEEP_ALIVE: Final = b": keep-alive\n\n"
"""An SSE comment: every client ignores it; a proxy sees the stream is alive."""
_ENCODER: Final = msgspec.json.Encoder()


def sse_events(chunks: Iterable[UIMessageChunk]) -> bytes:
    """The SSE events of ``chunks``, encoded as they are (no v6 gate)."""
    return b"".join(sse_event(_ENCODER.encode(chunk)) for chunk in chunks)


CUT_SHORT: Final = "The answer was cut short: the server stopped writing it before it ended."
"""The error a stored answer ends with when its writer stopped before it did (a live connection
closed and its answer ran past the detached timeout; a worker died mid-answer)."""
SSE_CUT_SHORT: Final = sse_events([Error(error_text=CUT_SHORT), Finish()]) + SSE_DONE
"""What the readers of such an answer get after its last stored piece, instead of waiting
forever: the error, ``finish`` and ``[DONE]``."""


class ChunkEncoder:
    """Encodes chunks for one client, whose AI SDK major version decides what it may receive.

    A v6 client rejects every v7-only chunk type and the ``interrupted`` finish reason, and a
    rejected chunk puts the whole chat into its error state. So for a v6 client the encoder
    drops v7-only chunks and reports an ``interrupted`` finish as ``other``.
    """

    __slots__ = ("_encoder", "v7")

    def __init__(self, *, v7: bool = False) -> None:
        self.v7 = v7
        self._encoder = msgspec.json.Encoder()

    def admit(self, chunk: UIMessageChunk) -> UIMessageChunk | None:
        """The chunk as this client may receive it, or ``None`` when it must not see it."""
        if self.v7 or not is_v7_only(chunk):
            return chunk
        if isinstance(chunk, Finish):
            return msgspec.structs.replace(chunk, finish_reason="other")
        return None

    def json(self, chunk: UIMessageChunk) -> bytes:
        return self._encoder.encode(chunk)

    def sse(self, chunk: UIMessageChunk) -> bytes:
        """One SSE event (``data: <json>`` and the blank line every event needs), or ``b""``."""
        admitted = self.admit(chunk)
        if admitted is None:
            return b""
        return sse_event(self._encoder.encode(admitted))


def admit_messages(messages: list[UIMessage], *, v7: bool) -> list[UIMessage]:
    """History as a client of this version built it from the streams: for v6, without what the
    chunk gate kept from it (an automatic approval: the part shows its call and result only).
    Changes ``messages`` in place and returns them."""
    if v7:
        return messages
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolPart) and part.approval and part.approval.is_automatic:
                part.approval = None
    return messages
