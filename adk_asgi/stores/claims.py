"""Each answer of the user (an approval, a denial, a browser's result) is acted on once.

The chat lock (:mod:`.locks`) already serializes a chat's requests, and a request checks its
answers against the session under it. That is not enough to promise that a payment runs once:
a Redis lease can expire while its holder stalls, and a deployment may run several workers with
in-process locks. So before a request acts on its answers it *claims* them: an atomic,
all-or-nothing insert keyed by ``(chat, answer id)`` in a store every worker shares and that
survives restarts. The first claim wins; any later one — another worker, a replay, a retry —
is refused with 409.

A claim is never handed over, which makes an answer *at most once*: a worker that dies between
its claim and recording the answer in the session leaves the call claimed and open, and the
next message of the chat closes it like any call the user left (docs/deployment.md).

``AdkApp`` picks the store the session service implies: a table in the session database
(:mod:`.claims_sql`, :mod:`.claims_sqlite`) for ADK's SQL session services, else one process's
memory (:class:`InMemoryClaims`, which ``AdkApp.prepare()`` warns about when several workers
run). Deleting a chat forgets its claims (:meth:`Claims.forget`), after its session: a chat id
comes from the client, and a new chat under an old id must not find its answers taken.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Collection
from typing import Final

from adk_asgi.stores.locks import ChatKey

KEEP: Final = 3600.0
"""Seconds :class:`InMemoryClaims` keeps a claim."""


class Claims(ABC):
    @abstractmethod
    async def claim(self, key: ChatKey, answer_ids: Collection[str]) -> bool:
        """Claim every id of ``answer_ids`` for ``key``'s chat, or none: ``False`` if any of
        them was claimed before."""

    @abstractmethod
    async def forget(self, key: ChatKey) -> None:
        """Drop every claim of ``key``'s chat (it was deleted: none of its calls can be
        answered any more)."""

    async def prepare(self) -> None:  # noqa: B027 (a store without tables has nothing to do)
        """Create what the store needs (a table); ``AdkApp.prepare`` calls it at start-up."""

    async def aclose(self) -> None:  # noqa: B027
        """Release what the store holds (connections)."""


class InMemoryClaims(Claims):
    """The claims of one process: right for in-memory sessions, which are one process's too.

    A claim is kept ``keep`` seconds (an hour), then forgotten, so that the memory a process
    holds is bounded by the answers of the last hour, not of its whole life. That keeps an
    answer acted on once within the process: a claim only has to outlive the request that
    made it. The claim is made under the chat's lock, after the request checked its answers
    against the session, and the session records the answer before that request lets go of
    the chat (SSE: the bridge's part at once, ADK's as the run's first event; live: the
    connection holds the chat until it closes). Every later request finds the answer in the
    session and is refused there (``409``), whether or not the claim is still kept.
    """

    def __init__(self, *, keep: float = KEEP, clock: Callable[[], float] = time.monotonic) -> None:
        if not keep > 0:
            raise ValueError(f"keep must be > 0 seconds: {keep!r}")
        self.keep = keep
        self._clock = clock
        self._claimed: dict[ChatKey, dict[str, float]] = {}
        """Each chat's claimed answer ids, with when each was claimed."""
        self._order: deque[tuple[float, ChatKey, str]] = deque()
        """Every claim kept, in the order made, to forget the oldest first."""

    def __len__(self) -> int:
        """Claims kept."""
        return sum(len(answers) for answers in self._claimed.values())

    async def claim(self, key: ChatKey, answer_ids: Collection[str]) -> bool:
        now = self._clock()
        self._expire(now)
        if not self._claimed.get(key, {}).keys().isdisjoint(answer_ids):
            return False
        claimed = self._claimed.setdefault(key, {}) if answer_ids else {}
        for answer_id in set(answer_ids):
            claimed[answer_id] = now
            self._order.append((now, key, answer_id))
        return True

    async def forget(self, key: ChatKey) -> None:
        if self._claimed.pop(key, None) is not None:
            self._order = deque(claim for claim in self._order if claim[1] != key)

    def _expire(self, now: float) -> None:
        order, until = self._order, now - self.keep
        while order and order[0][0] <= until:
            at, key, answer_id = order.popleft()
            claimed = self._claimed.get(key)
            if claimed is not None and claimed.get(answer_id) == at:
                del claimed[answer_id]
                if not claimed:
                    del self._claimed[key]
