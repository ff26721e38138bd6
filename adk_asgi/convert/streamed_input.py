"""A tool call's arguments as the model streams them: ADK's ``partial_args`` → JSON text deltas.

Models that stream a call's arguments (Vertex's ``stream_function_call_arguments``, ADK's
Anthropic, OpenAI and LiteLLM models) give ADK *paths and values*, not text: each partial event
carries a ``FunctionCall`` with ``will_continue=True`` and ``partial_args`` — ``$.city`` gets the
string piece ``"Bos"``, then ``"ton"``; ``$.days`` the number 3 — and the final event repeats the
whole call with its ``args`` (docs/internals/architecture.md#streaming-events). The AI SDK wants
text: its ``tool-input-delta`` chunks are pieces of one JSON document, which the client parses as
partial JSON after each piece (the part's ``input-streaming`` state).

So the arguments are rebuilt as ADK's own aggregator rebuilds them (its JSON path helpers), and
the text sent is always a prefix of their compact JSON (as :func:`.adk_values.to_json` writes
it) with the closing brackets — and the quote of a string still streaming — left off. A piece
of a string still streaming is sent as its escaped text alone. When the call completes, the
rest of the final ``args``' JSON is sent, so the pieces concatenated are exactly that JSON.

A model that goes back and changes what it streamed (a value replaced, a key revisited) cannot
be followed by appending text: that call's deltas stop there, and its final input is what the
client keeps (``tool-input-available`` sets the input whatever the text said).
"""

from __future__ import annotations

from typing import Any

from google.genai import types

from adk_asgi.adk.private import parse_json_path, set_value_by_json_path
from adk_asgi.convert.adk_values import to_json


def streams_arguments(call: types.FunctionCall) -> bool:
    """Whether a partial event's call is one whose arguments stream (ADK's own test, in
    ``StreamingResponseAggregator``): a call repeated whole in a partial event is not."""
    return bool(call.partial_args) or call.will_continue is not None


class StreamedInput:
    """The JSON text of one call's arguments sent so far, and the arguments it stands for."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.args: dict[str, Any] = {}
        self.text = ""
        """What the client was sent: always a prefix of the arguments' JSON."""
        self.lost = False
        """The model changed what it streamed: no more deltas for this call."""
        self._open: str | None = None
        """The path of the string still streaming, when it is the last value sent."""

    def feed(self, partial_args: list[types.PartialArg]) -> str:
        """The text to send for one partial event's pieces ('' for none)."""
        if self.lost or not partial_args:
            return ""
        first, open_path = partial_args[0], self._open
        more_text = len(partial_args) == 1 and first.string_value is not None
        if more_text and open_path is not None and first.json_path == open_path:
            return self._more_of_open_string(open_path, first)  # (the common case)
        last: list[str | int] = []
        open_string = False
        for piece in partial_args:
            if not piece.json_path:
                continue
            path = parse_json_path(piece.json_path)
            if not path:
                continue
            if piece.string_value is not None:
                current = self._value_at(path)
                before = current if isinstance(current, str) else ""
                set_value_by_json_path(self.args, path, before + piece.string_value)
                open_string = bool(piece.will_continue)
            elif (value := _scalar(piece)) is not _NO_VALUE:
                set_value_by_json_path(self.args, path, value)
                open_string = False
            else:  # (an empty object or list: ADK drops it too; the final JSON has it)
                continue
            last = path
            self._open = piece.json_path if open_string else None
        if not last:
            return ""
        whole = to_json(self.args)
        cut = len(last) + (1 if open_string else 0)
        candidate = whole[: len(whole) - cut]
        if not candidate.startswith(self.text):
            self.lost = True
            return ""
        delta = candidate[len(self.text) :]
        self.text = candidate
        return delta

    def rest(self, args: dict[str, Any]) -> str | None:
        """The text that completes the sent text as the final arguments' JSON; ``None`` when
        the sent text is not a prefix of it (the client then keeps the input it is given)."""
        whole = to_json(args)
        if self.lost or not whole.startswith(self.text):
            return None
        return whole[len(self.text) :]

    def _more_of_open_string(self, path: str, piece: types.PartialArg) -> str:
        piece_text = piece.string_value or ""
        parsed = parse_json_path(path)
        current = self._value_at(parsed)
        set_value_by_json_path(self.args, parsed, (current or "") + piece_text)
        delta = to_json(piece_text)[1:-1]  # (JSON escapes each character on its own)
        if not piece.will_continue:
            delta += '"'
            self._open = None
        self.text += delta
        return delta

    def _value_at(self, path: list[str | int]) -> Any:
        current: Any = self.args
        for key in path:
            found = (
                key in current
                if isinstance(key, str) and isinstance(current, dict)
                else isinstance(key, int) and isinstance(current, list) and 0 <= key < len(current)
            )
            if not found:
                return None
            current = current[key]
        return current


_NO_VALUE: Any = object()


def _scalar(piece: types.PartialArg) -> Any:
    """A piece's value other than a string, as ADK's aggregator reads it (``_NO_VALUE`` for
    a piece without one)."""
    if piece.number_value is not None:
        number = piece.number_value
        return int(number) if number.is_integer() else number
    if piece.bool_value is not None:
        return piece.bool_value
    if piece.null_value is not None:
        return None
    return _NO_VALUE
