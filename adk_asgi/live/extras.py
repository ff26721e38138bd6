"""A live ``send`` frame's request, decoded before the protocol machine takes it, and its
extras given to the app's ``request_state`` hook (:mod:`adk_asgi.serving.request_state`).

The transports carry the extras in the frame's ``body`` (the stock ``WebSocketChatTransport``
and ``transport.js`` both send ``{type: "send", …, body: {...transport body, ...sendMessage's
body}}``): the hook gets that object, as it gets the body's extra keys over SSE. The hook may
be async, so the connection asks it here, as it reads the frame (in frame order: a later frame
waits), and the machine gets the request with the hook's answer in ``state``; the user's turn
carries it to ADK (``LiveRequest.state_delta``, :mod:`.turns`), which writes it into the live
invocation's own session with the user's message, before the model gets the message; the
state of the message that opens the session is written before ``run_live`` starts, too
(:mod:`.session`), since the Live API takes the instruction once, as it connects. A
refusal is the request's :class:`~adk_asgi.errors.ClientError`: the machine answers it with an
``error`` frame and the connection goes on.

Only a new user message asks the hook. A continuation's answers release tools that are
already waiting in the running turn, so there is no point before them where a state written
now would be read; its extras stay ignored (docs/sse.md#request-extras).
"""

from __future__ import annotations

from collections.abc import Callable

from adk_asgi.errors import ClientError
from adk_asgi.serving.checks import check_chat, decode_send_frame, frame_head
from adk_asgi.serving.request_state import RequestState, state_delta
from adk_asgi.wire.messages import ChatRequest

Decoded = ChatRequest | ClientError | None
"""A frame's request, why it is refused, or ``None``: not a ``send`` (or not one that
decodes far enough to say so; the machine reports that itself)."""


def decode_send(text: str) -> Decoded:
    """A text frame's request when it is a ``send`` (or why it is refused); a long frame's
    runs off the event loop."""
    try:
        head = frame_head(text)
        return decode_send_frame(text) if head is not None and head[0] == "send" else None
    except ClientError as exc:
        return exc


async def with_request_state(
    hook: RequestState,
    user_id: str,
    chat: ChatRequest,
    failed: Callable[[Exception], ClientError],
) -> ChatRequest | ClientError:
    """A ``send`` frame's request with what ``hook`` makes of its ``body`` in
    :attr:`~ChatRequest.state`, when it carries a user message; the hook's refusal instead.
    The request is checked first, as over SSE: the hook never sees one the bridge refuses.
    ``failed``: the refusal when the hook raises (``on_error``'s words,
    :mod:`adk_asgi.serving.app_hooks`)."""
    if not chat.messages or chat.messages[-1].role != "user":
        return chat  # a continuation, or a request the machine refuses itself
    if chat.trigger == "regenerate-message":
        return chat  # refused by the machine (no regenerate in live mode)
    body = chat.extra.get("body")
    try:
        check_chat(chat)
        chat.state = await state_delta(hook, body if isinstance(body, dict) else {}, user_id)
    except ClientError as exc:
        return exc
    except Exception as exc:  # the app's bug (a 500 over SSE): this request fails, the others go on
        return failed(exc)
    return chat
