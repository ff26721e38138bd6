"""What one user may hold at once, so that one browser cannot starve the others.

A live socket holds its chat, a task group and a model session for as long as it stays open;
a ``POST /chat`` holds a run for as long as its answer streams. Without a bound per user, one
browser (and the default cookie identity costs nothing) could open a thousand of either and
leave the workers, the session database and the model quota to itself. So each worker counts,
per user, the live sockets open and the chat requests running, and refuses the one past its
bound: ``429`` with a JSON reason over SSE, a close with ``1013`` ("try again later") and the
reason over live, before anything is read or run. A chat's files are bounded as well: each
message may bring up to ``max_body_size`` of them, and every one is kept with the chat.

A refusal goes out after :attr:`UserBounds.pause` seconds (1 by default), not at once, and a
user refused over and over waits longer, up to :data:`PAUSE_GROWTH` times as long (one step
more every :data:`STRIKES_PER_STEP` refusals within a minute): a client that sends again as
soon as it is refused (a loop, a flood) is slowed to the pace of its pauses instead of taking
the worker's CPU with refusals, which are as cheap as a request can be but not free (measured
with ``bench.starvation``: a refusal a second per request a flood keeps in flight raised another
user's time to first text by 13-19 %, a refusal every 3 s by 6 %). At most :data:`PAUSED` wait
at once in a worker; past that the rest go out at once.

Each refusal is logged as one warning an operator can alert on, at most once a minute per
user and bound, with how many were refused since the last line (a flood writes no flood of
logs). The counts are per worker process: with ``N`` workers a user holds up to ``N`` times a
bound. A client that mints a new identity for each connection is many users: bound
connections per address in the proxy in front (docs/security.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Final

from adk_asgi.errors import ClientError

logger = logging.getLogger("adk_asgi")

LOG_EVERY: Final = 60.0
"""Seconds between two log lines about the same user and bound."""
_LOGGED_USERS: Final = 1024
"""Users whose last log line is remembered before the stale ones are forgotten."""
_MIB: Final = 1024 * 1024
PAUSED: Final = 1024
PAUSE_GROWTH: Final = 4
"""How many times :attr:`UserBounds.pause` a user refused over and over waits, at most."""
STRIKES_PER_STEP: Final = 8
"""Refusals of one user within a minute that make its pause one :attr:`UserBounds.pause`
longer."""
"""Refusals that wait out their pause at once in a worker, at most (each holds a connection
and a coroutine, a few kB)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UserBounds:
    """``AdkApp(user_bounds=UserBounds(...))``: each bound, or ``None`` for none."""

    live_sockets: int | None = 8
    """``WS /live`` connections one user may have open at once, per worker (each holds its
    chat and, on Gemini, a Live API session)."""
    requests: int | None = 4
    """``POST /chat`` requests (answers streaming) one user may have running at once, per
    worker: a person streams one answer at a time, a few with several tabs."""
    chat_files: int | None = 32 * _MIB
    """Bytes of files (``data:`` URLs of user messages) one chat may hold in all."""
    pause: float = 1.0
    """Seconds a refusal waits before it goes out (0: at once)."""

    def __post_init__(self) -> None:
        for name in ("live_sockets", "requests", "chat_files"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"user_bounds.{name} must be > 0 or None: {value!r}")
        if not self.pause >= 0:
            raise ValueError(f"user_bounds.pause must be >= 0 seconds: {self.pause!r}")


class OverBound(ClientError):
    """A user past one of their bounds: ``429`` (``1013`` on a live socket)."""

    def __init__(self, reason: str) -> None:
        super().__init__(429, reason)


class UserLoad:
    """One worker's count of what each user holds now (one event loop: no lock)."""

    def __init__(self, bounds: UserBounds, clock: Callable[[], float] = time.monotonic) -> None:
        self.bounds = bounds
        self._clock = clock
        self._sockets: dict[str, int] = {}
        self._requests: dict[str, int] = {}
        self._refused: dict[tuple[str, str], tuple[float, int]] = {}
        """(user, bound) → (when its last line was logged, refusals since)."""
        self._pausing = 0

    def pause_for(self, user_id: str) -> float:
        """How long ``user_id``'s refusal waits: :attr:`UserBounds.pause`, longer for a user
        refused over and over (see the module docstring)."""
        recent = sum(n for (user, _), (_, n) in self._refused.items() if user == user_id)
        return self.bounds.pause * min(PAUSE_GROWTH, 1 + recent // STRIKES_PER_STEP)

    async def pause(self, user_id: str) -> None:
        """Wait before ``user_id``'s refusal goes out (:meth:`pause_for`), unless
        :data:`PAUSED` refusals wait already."""
        if not self.bounds.pause or self._pausing >= PAUSED:
            return
        self._pausing += 1
        try:
            await asyncio.sleep(self.pause_for(user_id))
        finally:
            self._pausing -= 1

    def live_socket(self, user_id: str) -> AbstractContextManager[None]:
        """Count a live socket of ``user_id`` for the ``with`` block, or :class:`OverBound`."""
        return self._counted(self._sockets, user_id, self.bounds.live_sockets, "live sockets")

    def request(self, user_id: str) -> AbstractContextManager[None]:
        """Count a chat request of ``user_id`` for the ``with`` block, or :class:`OverBound`."""
        return self._counted(self._requests, user_id, self.bounds.requests, "chat requests")

    def held(self, user_id: str) -> tuple[int, int]:
        """``user_id``'s live sockets and chat requests open in this worker now."""
        return self._sockets.get(user_id, 0), self._requests.get(user_id, 0)

    @contextmanager
    def _counted(
        self, counts: dict[str, int], user_id: str, bound: int | None, what: str
    ) -> Iterator[None]:
        held = counts.get(user_id, 0)
        if bound is not None and held >= bound:
            self._log_refusal(user_id, f"{bound} {what} at once")
            raise OverBound(
                f"too many {what} at once: a user may have {bound} open; try again later"
            )
        counts[user_id] = held + 1
        try:
            yield
        finally:
            if (left := counts[user_id] - 1) > 0:
                counts[user_id] = left
            else:
                del counts[user_id]  # the table holds the users of this moment only

    def check_chat_files(self, user_id: str, held: int, adding: int) -> None:
        """A message bringing ``adding`` bytes of files to a chat that holds ``held``:
        refused (``413``) past ``chat_files``."""
        bound = self.bounds.chat_files
        if bound is None or not adding or held + adding <= bound:
            return
        self._log_refusal(user_id, f"{bound} bytes of files in a chat")
        raise ClientError(
            413,
            f"this chat holds {_in_mib(held)} of files and a chat may hold {_in_mib(bound)}: "
            "send fewer or smaller files, or start a new chat",
        )

    def _log_refusal(self, user_id: str, bound: str) -> None:
        now = self._clock()
        key = (user_id, bound)
        last, refused = self._refused.get(key, (None, 0))
        if last is not None and now - last < LOG_EVERY:
            self._refused[key] = (last, refused + 1)
            return
        if len(self._refused) >= _LOGGED_USERS:
            self._refused = {k: v for k, v in self._refused.items() if now - v[0] < LOG_EVERY}
        self._refused[key] = (now, 0)
        logger.warning(
            "adk_asgi: refused a user over a bound (%s): user %r; %d other refusals since the "
            "last line",
            bound,
            user_id,
            refused,
        )


def _in_mib(size: int) -> str:
    return f"{size / _MIB:.1f} MiB"
