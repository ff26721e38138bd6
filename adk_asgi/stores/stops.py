"""The user's stop of a resumable answer, kept when the stream store fails for a moment.

A stop crosses the stream store (:mod:`.resumable`): ``DELETE /chat/{id}/stream`` writes it,
and the run's stop check — on whichever worker runs the answer — reads it. A store that failed
once on either side (a Redis reconnect, a failover) used to lose it: the check's task died with
the error, so the answer ran on to its end, while the ``DELETE`` had already said
``{"stopped": true}``. So:

- the run's check (:func:`watch_for_stop`) logs an error and checks again, waiting twice as
  long each time up to :data:`CHECK_BACKOFF_MAX` seconds, for as long as its run goes on. It
  never gives up on its own: a store down for good gets a check every two seconds until the
  run ends, and a stop that could not be written is never invented.
- the ``DELETE`` (:func:`stop_answer`) retries each store call a few times
  (:data:`ATTEMPTS`, backoff from :data:`BACKOFF`), then reports the store unreachable
  (:class:`StoreUnavailable`: a ``503``); and once the stop is written it waits up to
  :data:`STOP_WAIT` seconds for the answer to end, so that ``stopped: true`` means it did.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeVar

from adk_asgi.stores.locks import ChatKey
from adk_asgi.stores.resumable import StreamStore

logger = logging.getLogger("adk_asgi")

T = TypeVar("T")

CHECK_BACKOFF: Final = 0.05
"""Seconds the run's stop check waits after its first failure (doubled after each one)."""
CHECK_BACKOFF_MAX: Final = 2.0
"""The longest wait between two stop checks of a store that keeps failing."""
ATTEMPTS: Final = 4
"""Tries of each store call a ``DELETE .../stream`` makes before it answers ``503``."""
BACKOFF: Final = 0.1
"""Seconds before a ``DELETE``'s second try (doubled for each later one: 0.7 s in all)."""
STOP_WAIT: Final = 5.0
"""Seconds a ``DELETE .../stream`` waits for the stopped answer to end before it answers."""
END_POLL: Final = 0.05
"""Seconds between two looks at whether the stopped answer ended."""

Stop = Literal["nothing", "stopped", "running"]
"""What a ``DELETE .../stream`` found: no answer under way; the answer stopped (its stream
ended); or the stop is written but the answer still ran :data:`STOP_WAIT` seconds later (a
live answer, which cannot be stopped midway, or a run slow to reach its next event)."""


class StoreUnavailable(Exception):
    """The stream store failed :data:`ATTEMPTS` times in a row; ``reason`` says what was
    left undone, for the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def watch_for_stop(store: StreamStore, key: ChatKey, stream_id: str) -> None:
    """Return once the user stopped this stream. A store error is logged and the check is
    made again (see the module's docstring); the run cancels this when it ends."""
    delay = CHECK_BACKOFF
    while True:
        try:
            await store.stopped(key, stream_id)
            return
        except Exception:
            logger.warning(
                "adk_asgi: checking whether the user stopped an answer failed; again in %.2f s",
                delay,
                exc_info=True,
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, CHECK_BACKOFF_MAX)


async def stop_answer(store: StreamStore, key: ChatKey, wait: float = STOP_WAIT) -> Stop:
    """Stop the chat's answer under way and wait for it to end (see :data:`Stop`); raises
    :class:`StoreUnavailable`."""
    unread = "the stream store cannot be reached: the answer was not stopped"
    stream_id = await _retried(lambda: store.active(key), unread)
    if stream_id is None:
        return "nothing"
    if not await _retried(lambda: store.stop(key), unread):
        return "nothing"  # it ended in between
    unseen = "the stop was asked, but the stream store cannot be reached to see the answer end"
    try:
        async with asyncio.timeout(wait):
            while await _retried(lambda: store.active(key), unseen) == stream_id:  # noqa: ASYNC110
                await asyncio.sleep(END_POLL)  # (a poll: the answer may run on another worker)
    except TimeoutError:
        return "running"
    return "stopped"


async def _retried(call: Callable[[], Awaitable[T]], reason: str) -> T:
    delay = BACKOFF
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return await call()
        except Exception:
            logger.warning(
                "adk_asgi: the stream store failed (try %d of %d)", attempt, ATTEMPTS, exc_info=True
            )
            if attempt == ATTEMPTS:
                break
            await asyncio.sleep(delay)
            delay *= 2
    raise StoreUnavailable(reason)
