"""A run that lost the race for its session to another writer: run again, or ended plainly.

ADK's SQL session services refuse an append to a session that storage has moved past
(``StaleSessionError``). The chat lock keeps the bridge's own runs apart, so what is left is a
writer the chat lock does not cover: another part of the app appending to the session, or a
worker with a lock of its own (an explicit in-process ``Stores(locks=)`` on several workers).

* The run's first write comes before its first event (ADK stores the user's message, or the
  answers, first). Refused there, the run has done nothing: no event was streamed and nothing
  was stored, so it is started once more, and ADK reads the session afresh. The client never
  sees the first try.
* Refused again at that first write, nothing of the request was stored, and the error says so.
  Refused later, the events shown so far cannot be taken back: the answer ends with an error
  that says why (:class:`ChatChangedElsewhere`, worded by ``on_error`` as every failure is),
  and the chat keeps what was shown with that error (``sse/chat.py``'s ``_keep_shown``), so the
  history says what was lost rather than dropping it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable

from google.adk.errors import StaleSessionError
from google.adk.events.event import Event

from adk_asgi.errors import AdkAsgiError

logger = logging.getLogger("adk_asgi")


class ChatChangedElsewhere(AdkAsgiError):
    """Another writer changed the chat while its answer ran: the rest of the answer was not
    stored."""


def retried_when_stale(
    start: Callable[[], AsyncGenerator[Event, None]],
) -> AsyncGenerator[Event, None]:
    """The events of ``start()`` (a ``Runner.run_async`` call), started once more when its
    session was stale before anything was streamed."""
    return _retried(start)


async def _retried(
    start: Callable[[], AsyncGenerator[Event, None]],
) -> AsyncGenerator[Event, None]:
    events = start()
    streamed = False
    try:
        try:
            first = await anext(events)
        except StaleSessionError:
            await events.aclose()
            logger.warning(
                "adk_asgi: another writer changed the chat's session before this run wrote to"
                " it; running it again on the session as stored now"
            )
            events = start()
            first = await anext(events)
        streamed = True
        yield first
        async for event in events:
            yield event
    except StopAsyncIteration:  # a run without events
        return
    except StaleSessionError as exc:
        raise _changed(streamed) from exc
    finally:
        await events.aclose()


def changed_elsewhere(error: BaseException) -> BaseException:
    """What a live session that raised ``error`` reports: a stale session is the
    :class:`ChatChangedElsewhere` an SSE run reports, so ``on_error`` meets one error for both
    transports. (A live session is not started again: its connection closes, and the next
    one reads the session as stored.)"""
    if not isinstance(error, StaleSessionError):
        return error
    changed = _changed(streamed=True)
    changed.__cause__ = error
    return changed


def _changed(streamed: bool) -> ChatChangedElsewhere:
    if not streamed:  # refused twice at its first write: nothing of this request was stored
        return ChatChangedElsewhere(
            "another request changed this chat at the same time; this message was not saved:"
            " send it again"
        )
    return ChatChangedElsewhere(
        "another request changed this chat while the answer ran; the rest of the answer was not"
        " saved: send the message again"
    )
