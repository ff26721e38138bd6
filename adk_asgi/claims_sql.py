"""``adk_asgi.claims_sql``, the import path of releases before the layered layout:
:mod:`adk_asgi.stores.claims_sql`.

Kept so that code written against the earlier docs keeps working; new code imports from
:mod:`adk_asgi.stores.claims_sql`."""

from adk_asgi.stores.claims_sql import SqlClaims

__all__ = [
    "SqlClaims",
]
