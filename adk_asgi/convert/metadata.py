"""Message metadata: what the app's hook adds to an assistant message at its start and finish.

The AI SDK's own servers take a ``messageMetadata`` callback that is called for the stream's
``start`` and ``finish`` parts; the client merges each dict it returns into
``message.metadata``. ``AdkApp(message_metadata=hook)`` is that callback, called with what ADK
knows of the response: a :class:`MessageMoment`.

History calls the same hook with the same moments, rebuilt from the stored events by the same
fold (:class:`ResponseFacts`), and merges them in the same order. ADK's session is the only
store, so nothing else is kept, and a reload shows what the stream showed — provided the hook
is a function of its moment: the moment carries the time the response started, so a hook
needs no clock of its own (sans-I/O).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec
from google.adk.events.event import Event

from adk_asgi.convert.adk_values import add_usage, map_finish_reason
from adk_asgi.wire.chunks import FinishReason

logger = logging.getLogger("adk_asgi")


class MessageMoment(msgspec.Struct, frozen=True, kw_only=True):
    """What the bridge knows of one response of an assistant message, at its start or its
    finish. A message continued after the user answered its tool calls has one response per
    continuation: the client merges the dicts of each, in order."""

    kind: Literal["start", "finish"]
    message_id: str
    """The assistant message's id (the one the stream announced)."""
    started_at: float | None
    """When the response started (Unix time); ``None`` for a response stored by a release
    that did not record it."""
    finish_reason: FinishReason | None = None
    """``finish``: why the response ended, as the ``finish`` chunk says it."""
    author: str | None = None
    """``finish``: the agent that wrote the response's last model event."""
    model_version: str | None = None
    """``finish``: the model version of the response's last model event that names one."""
    usage: Mapping[str, int] = msgspec.field(default_factory=dict)
    """``finish``: the response's token counts (``inputTokens``, ``cachedInputTokens``,
    ``outputTokens``, ``reasoningTokens``, ``totalTokens``), summed over its model calls."""


MessageMetadata = Callable[[MessageMoment], Mapping[str, Any] | None]
"""``AdkApp(message_metadata=)``: the metadata a moment adds to its message, or ``None``."""


class ResponseFacts:
    """What the complete events of one response say about it, folded one event at a time:
    by the converter as they stream, by history from the stored events."""

    def __init__(self, message_id: str, started_at: float | None) -> None:
        self.message_id = message_id
        self.started_at = started_at
        self.author: str | None = None
        self.model_version: str | None = None
        self.usage: dict[str, int] = {}
        self.finish_reason: FinishReason = "stop"

    def see(self, event: Event) -> None:
        if event.partial or event.author == "user":
            return
        self.author = event.author
        if event.model_version:
            self.model_version = event.model_version
        if event.usage_metadata is not None:
            add_usage(self.usage, event.usage_metadata)
        if event.finish_reason is not None:
            self.finish_reason = map_finish_reason(event.finish_reason)

    def start(self) -> MessageMoment:
        return MessageMoment(kind="start", message_id=self.message_id, started_at=self.started_at)

    def finish(self, reason: FinishReason) -> MessageMoment:
        return MessageMoment(
            kind="finish",
            message_id=self.message_id,
            started_at=self.started_at,
            finish_reason=reason,
            author=self.author,
            model_version=self.model_version,
            usage=dict(self.usage),
        )


class AppMetadata:
    """``AdkApp(message_metadata=)`` for one message: the hook's dict for a moment, as a plain
    ``dict`` (``None``: nothing to send). A hook that raises is the app's bug: it is logged and
    told to ``failed`` (once a message: the converter's guarded ``on_error``, which does not
    raise), and the message goes on without that metadata, since the answer it decorates has
    streamed, or is about to; it broke the stream before."""

    __slots__ = ("failed", "has_failed", "hook")

    def __init__(self, hook: MessageMetadata | None, failed: Callable[[Exception], object]) -> None:
        self.hook = hook
        self.failed = failed
        self.has_failed = False

    def __call__(self, moment: MessageMoment) -> dict[str, Any] | None:
        if self.hook is None:
            return None
        try:
            metadata = self.hook(moment)
        except Exception as exc:
            if not self.has_failed:
                self.has_failed = True
                logger.error("adk_asgi: the app's message_metadata hook raised", exc_info=exc)
                self.failed(exc)
            return None
        return dict(metadata) if metadata else None


def merged(current: dict[str, Any] | None, update: Mapping[str, Any] | None) -> Any:
    """Metadata merged as the AI SDK's client merges it (``mergeObjects``: nested objects
    merged key by key, anything else replaced)."""
    if update is None:
        return current
    if current is None:
        return dict(update)
    out = dict(current)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out
