"""An app's hook that raises at the door: a ``500`` with ``on_error``'s words.

The hooks an app gives ``AdkApp`` run inside the package's request handling: ``identify`` for
every request, ``allowed_file_url`` for each file URL a user message carries. One that raises
(the documented GCS recipe did, on ``gs://[``) was a 500 page with a traceback over SSE and,
in a live ``send``, ended the connection's task group instead of answering the frame. Now the
failure is logged with its traceback, ``on_error`` words it once (as it words the agent's
failures: masked by default), and the request gets that text as a ``500`` JSON reason, or a
live ``error`` frame; the connection and the chat go on.
"""

from __future__ import annotations

from adk_asgi.convert.failures import AgentError, ErrorHandler, guarded
from adk_asgi.errors import ClientError, log_failure


def hook_failure(on_error: ErrorHandler, hook: str, exc: Exception) -> ClientError:
    """The refusal for the app's ``hook`` that raised ``exc``: ``500``, in ``on_error``'s
    words (:data:`~adk_asgi.convert.failures.MASKED` if ``on_error`` raises too)."""
    log_failure(f"the app's {hook} hook raised", exc)
    return ClientError(500, guarded(on_error)(AgentError(exception=exc)))
