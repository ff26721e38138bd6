"""What JSON the bridge takes from a client, for both transports: one policy, checked first.

A body (``POST /chat``) or a frame (``WS /live``) is refused before any work when it is JSON
the rest of the stack cannot take:

- not valid UTF-8 (msgspec raises ``UnicodeDecodeError`` for it inside a string or a key, which
  is neither of its own errors);
- a number out of range (``1e400``: msgspec refuses it, as it does an integer past 64 bits; a
  float this large would be ``inf``, which no JSON encoder writes back);
- nested deeper than :data:`MAX_DEPTH`. msgspec decodes ``Any`` fields (extras, metadata, data
  parts, tool input and output) recursively and raises ``RecursionError`` near the
  interpreter's limit; nesting short of that still reaches ADK, whose session (pydantic, the
  database's JSON) and history fail on it later, on every read of the chat;
- a string holding NUL (``\\u0000``): PostgreSQL cannot store it (JSONB and text refuse it),
  so a chat holding one could no longer be saved.

The depth is read by :func:`json_depth`, a scan at C speed (``bytes`` methods only) that costs
next to nothing for the usual body (fewer brackets than the limit: two ``count`` calls).
"""

from __future__ import annotations

from array import array
from itertools import accumulate
from typing import Any, Final, TypeVar

import msgspec

from adk_asgi.errors import ClientError

MAX_DEPTH: Final = 64
"""The deepest nesting of arrays and objects a body or frame may hold, the outermost object
counted: the protocol needs about 6 (body, messages, message, parts, part, value); the rest is
for the values a client passes through (tool input and output, data parts, metadata)."""

READABLE_DEPTH: Final = 256
"""The deepest nesting decoded at all to read what can be read of JSON that is refused (a live
frame's ``requestId``, named in its ``error`` frame). Past it the JSON is refused unread: how
deep msgspec decodes is the interpreter's recursion limit (about 1,000 levels on Python 3.11,
1,500 on 3.12, 10,000 on 3.13), so a frame would otherwise be named on one Python and not on
another."""

_KEPT: Final = b'"[]{}'
_DROPPED: Final = bytes(b for b in range(256) if b not in _KEPT)
_OPENERS_CLOSERS: Final = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")
"""An opener as 1, a closer as -1 (``0xff`` read as a signed byte); quotes stay."""

OFF_LOOP: Final = 64 * 1024
"""A body or frame longer than this is decoded off the event loop (``asyncio.to_thread``): a
4 MiB body of small parts takes about 100 ms to decode, which every other client would wait."""

T = TypeVar("T")


class BadJson(ClientError, ValueError):
    """JSON the bridge does not take (see the module; 400); the message says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(400, reason)


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in ``data``, which should be JSON.

    Brackets inside strings do not count. Escapes are dropped first (``\\\\``, then
    ``\\"``), so every quote left opens or closes a string; then everything but quotes and
    brackets, and every two quotes side by side (a string with no bracket in it: removing them
    keeps every other quote's parity); what is left is mostly brackets, and the few strings
    that hold brackets are cut out between every other quote. The depth is the highest sum
    of the +1s and -1s. Measured (docs/internals/performance-notes.md): about 1.4 ms per MB for a
    body of 125,000 text parts, 13.5 ms per MB at worst (a body of brackets only). For JSON that is
    not valid the answer is meaningless, which is harmless: the decoder refuses it anyway.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    steps = data.translate(_OPENERS_CLOSERS, delete=_DROPPED).replace(b'""', b"")
    if b'"' in steps:
        steps = b"".join(steps.split(b'"')[::2])
    return max(accumulate(array("b", steps)), default=0)


_TOO_DEEP: Final = f"the JSON is nested deeper than {MAX_DEPTH} levels"


def _deeper_than(data: bytes, limit: int) -> bool:
    openers = data.count(b"[") + data.count(b"{")  # the depth's bound, at memchr speed
    return openers > limit and json_depth(data) > limit


def check_readable(data: bytes) -> None:
    """Refuse JSON nested deeper than :data:`READABLE_DEPTH` (with :func:`check_json`'s
    reason), before anything decodes it."""
    if _deeper_than(data, READABLE_DEPTH):
        raise BadJson(_TOO_DEEP)


def check_json(data: bytes) -> None:
    """Refuse what decoding would not catch, or would catch too late: bytes that are not
    UTF-8 (msgspec never reads the keys it skips), deep nesting, NUL."""
    try:
        data.decode()  # ~0.1 ms per MB of ASCII
    except UnicodeDecodeError:
        raise BadJson("the JSON is not valid UTF-8") from None
    if _deeper_than(data, MAX_DEPTH):
        raise BadJson(_TOO_DEEP)
    if b"\\u0000" in data and b"\\u0000" in data.replace(b"\\\\", b""):
        raise BadJson("a string holds NUL (\\u0000), which cannot be stored")


def decode(decoder: msgspec.json.Decoder[T], data: bytes | str | msgspec.Raw) -> T:
    """``decoder.decode(data)``, with the errors msgspec raises besides its own
    (``UnicodeDecodeError``, ``RecursionError``) as :class:`msgspec.DecodeError`, and a number
    out of range as :class:`BadJson`, so callers catch one family."""
    try:
        return decoder.decode(data)
    except UnicodeDecodeError:
        raise msgspec.DecodeError("the JSON is not valid UTF-8") from None
    except RecursionError:
        raise BadJson(_TOO_DEEP) from None
    except msgspec.ValidationError as exc:
        if str(exc).startswith(("Number out of range", "Integer value out of range")):
            raise BadJson(f"a number is out of range: {exc}") from None
        raise


ANY: Final = msgspec.json.Decoder()


def decode_any(data: bytes | str | msgspec.Raw) -> Any:
    """A JSON value of any shape, under the same policy."""
    return decode(ANY, data)
