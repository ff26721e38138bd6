"""No chat can be poisoned: a stored value that cannot be read back or sent to the model is
shown and sent as an error, and the chat goes on.

A chat's session holds values the bridge did not make: a browser tool's result, a server
tool's return value, an event another program wrote. One that is nested too deeply (or is not
JSON at all) used to break the chat for good: every later model request carried it, and ADK's
request tracing, the model client's serializer (pydantic stops at about 250 levels) or the
JSON encoder ran out of stack on it — an ``error`` chunk for every later message — and the
history page failed with it.

The guard is on the way *out* of the session first, where every stored value passes:

- :class:`ReadableRequests`, a plugin, looks at every function call and response of each
  model request (``before_model_callback``: after ADK built the request from the session,
  before the request is traced or serialized) and replaces one that :func:`readable` refuses
  with an error payload, so the model reads that the value was lost and answers.
- history (:mod:`.history`) shows such a result as the tool part's ``output-error``, and such
  an input as the reason, so the page loads.

Checking only as values are stored would leave every value stored before (by an older version,
another writer of the database) able to poison its chat. Storage is guarded too, as a second
line (:func:`make_readable`, from the bridge's session wrapper,
:mod:`adk_asgi.serving.session_handover`): a run's events are stored with what cannot be read back
already replaced, so a database does not refuse the run's event (an ``error`` chunk, a call left
without its result) and ADK's in-memory service, which copies a whole session on every read, never
holds a value that makes every read of its chat fail (one stored before is repaired there when a
read fails). A value only pydantic makes JSON of (a tool's pydantic model, which ADK keeps as it is)
is stored as that JSON, as a database would store it, so the stream and history can encode it.

The depth limit (:data:`MAX_DEPTH`) is above what a client's body may carry (64 levels, the
whole body included), so no value the bridge accepts is refused here, and well below where the
layers underneath fail (about 250 levels for pydantic; ADK's tracing takes two stack frames a
level, beside the server's own); the check is a walk that never recurses, so it cannot itself
run out of stack.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import pydantic_core
from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types
from pydantic_core import PydanticSerializationError

MAX_DEPTH: Final = 100
"""Levels of nesting a stored value may have."""

_ENCODE = msgspec.json.Encoder()
_NOT_JSON: Final = (TypeError, ValueError, OverflowError, msgspec.EncodeError)
_TOO_DEEP: Final = f"it is nested deeper than {MAX_DEPTH} levels"


def readable(value: Any) -> tuple[Any, str | None]:
    """``value`` as JSON carries it, and ``None``; or ``None`` and why it cannot be shown or
    sent to a model. A value JSON carries as it is is returned itself; one that only pydantic
    makes JSON of (a tool may return a pydantic model, which ADK keeps as it is, and a database
    stores as its JSON) is returned as that JSON, as a database would give it back."""
    try:
        try:
            encoded = _ENCODE.encode(value)
        except _NOT_JSON:
            value = pydantic_core.to_jsonable_python(value)
            encoded = _ENCODE.encode(value)
    except RecursionError:  # (an encoder ran out of stack: far deeper than the limit)
        return None, _TOO_DEEP
    except (*_NOT_JSON, PydanticSerializationError):
        return None, "it is not a JSON value"
    if encoded.count(b"{") + encoded.count(b"[") <= MAX_DEPTH:
        return value, None  # (fewer brackets than levels: not too deep, whatever strings hold)
    return (None, _TOO_DEEP) if _depth_exceeds(value, MAX_DEPTH) else (value, None)


def unreadable(value: Any) -> str | None:
    """Why ``value`` cannot be shown or sent to a model, or ``None`` when it can."""
    return readable(value)[1]


def lost_result(reason: str) -> str:
    """What the client and the model read instead of a result that cannot be read back."""
    return f"The stored result of this tool could not be read back: {reason}."


def lost_input(reason: str) -> str:
    """What the client and the model read instead of a call's input that cannot be read back."""
    return f"The stored input of this call could not be read back: {reason}."


def _depth_exceeds(value: object, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays deeper than ``limit``, without recursion."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class ReadableRequests(BasePlugin):
    """Replaces each function call or response of a model request that cannot be sent."""

    def __init__(self) -> None:
        super().__init__(name="adk_asgi_readable_requests")

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        contents = llm_request.contents
        for index, content in enumerate(contents):
            contents[index] = readable_content(content)
        return None


def readable_content(content: types.Content) -> types.Content:
    """``content``, or a copy of it (a new content and a new list of parts: ADK's requests
    share their parts' values with the session's events, which must not change) in which each
    call and response that cannot be read back is replaced by an error."""
    parts = content.parts or []
    readable = [_readable(part) for part in parts]
    if all(new is old for new, old in zip(readable, parts, strict=True)):
        return content
    return content.model_copy(update={"parts": readable})


def readable_event(event: Event) -> Event:
    """``event``, or a copy of it with its :func:`readable_content` (history shows what the
    model is told of a value it cannot read, never the value)."""
    if event.content is None:
        return event
    content = readable_content(event.content)
    return event if content is event.content else event.model_copy(update={"content": content})


def make_readable(event: Event) -> bool:
    """Give ``event`` its :func:`readable_content`; whether anything had to be replaced."""
    if event.content is None:
        return False
    readable = readable_content(event.content)
    if readable is event.content:
        return False
    event.content = readable
    return True


def _readable(part: types.Part) -> types.Part:
    response = part.function_response
    if response is not None:
        value, reason = readable(response.response)
        if reason is not None:
            value = {"error": lost_result(reason)}
        if value is not response.response:
            update = {"response": value}
            return part.model_copy(update={"function_response": response.model_copy(update=update)})
    call = part.function_call
    if call is not None:
        args, reason = readable(call.args)
        if reason is not None:
            args = {"error": lost_input(reason)}
        if args is not call.args:
            lost_call = call.model_copy(update={"args": args})
            return part.model_copy(update={"function_call": lost_call})
    return part
