"""The app's ``request_state`` hook: request extras, checked by the app, into session state.

A client adds keys to the request body (``useChat({transport: new DefaultChatTransport({body})})``,
``sendMessage(message, {body})``); the bridge decodes them under its one JSON policy (the body
size limit, the nesting limit: :mod:`adk_asgi.wire.decoding`) and hands them to nobody else. The
hook is the app's word on them: it takes the keys it knows, checks them, and returns the
``state_delta`` the run starts with, so an instruction template (``{mode}``) or a tool
(``tool_context.state``) reads them. Nothing of the body reaches the session unless the hook returns
it.

The hook refuses a request by raising :class:`ValueError` (a ``422`` with its message: a
``msgspec.ValidationError`` or pydantic's is one) or :class:`~adk_asgi.errors.ClientError` (its
own status). What it returns is the server's, not the client's: a value that is not what a
session can store is the app's bug (``TypeError``), not a refusal.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeAlias

import msgspec

from adk_asgi.errors import ClientError
from adk_asgi.hitl.pending import PAYLOADS_KEY

RequestState: TypeAlias = Callable[
    [dict[str, Any], str], Mapping[str, Any] | Awaitable[Mapping[str, Any]]
]
"""``request_state(extras, user_id) -> state_delta`` (or an awaitable of it)."""

RESERVED_PREFIX: Final = "adk_asgi:"
"""The bridge's own keys in ``session.state`` (its bookkeeping): no hook writes them."""
PROTOCOL_EXTRAS: Final = frozenset({PAYLOADS_KEY})
"""Body keys the bridge reads itself: not the app's extras."""


async def state_delta(
    hook: RequestState, extras: Mapping[str, Any], user_id: str
) -> dict[str, Any]:
    """What ``hook`` writes into the session for a request that carries ``extras``; a 422
    :class:`ClientError` when it refuses them."""
    given = {k: v for k, v in extras.items() if k not in PROTOCOL_EXTRAS}
    try:
        result = hook(given, user_id)
        if inspect.isawaitable(result):
            result = await result
    except ClientError:
        raise
    except ValueError as exc:
        raise ClientError(422, str(exc) or "the request's extras are refused") from None
    return _checked(result)


def _checked(result: object) -> dict[str, Any]:
    if not isinstance(result, Mapping):
        raise TypeError(f"request_state returned {type(result).__name__}, not a mapping")
    delta = dict(result)
    for key in delta:
        if not isinstance(key, str):
            raise TypeError(f"request_state returned a key that is not a string: {key!r}")
        if key.startswith(RESERVED_PREFIX):
            raise TypeError(f"request_state may not write {key!r}: the bridge's own state")
    try:
        msgspec.json.encode(delta)  # what a session store cannot keep fails here, not there
    except (TypeError, msgspec.EncodeError) as exc:
        raise TypeError(f"request_state returned a value a session cannot store: {exc}") from None
    return delta
