"""``adk_asgi.resumable_redis``, the import path of releases before the layered layout:
:mod:`adk_asgi.stores.resumable_redis`.

Kept so that code written against the earlier docs keeps working; new code imports from
:mod:`adk_asgi.stores.resumable_redis`."""

from adk_asgi.stores.resumable_redis import RedisStreamStore

__all__ = [
    "RedisStreamStore",
]
