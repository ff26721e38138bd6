"""``adk_asgi.failures``, the import path of releases before the layered layout:
:mod:`adk_asgi.convert.failures`.

Kept so that code written against the earlier docs keeps working; new code imports from
:mod:`adk_asgi.convert.failures`."""

from adk_asgi.convert.failures import AgentError, ErrorHandler, mask_errors, show_errors

__all__ = [
    "AgentError",
    "ErrorHandler",
    "mask_errors",
    "show_errors",
]
