"""A turn that fails: what the client is told, and what the chat keeps of it (sans-I/O).

An exception's text can carry what no user should read (a missing API key, a backend's address,
a stack of internals), so the client gets what ``on_error`` says — by default the AI SDK
server's own generic message — and the real error goes to the log. Whatever the client was
shown is kept in the chat: the text streamed before the failure (ADK never stores partial
events) and the error itself, as a ``data-error`` part that the stream carries too, so a reload
shows what the stream showed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.hitl import bookkeeping

logger = logging.getLogger("adk_asgi")

MASKED: Final = "An error occurred."
"""What the client reads of a failure by default (the AI SDK server's generic message)."""
ERROR_PART: Final = "data-error"
"""The part (and chunk) type of a failure kept in the message: ``data: {errorText}``."""


@dataclass(frozen=True, slots=True)
class AgentError:
    """A failure while the agent answered, as ``on_error`` gets it: an error ADK recorded in
    an event (``code``, ``message``: a model error, a refused request), or an exception the run
    raised (``exception``)."""

    code: str | None = None
    message: str | None = None
    exception: BaseException | None = None

    def __str__(self) -> str:
        if self.exception is not None:
            return f"{type(self.exception).__name__}: {self.exception}"
        if self.code and self.message:
            return f"{self.code}: {self.message}"
        return self.message or self.code or "The agent failed."


ErrorHandler = Callable[[AgentError], str]
"""``on_error``: the text the client is shown for a failure."""


def mask_errors(error: AgentError) -> str:
    """The default ``on_error``: log the failure, show :data:`MASKED`. (An exception the run
    raised is logged with its traceback where it is caught.)"""
    if error.exception is None:
        logger.error("adk_asgi: the agent failed: %s", error)
    return MASKED


def show_errors(error: AgentError) -> str:
    """An ``on_error`` for development: the client reads the error itself
    (``"<code or exception class>: <message>"``)."""
    return str(error)


def shown_answer(
    author: str,
    message_id: str,
    shown: list[types.Part],
    error_text: str | None = None,
    started_at: float | None = None,
    cut_calls: Sequence[bookkeeping.CutCall] = (),
) -> Event:
    """The event that keeps an answer cut short — it failed (``error_text``, tagged), or the
    user stopped it — as the client saw it: the text it was shown that ADK did not store
    (``shown``), and the calls it showed streaming (``cut_calls``, tagged), in the message
    ``message_id``."""
    content = types.Content(role="model", parts=shown) if shown else None
    tags: dict[str, Any] = {"error": error_text} if error_text is not None else {}
    if cut_calls:
        tags["cut_calls"] = list(cut_calls)
    metadata = bookkeeping.with_tags(
        None, message_id=message_id, started_at=started_at, kept=True, **tags
    )
    return Event(
        invocation_id=Event.new_id(), author=author, content=content, custom_metadata=metadata
    )
