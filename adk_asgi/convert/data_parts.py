"""App-defined ``data-<name>`` parts: checked, carried in an event, and placed (sans-I/O).

A tool or a callback sends a part with :func:`adk_asgi.send_data` (:mod:`adk_asgi.serving.
data_parts`). The part travels as an event of its own through ADK's event queue, so it reaches
the stream in the order it was sent (before the tool's result) and, unless it is
``transient``, is stored by ADK in the session at that very place: history rebuilds it where
the stream showed it. The event carries the part in the bridge's bookkeeping
(``Tags.data_part``) and nothing else (no content: the model never sees it).

The AI SDK's reducer (ai@6 and ai@7 ``processUIMessageStream``) keeps a transient chunk out of
the message (only ``onData`` sees it), and updates a part with the same ``type`` and ``id``
in place rather than adding one; :func:`place` does the same for history.

What is sent is checked here, once, before anything travels: a name the AI SDK's
``data-`` parts take, JSON data (what the client gets is what is stored: the data is
round-tripped through JSON), bounded in size.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec
from google.adk.events.event import Event

from adk_asgi.convert.failures import ERROR_PART
from adk_asgi.errors import AdkAsgiError
from adk_asgi.hitl import bookkeeping
from adk_asgi.wire.chunks import DataChunk, UIMessageChunk
from adk_asgi.wire.decoding import BadJson, check_json, decode_any

NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A part's name: the ``<name>`` of ``data-<name>``, as a key of the AI SDK's ``dataPartSchemas``
(letters, digits, ``_`` and ``-``; at most 64 characters)."""
RESERVED: Final = frozenset({ERROR_PART.removeprefix("data-"), "transcript"})
"""Names the bridge sends itself (a failure, a live transcript)."""
MAX_ID: Final = 256
MAX_DATA_BYTES: Final = 64 * 1024
"""A part's data as JSON, at most: it is stored in the session with the chat."""
_ENCODER: Final = msgspec.json.Encoder()


class DataPartError(AdkAsgiError, ValueError):
    """A data part no client could take, or one too big to store: the app's mistake."""


def data_chunk(
    name: str, data: Any, *, id: str | None = None, transient: bool = False
) -> DataChunk:
    """The ``data-<name>`` chunk of a part, checked (:class:`DataPartError` otherwise)."""
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        raise DataPartError(
            f"a data part's name is 1 to 64 letters, digits, '_' or '-', not {name!r}"
        )
    if name in RESERVED:
        raise DataPartError(f"data-{name} parts are the bridge's own")
    if id is not None and (not isinstance(id, str) or not 0 < len(id) <= MAX_ID):
        raise DataPartError(f"a data part's id is a string of 1 to {MAX_ID} characters")
    if not isinstance(transient, bool):
        raise DataPartError("transient is True or False")
    if data is None:
        raise DataPartError("a data part needs data (null is no data)")
    try:
        encoded = _ENCODER.encode(data)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DataPartError(f"a data part's data must be JSON: {exc}") from None
    if len(encoded) > MAX_DATA_BYTES:
        raise DataPartError(f"a data part's data is at most {MAX_DATA_BYTES} bytes of JSON")
    try:
        check_json(encoded)
        shown = decode_any(encoded)  # what the client and history will have (tuples → lists)
    except (BadJson, msgspec.DecodeError) as exc:
        raise DataPartError(f"a data part's data must be JSON: {exc}") from None
    return DataChunk(type=f"data-{name}", data=shown, id=id, transient=True if transient else None)


def record(chunk: DataChunk) -> dict[str, Any]:
    """The bookkeeping of the event that carries ``chunk``."""
    raw: dict[str, Any] = msgspec.to_builtins(chunk)
    return raw


def chunk_of(event: Event) -> DataChunk | None:
    """The data part an event carries, or ``None`` (an event that is none)."""
    raw = bookkeeping.data_part(event)
    if raw is None:
        return None
    try:
        return msgspec.convert(raw, DataChunk)
    except (msgspec.ValidationError, ValueError):
        return None  # not one the bridge wrote


def shown_now(
    event: Event, held_calls: list[tuple[str, list[UIMessageChunk]]], *, live: bool
) -> list[UIMessageChunk] | None:
    """What the converter shows of an event that is a data part (``None``: it is none).

    Over SSE a step's later calls may be held until the next event shows whether they ask
    approvals (:class:`~.events.EventConverter`): a part sent meanwhile joins them, after the
    last, as its event is stored after theirs. Live mode shows a part when it is sent, from
    the tool pipeline (:mod:`adk_asgi.live.waits`), not from its event.
    """
    chunk = chunk_of(event)
    if chunk is None:
        return None
    if live:
        return []
    if held_calls:
        held_calls.append(("", [chunk]))
        return []
    return [chunk]


def in_sent_order(events: list[Event]) -> list[Event]:
    """``events`` with each data part's event moved back before the events of its message
    that were made after it was sent.

    Over SSE the runner stores the events of its queue in order. A live run drains two
    sources at once (the agent's own events, and the queue a part goes on), and a model that
    answers at once can have its answer stored before a part sent just before it (a model
    callback's, as ADK screens the user's content): the part belongs where it was sent, and
    the stream showed it there (:mod:`adk_asgi.serving.data_parts`).
    """
    ordered: list[Event] = []
    for event in events:
        tags = bookkeeping.read(event) if bookkeeping.data_part(event) is not None else None
        at = len(ordered)
        while tags is not None and at > 0:
            before = ordered[at - 1]
            if before.timestamp <= event.timestamp or bookkeeping.data_part(before) is not None:
                break
            if bookkeeping.read(before).message_id != tags.message_id:
                break
            at -= 1
        ordered.insert(at, event)
    return ordered
