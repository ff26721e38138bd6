"""Where the bridge keeps what outlives one request: chat locks, claims and stream stores.

A chat runs once at a time (:mod:`.locks`), an answer is acted on once (:mod:`.claims`), and an
answer's stream outlives its reader (:mod:`.resumable`) — in memory, in the session database
(SQLite, PostgreSQL, any SQL of ADK's ``DatabaseSessionService``) or in Redis, chosen by
:mod:`.defaults` when the app names none. The optional backends import their driver only when
their module is imported (``adk_asgi.stores.locks_redis``, ``locks_postgres``,
``resumable_redis``). This layer does I/O; it may import :mod:`adk_asgi.wire` and
:mod:`adk_asgi.errors`, and knows nothing of ADK events, HTTP or WebSockets.

Public: this package, and the backends' modules named in docs/reference.md#import-paths;
the other modules are internal.
"""

from adk_asgi.stores.claims import Claims, InMemoryClaims
from adk_asgi.stores.locks import ChatBusy, ChatLocks, InMemoryChatLocks, Lease
from adk_asgi.stores.resumable import InMemoryStreamStore, StreamStore

__all__ = [
    "ChatBusy",
    "ChatLocks",
    "Claims",
    "InMemoryChatLocks",
    "InMemoryClaims",
    "InMemoryStreamStore",
    "Lease",
    "StreamStore",
]
