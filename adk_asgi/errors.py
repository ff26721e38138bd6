"""The package's exceptions: one base class, and one type for "the client's fault".

Every exception ``adk_asgi`` raises on purpose derives from :class:`AdkAsgiError`, so a host
application can tell the bridge's refusals from its own bugs with one ``except``. A request the
bridge refuses raises :class:`ClientError` (or a subclass: a conflict with the chat's state, a
body that does not decode, a message ADK cannot take): a reason for the client, and a status
hint, as h11's ``error_status_hint``. This module is sans-I/O: the core raises the refusal
without knowing the transport, and only a transport turns it into a response
(:func:`adk_asgi.serving.refusals.json_refusal`: a 4xx with ``{"error": reason}``) or a live
``error`` frame or close reason. A transport catches one type.

A failure the server logs is logged here too (:func:`log_failure`): one line with the chat and
request it failed for, its traceback at ``DEBUG``.

Internal: not an import path of the public API; :mod:`adk_asgi` exports its public
names (docs/reference.md#import-paths).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_logger = logging.getLogger("adk_asgi")

UNKNOWN_CHAT = "this chat does not exist"
"""The ``404`` reason for a chat the user does not have (never created, deleted, or another
user's: chats are scoped by identity, so another user's chat is simply unknown)."""

STORE_FAILED = "the chat's session could not be read or written; try again"
"""The ``503`` reason when the session service fails before anything was sent."""


class AdkAsgiError(Exception):
    """The base class of the package's exceptions."""


class ClientError(AdkAsgiError):
    """A request the bridge refuses: ``reason`` names the problem for the client, and
    ``status_hint`` is the HTTP status it answers with (a live connection sends the reason in
    an ``error`` frame instead, or closes with it)."""

    def __init__(self, status_hint: int, reason: str) -> None:
        super().__init__(reason)
        self.status_hint = status_hint
        self.reason = reason

    @property
    def status(self) -> int:
        """``status_hint``, by its older name."""
        return self.status_hint


# --- failures, as the log shows them ----------------------------------------------------------

_ABOUT: ContextVar[tuple[str | None, str | None]] = ContextVar(
    "adk_asgi_failure_about", default=(None, None)
)


@contextmanager
def about(chat_id: str | None, request_id: str | None = None) -> Iterator[None]:
    """Failures logged in the block (and in the tasks it starts) name this chat and request:
    the assistant message's id over SSE, the ``send`` frame's ``requestId`` live."""
    token = _ABOUT.set((chat_id, request_id))
    try:
        yield
    finally:
        _ABOUT.reset(token)


def log_failure(
    what: str,
    exc: BaseException | None = None,
    *,
    chat_id: str | None = None,
    request_id: str | None = None,
) -> None:
    """One ``ERROR`` line an operator can read and search: what failed, the chat and request
    it failed for (given, or set by :func:`about`), and the exception; its traceback follows at
    ``DEBUG`` (``logging.getLogger("adk_asgi").setLevel(logging.DEBUG)`` shows it)."""
    chat, request = _ABOUT.get()
    chat, request = chat_id or chat, request_id or request
    named = ", ".join(
        f"{name} {value!r}" for name, value in (("chat", chat), ("request", request)) if value
    )
    where = f" ({named})" if named else ""
    error = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    _logger.error("adk_asgi: %s%s%s", what, where, error)
    if exc is not None:
        _logger.debug("adk_asgi: %s%s: the traceback", what, where, exc_info=exc)
