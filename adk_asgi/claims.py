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
memory (:class:`InMemoryClaims`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection

from .locks import ChatKey


class Claims(ABC):
    @abstractmethod
    async def claim(self, key: ChatKey, answer_ids: Collection[str]) -> bool:
        """Claim every id of ``answer_ids`` for ``key``'s chat, or none: ``False`` if any of
        them was claimed before."""

    async def prepare(self) -> None:  # noqa: B027 (a store without tables has nothing to do)
        """Create what the store needs (a table); ``AdkApp.prepare`` calls it at start-up."""

    async def aclose(self) -> None:  # noqa: B027
        """Release what the store holds (connections)."""


class InMemoryClaims(Claims):
    """The claims of one process: right for in-memory sessions, which are one process's too."""

    def __init__(self) -> None:
        self._claimed: dict[ChatKey, set[str]] = {}

    async def claim(self, key: ChatKey, answer_ids: Collection[str]) -> bool:
        claimed = self._claimed.setdefault(key, set())
        if not claimed.isdisjoint(answer_ids):
            return False
        claimed.update(answer_ids)
        return True
