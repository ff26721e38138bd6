"""Call ids a plugin notes between a tool's callback and the event that answers the call.

A plugin of the bridge notes a call when its tool runs (:mod:`.as_returned`,
:mod:`.invalid_calls`) and forgets it when the call's function-response event passes. A run
stopped in between (the client left, the run raised, a live session closed) leaves its notes
behind, and a plugin lives as long as its app: so the notes are capped, the oldest dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

NOTED_LIMIT: Final = 1024
"""The most calls a plugin keeps noted at once: far more than a process has tools running; a
note that old belongs to a run that ended."""


class NotedCalls:
    """An insertion-ordered set of call ids holding at most ``limit``, the oldest dropped."""

    __slots__ = ("_ids", "limit")

    def __init__(self, limit: int = NOTED_LIMIT) -> None:
        self.limit = limit
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, call_id: str) -> None:
        self._ids[call_id] = None
        self._ids.move_to_end(call_id)
        while len(self._ids) > self.limit:
            self._ids.popitem(last=False)

    def discard(self, call_id: str) -> None:
        self._ids.pop(call_id, None)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def __bool__(self) -> bool:
        return bool(self._ids)
