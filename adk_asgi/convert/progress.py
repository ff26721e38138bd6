"""What a running tool tells the user before its result: ADK's progress messages (sans-I/O).

A generator tool reports progress by yielding ``Event(message="Fetching weather…")`` before
its result (``yield {"temp": 20}``, its last yield). Over ``run_async`` ADK runs it as a
workflow node inside the call (``FunctionTool._run_generator_as_node``) and each message is an
event of its own, stored in the session, on the call's branch ``…<tool>@<call id>``, with the
role ``user`` (``FunctionNode._to_event``); the result follows as the call's function
response. The AI SDK's name for such a message is a *preliminary* output: the stream sends
each one as ``tool-output-available`` with ``preliminary: true`` on the call's part, and the
result replaces it (docs/hitl.md#progress-while-a-tool-runs). History shows the result only,
as the client is left with once the result came.

A message is text. A preliminary output may be any JSON value, as the AI SDK's own tools yield
(``yield {"state": "loading"}``): a generator tool yields :func:`preliminary` (an event with
no content, which ADK stores on the call's branch as it stores a message, and the model never
sees; the value rides in the bridge's bookkeeping). A tool cannot yield the value itself: ADK
takes each yielded value that is not an event as the node's output, and a node has one.

In live mode ADK answers an async-generator tool's call at once with a pending status (its
function response, stored) and sends the tool's yields to the model only; its messages come
after that response, so there is nothing left for them to precede (docs/hitl.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec
from google.adk.events.event import Event

from adk_asgi.errors import AdkAsgiError
from adk_asgi.hitl import bookkeeping
from adk_asgi.wire.decoding import BadJson, check_json, decode_any

MAX_OUTPUT_BYTES: Final = 64 * 1024
"""A preliminary output as JSON, at most: it is stored in the session with the chat."""
_ENCODER: Final = msgspec.json.Encoder()


class PreliminaryOutputError(AdkAsgiError, ValueError):
    """A preliminary output that is not JSON, or too big to store: the app's mistake."""


def preliminary(output: Any) -> Event:
    """The event a generator tool yields to show ``output`` (any JSON value) as its call's
    preliminary output, until the next one or its result replaces it::

        async def get_forecast(city: str) -> AsyncGenerator[Event | dict[str, Any], None]:
            yield preliminary({"state": "loading"})
            yield {"state": "ready", "temperature": 20}

    The value is checked here (:class:`PreliminaryOutputError`): JSON, at most
    :data:`MAX_OUTPUT_BYTES`; the client gets it as it comes back from JSON (tuples as lists)."""
    try:
        encoded = _ENCODER.encode(output)
    except (TypeError, ValueError, OverflowError) as exc:
        raise PreliminaryOutputError(f"a preliminary output must be JSON: {exc}") from None
    if len(encoded) > MAX_OUTPUT_BYTES:
        raise PreliminaryOutputError(
            f"a preliminary output is at most {MAX_OUTPUT_BYTES} bytes of JSON"
        )
    try:
        check_json(encoded)
        shown = decode_any(encoded)
    except (BadJson, msgspec.DecodeError) as exc:
        raise PreliminaryOutputError(f"a preliminary output must be JSON: {exc}") from None
    tags = bookkeeping.with_tags(None, preliminary=bookkeeping.Preliminary(output=shown))
    return Event(custom_metadata=tags)


@dataclass(frozen=True, slots=True)
class Progress:
    """A preliminary output of the call ``call_id`` (ADK's id) of the tool ``tool``: a
    message's text, or the value :func:`preliminary` carries. ``shown``: there is something to
    show (a message with no text has not)."""

    call_id: str
    tool: str
    output: Any
    shown: bool = True


def progress_of(event: Event) -> Progress | None:
    """The preliminary output ``event`` is, or ``None``: a complete event on a tool call's
    branch, not the user's own, with no output, that is either a :func:`preliminary` or a
    message for the user (role ``user``, with no function call or response). A message's text
    is the progress shown; its other parts (a file) are not."""
    if event.partial or event.author == "user" or event.output is not None or not event.branch:
        return None
    *_, segment = event.branch.split(".")
    tool, at, call_id = segment.partition("@")
    if not (tool and at and call_id):
        return None
    value = bookkeeping.preliminary(event)
    content = event.content
    if value is not None and content is None:
        return Progress(call_id=call_id, tool=tool, output=value.output)
    if content is None or content.role != "user" or not content.parts:
        return None
    if any(part.function_call or part.function_response for part in content.parts):
        return None
    text = "".join(part.text for part in content.parts if part.text)
    return Progress(call_id=call_id, tool=tool, output=text, shown=bool(text))
