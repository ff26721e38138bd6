"""``adk_asgi.locks_postgres``, the import path of releases before the layered layout:
:mod:`adk_asgi.stores.locks_postgres`.

Kept so that code written against the earlier docs keeps working; new code imports from
:mod:`adk_asgi.stores.locks_postgres`."""

from adk_asgi.stores.locks_postgres import PostgresChatLocks

__all__ = [
    "PostgresChatLocks",
]
