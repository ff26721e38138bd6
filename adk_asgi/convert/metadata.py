"""Message metadata: what the app's hook adds to an assistant message at its start, at the end
of each step, and at its finish.

The AI SDK's own servers take a ``messageMetadata`` callback that is called for the stream's
``start``, ``finish-step`` and ``finish`` parts (with the model, the step's usage and finish
reason); the client merges each dict it returns into ``message.metadata``: ``start``'s and
``finish``'s on those chunks, a step's in a ``message-metadata`` chunk just before its
``finish-step``, as ai@7's ``toUIMessageStream`` sends it. ``Messages(message_metadata=hook)``
is that callback, called with what ADK knows of the response: a :class:`MessageMoment`.

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


MomentKind = Literal["start", "finish-step", "finish"]


class MessageMoment(msgspec.Struct, frozen=True, kw_only=True):
    """What the bridge knows of one response of an assistant message, at its start, at the end
    of each of its steps (a model call), or at its finish. A message continued after the user
    answered its tool calls has one response per continuation: the client merges the dicts of
    each, in order."""

    kind: MomentKind
    message_id: str
    """The assistant message's id (the one the stream announced)."""
    started_at: float | None
    """When the response started (Unix time); ``None`` for a response stored by a release
    that did not record it."""
    model: str | None = None
    """Every moment: the model the app's agent is configured with (``AdkApp``'s agent's
    ``LlmAgent.model``, its name), known before the model answers; ``None`` when it names
    none. The model that did answer is :attr:`model_version`."""
    finish_reason: FinishReason | None = None
    """``finish``: why the response ended, as the ``finish`` chunk says it. ``finish-step``:
    why the step ended (``tool-calls`` when it called tools)."""
    author: str | None = None
    """``finish``, ``finish-step``: the agent that wrote the response's (the step's) last
    model event."""
    model_version: str | None = None
    """``finish``, ``finish-step``: the model version of the response's (the step's) last
    model event that names one."""
    usage: Mapping[str, int] = msgspec.field(default_factory=dict)
    """``finish``: the response's token counts (``inputTokens``, ``cachedInputTokens``,
    ``outputTokens``, ``reasoningTokens``, ``totalTokens``), summed over its model calls.
    ``finish-step``: the step's."""


MessageMetadata = Callable[[MessageMoment], Mapping[str, Any] | None]
"""``Messages(message_metadata=)``: the metadata a moment adds to its message, or ``None``."""


def agent_model(agent: object) -> str | None:
    """The name of the model an agent is configured with: ``LlmAgent.model`` as a string, or
    its ``BaseLlm``'s ``model``; ``None`` when it names none (an agent that inherits its
    parent's, or is no ``LlmAgent``)."""
    model = getattr(agent, "model", None)
    name = model if isinstance(model, str) else getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


class _Fold:
    """The facts of a run of events: who wrote last, the model, the usage, how it ended."""

    __slots__ = ("author", "called", "finish_reason", "model_version", "usage")

    def __init__(self) -> None:
        self.author: str | None = None
        self.model_version: str | None = None
        self.usage: dict[str, int] = {}
        self.finish_reason: FinishReason = "stop"
        self.called = False

    def see(self, event: Event) -> None:
        self.author = event.author
        if event.model_version:
            self.model_version = event.model_version
        if event.usage_metadata is not None:
            add_usage(self.usage, event.usage_metadata)
        if event.finish_reason is not None:
            self.finish_reason = map_finish_reason(event.finish_reason)
        if event.content is not None and event.content.role == "model":
            self.called = self.called or bool(event.get_function_calls())


class ResponseFacts:
    """What the complete events of one response say about it, folded one event at a time:
    by the converter as they stream, by history from the stored events. ``model``: the model
    the app's agent is configured with (:func:`agent_model`)."""

    def __init__(self, message_id: str, started_at: float | None, model: str | None = None) -> None:
        self.message_id = message_id
        self.started_at = started_at
        self.model = model
        self._response = _Fold()
        self._step = _Fold()

    @property
    def usage(self) -> dict[str, int]:
        return self._response.usage

    @property
    def finish_reason(self) -> FinishReason:
        return self._response.finish_reason

    def see(self, event: Event) -> None:
        """An event of the response, before it is shown (a failure it reports is worded with
        it)."""
        if not (event.partial or event.author == "user"):
            self._response.see(event)

    def see_in_step(self, event: Event) -> None:
        """The same event, once shown: it is in the step it opened, if it opened one."""
        if not (event.partial or event.author == "user"):
            self._step.see(event)

    def start(self) -> MessageMoment:
        return self._moment("start")

    def finish_step(self) -> MessageMoment:
        """The step that ends (its events since the last step ended), and the next begins."""
        step, self._step = self._step, _Fold()
        reason: FinishReason = "tool-calls" if step.called else step.finish_reason
        return self._moment("finish-step", step, reason)

    def finish(self, reason: FinishReason) -> MessageMoment:
        return self._moment("finish", self._response, reason)

    def _moment(
        self, kind: MomentKind, fold: _Fold | None = None, reason: FinishReason | None = None
    ) -> MessageMoment:
        if fold is None:
            return MessageMoment(
                kind=kind, message_id=self.message_id, started_at=self.started_at, model=self.model
            )
        return MessageMoment(
            kind=kind,
            message_id=self.message_id,
            started_at=self.started_at,
            model=self.model,
            finish_reason=reason,
            author=fold.author,
            model_version=fold.model_version,
            usage=dict(fold.usage),
        )


class AppMetadata:
    """``Messages(message_metadata=)`` for one message: the hook's dict for a moment, as a plain
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
