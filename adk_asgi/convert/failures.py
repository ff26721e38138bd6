"""A turn that fails: what the client is told, and what the chat keeps of it (sans-I/O).

An exception's text can carry what no user should read (a missing API key, a backend's address,
a stack of internals), so the client gets what ``on_error`` says — by default the AI SDK
server's own generic message — and the real error goes to the log. Whatever the client was
shown is kept in the chat: the text streamed before the failure (ADK never stores partial
events) and the error itself, as a ``data-error`` part that the stream carries too, so a reload
shows what the stream showed.

A run that raises while the server runs tool calls (a tool raised: ADK re-raises a tool's
exception when no ``on_tool_error_callback`` answers it; or a sibling call was cancelled with
it) leaves those calls without a result, and ADK stores none. Each one ran and failed, so it is
shown failed: its part ends in ``output-error`` with the error text the client is shown for the
answer (an approval on it stays, ``approved: true``, as the AI SDK client keeps it), and the
same error is stored as the call's function response (:func:`failed_calls_answer`), the
``{"error": …}`` an ``on_tool_error_callback`` would have answered. One stored truth, so history
shows what the stream showed; the model reads on the next turn that the call failed; and a call
with a result is never run again (ADK's confirmation counts the approval used, and
:mod:`adk_asgi.hitl.closing` finds nothing left open to close as interrupted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.errors import log_failure
from adk_asgi.hitl import bookkeeping

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
        log_failure(f"the agent failed: {error}")
    return MASKED


def guarded(on_error: ErrorHandler) -> ErrorHandler:
    """``on_error`` as the package calls it: one that raises (the app's bug, while it words
    another failure) is logged, and the client reads :data:`MASKED`; the stream still ends
    cleanly with its ``error`` chunk."""

    def words(error: AgentError) -> str:
        try:
            return on_error(error)
        except Exception as exc:
            log_failure(f"on_error raised while it worded {error}", exc)
            return MASKED

    return words


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


@dataclass(frozen=True, slots=True)
class FailedCall:
    """A call the server was running when the run raised: it has no result, and none comes."""

    id: str
    """The id the client knows it by."""
    adk_id: str
    """The id ADK knows it by (its function response's)."""
    name: str


def failed_calls_answer(
    events: Iterable[Event],
    failed: Sequence[FailedCall],
    error_text: str,
    message_id: str,
) -> list[Event]:
    """The function responses that close ``failed`` calls with the error the client was shown
    (``{"error": error_text}``), as ADK would have stored them: from the agent that made each
    call, in its invocation and branch (one event per agent), tagged as the bridge's record of
    the answer ``message_id`` (``kept``). A call that no stored event holds gets none (a
    response without its call would break the model's history), nor one that has a result
    stored after all (a parallel agent's, finished after another failed; one live mode stored
    as it came, next to a sibling that waited)."""
    made: dict[str, Event] = {}
    answered: set[str] = set()
    for event in events:
        for made_call in event.get_function_calls():
            if made_call.id:
                made[made_call.id] = event
                answered.discard(made_call.id)
        asked = event.actions.requested_tool_confirmations or {}
        answered |= {r.id for r in event.get_function_responses() if r.id and r.id not in asked}
    groups: dict[tuple[str, str, str | None], list[types.Part]] = {}
    for call in failed:
        origin = made.get(call.adk_id)
        if origin is None or call.adk_id in answered:
            continue
        response = types.FunctionResponse(
            id=call.adk_id, name=call.name, response={"error": error_text}
        )
        key = (origin.author, origin.invocation_id, origin.branch)
        groups.setdefault(key, []).append(types.Part(function_response=response))
    metadata = bookkeeping.with_tags(None, message_id=message_id, kept=True)
    return [
        Event(
            invocation_id=invocation_id,
            author=author,
            branch=branch,
            content=types.Content(role="user", parts=parts),
            custom_metadata=metadata,
        )
        for (author, invocation_id, branch), parts in groups.items()
    ]


def unstored(
    thought: Mapping[str, Sequence[str]], said: Mapping[str, Sequence[str]]
) -> list[types.Part]:
    """The reasoning and text an answer cut short showed (their pieces, by model call) that
    no stored event holds: ADK stores a model call's final event only (:func:`shown_answer`)."""
    thoughts = ["".join(t) for t in thought.values()]
    text = ["".join(t) for t in said.values()]
    return [types.Part(text=t, thought=True) for t in thoughts if t] + [
        types.Part(text=t) for t in text if t
    ]
