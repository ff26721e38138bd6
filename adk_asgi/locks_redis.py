"""``adk_asgi.locks_redis``, the import path of releases before the layered layout:
:mod:`adk_asgi.stores.locks_redis`.

Kept so that code written against the earlier docs keeps working; new code imports from
:mod:`adk_asgi.stores.locks_redis`."""

from adk_asgi.stores.locks_redis import RedisChatLocks

__all__ = [
    "RedisChatLocks",
]
