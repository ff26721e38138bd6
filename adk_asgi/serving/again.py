"""A user message sent again: regenerated, edited, or sent by a client that keeps no chat.

The stock client says so (``trigger: "regenerate-message"``, or ``messageId`` naming the
message it replaces). A client that sends only the last message (the AI SDK persistence
guide's ``prepareSendMessagesRequest``, which drops both) is read by the session instead: a
user message whose id the session holds is that message again — its ``regenerate()`` sends
the user message before the answer it drops, its edit keeps the message's id. A regenerate may
also send no message at all: the session holds it (``messageId``, or the chat's last one).

Either way the session goes back to before the message's invocation (``Runner.rewind_async``:
its answer, and everything after, leave the model's context and the history), to be answered
anew (docs/internals/architecture.md#sse-request).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from adk_asgi.errors import ClientError
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.pending import user_turn, visible_events
from adk_asgi.serving.services import Services
from adk_asgi.wire.messages import ChatRequest


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A user message as the session holds it: the client's id, what the model was given,
    and the invocation that answered it."""

    message_id: str
    content: types.Content
    invocation_id: str
    metadata: Any = None


def stored_message(events: Iterable[Event], message_id: str | None) -> StoredMessage | None:
    """The stored user message ``message_id`` names: a user message's id, an assistant
    message's id (the message it answers), or ``None`` (the chat's last user message)."""
    users: list[StoredMessage] = []
    answered: str | None = None  # the invocation of the assistant message, when named
    for event in visible_events(events):
        tags = bookkeeping.read(event)
        if event.author == "user" and event.content and tags.user_message_id is not None:
            users.append(
                StoredMessage(
                    tags.user_message_id, event.content, event.invocation_id, tags.user_metadata
                )
            )
        elif answered is None and message_id is not None and tags.message_id == message_id:
            answered = event.invocation_id
    for message in reversed(users):
        if message_id is None or message.message_id == message_id:
            return message
        if message.invocation_id == answered:
            return message
    return None


async def session_for(services: Services, user_id: str, chat: ChatRequest) -> Session:
    """The session the new user message (``chat``'s last) goes to, rewound first when it is
    a message sent again."""
    message = chat.messages[-1]
    asked = chat.trigger == "regenerate-message" or chat.message_id == message.id
    if not asked and not chat.last_only:
        return await services.open_session(user_id, chat.id)
    session = await services.session(user_id, chat.id)
    invocation_id = None if session is None else user_turn(session.events, message.id)
    if session is None or invocation_id is None:
        if chat.trigger == "regenerate-message":
            raise ClientError(409, f"message {message.id!r} is not in this chat")
        # an edit of a message the chat never stored, or a new message: as it is
        return session or await services.open_session(user_id, chat.id)
    return await _rewound(services, user_id, session, message.id, invocation_id)


async def regenerated(
    services: Services, user_id: str, chat: ChatRequest
) -> tuple[Session, StoredMessage]:
    """A regenerate that sent no message: the stored message it names, and the session
    rewound to before it."""
    session = await services.session(user_id, chat.id)
    stored = None if session is None else stored_message(session.events, chat.message_id)
    if session is None or stored is None:
        named = "no message" if chat.message_id is None else f"no message {chat.message_id!r}"
        raise ClientError(409, f"this chat has {named} to regenerate")
    rewound = await _rewound(services, user_id, session, stored.message_id, stored.invocation_id)
    return rewound, stored


async def _rewound(
    services: Services, user_id: str, session: Session, message_id: str, invocation_id: str
) -> Session:
    turns = [
        e
        for e in visible_events(session.events)
        if e.invocation_id == invocation_id and e.author == "user" and _says_something(e)
    ]
    if len(turns) > 1:  # a live connection is one invocation: ADK rewinds it whole
        raise ClientError(409, f"message {message_id!r} was sent live: it cannot be redone")
    await services.runner.rewind_async(
        user_id=user_id, session_id=session.id, rewind_before_invocation_id=invocation_id
    )
    return await services.open_session(user_id, session.id)


def _says_something(event: Event) -> bool:
    """A user message, not an answer to a call: a continuation's answers (approvals, browser
    results) are stored as user events in the invocation they resume, and go with it."""
    parts = event.content.parts if event.content is not None else None
    return bool(parts) and any(part.function_response is None for part in parts or ())
