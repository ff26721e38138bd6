"""``adk_asgi.resumable``, the import path of releases before the layered layout:
:mod:`adk_asgi.stores.resumable`.

Kept so that code written against the earlier docs keeps working; new code imports from
:mod:`adk_asgi.stores.resumable`."""

from adk_asgi.stores.resumable import InMemoryStreamStore, StreamStore

__all__ = [
    "InMemoryStreamStore",
    "StreamStore",
]
