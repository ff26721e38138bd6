"""Server-sent events, written and read (sans-I/O): the one place the SSE framing lives.

A UI message stream is SSE: each chunk one ``data: <json>`` event, ``data: [DONE]`` last. The
bridge writes it (an SSE response, and the stream store, which keeps every answer in that form
whichever transport streams it) and reads it back (a live ``resume`` of a stored answer; the
test client). Both directions sit here, so what is written and what is read cannot drift.

The reader follows the parser the AI SDK client reads the stream with (``eventsource-parser``'s
``EventSourceParserStream``, itself the WHATWG rules): lines end with LF, CR or CRLF, a blank
line ends an event, ``data`` lines are joined with LF, comments (``:``) and other fields are
skipped, an event with no ``data`` line is none, and an event left unfinished when the body
ends is dropped.
"""

from __future__ import annotations

import codecs
from typing import Final

DONE: Final = "[DONE]"
"""The data of the UI message stream's last event."""


def sse_event(data: bytes) -> bytes:
    """One SSE event carrying ``data`` (one line: JSON never holds a raw line break)."""
    return b"data: " + data + b"\n\n"


class SSEParser:
    """Reads an SSE body piece by piece: :meth:`feed` returns the data of each event that the
    piece completes (an event, a line, even a UTF-8 character may span pieces)."""

    __slots__ = ("_data", "_decoder", "_rest", "_started")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._rest = ""
        """The text after the last complete line."""
        self._data: list[str] | None = None
        """The ``data`` lines of the event being read, ``None`` before its first."""
        self._started = False

    def feed(self, piece: bytes | str) -> list[str]:
        text = self._decoder.decode(piece) if isinstance(piece, bytes) else piece
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        text = self._rest + text
        if "\r" in text:
            held = text.endswith("\r")  # maybe the first half of a CRLF: wait for the next piece
            text = text[:-1] if held else text
            text = text.replace("\r\n", "\n").replace("\r", "\n") + ("\r" if held else "")
        *lines, self._rest = text.split("\n")
        events: list[str] = []
        for line in lines:
            if not line:
                if self._data is not None:
                    events.append("\n".join(self._data))
                    self._data = None
                continue
            field, _, value = line.partition(":")
            if field == "data":
                value = value.removeprefix(" ")
                if self._data is None:
                    self._data = [value]
                else:
                    self._data.append(value)
        return events


def sse_data(body: bytes | str) -> list[str]:
    """The data of every event of a whole body, in order (``[DONE]`` included)."""
    return SSEParser().feed(body)
