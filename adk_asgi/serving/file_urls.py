"""Which file URLs a user message may carry: ``data:``, the chat's own uploads, or what the app
allows.

A file part's URL that is not ``data:`` reaches the model as a file reference, which the model
reads with the *server's* credentials: on Vertex AI a ``gs://`` URL names any object the
service account can read, another user's uploads included. So by default a user message may
carry only ``data:`` URLs (the bytes themselves) and the URLs history hands back for the chat's
own uploads (``<root>/chat/<id>/files/<name>``, :mod:`adk_asgi.routes.files`); anything else is
refused with ``422`` unless the app's hook, ``Security(allowed_file_url=callable(url, user_id) ->
bool)``, allows it (an app whose artifacts live in its own bucket allows that user's objects there).

Every user message of a request is checked, not only the new one: the stock client re-sends
the whole chat, and a message that is re-sent today may be the one redone (regenerate, edit)
tomorrow. Assistant messages are not: nothing of theirs is model input (the session is the
truth, and a continuation carries tool outputs only).

The rule is bound to a context variable by the endpoint that knows the user and the mount
(:func:`bind`), so the live protocol, which is sans-I/O and knows neither, checks its ``send``
frames with it (:func:`.checks.check_chat`); with none bound only ``data:`` passes.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

from adk_asgi.convert.failures import MASKED
from adk_asgi.errors import ClientError
from adk_asgi.wire.messages import ChatRequest

AllowFileUrl = Callable[[str, str], bool]
"""``allowed_file_url(url, user_id) -> bool``: whether ``user_id`` may send the model ``url``."""

REFUSED: Final = (
    "only data: URLs and this chat's own uploads are accepted "
    "(the app allows others with Security(allowed_file_url=...))"
)


@dataclass(frozen=True, slots=True)
class FileUrlRule:
    """The rule for one user of one mount (``root``: the app's path, ``""`` at the root)."""

    user_id: str | None = None
    root: str | None = None
    allow: AllowFileUrl | None = None
    failed: Callable[[Exception], ClientError] | None = None
    """The refusal when ``allow`` raises (:mod:`.app_hooks`)."""

    def allows(self, url: str, chat_id: str) -> bool:
        if url.startswith("data:"):
            return True
        if self.root is not None and _own_upload(url, f"{self.root}/chat/{chat_id}/files/"):
            return True
        if self.allow is None or self.user_id is None:
            return False
        try:
            return self.allow(url, self.user_id)
        except Exception as exc:
            raise (self.failed or _masked)(exc) from None

    def check(self, chat: ChatRequest) -> None:
        """Refuse (``422``) the first user file part whose URL this rule does not allow."""
        for where, part in chat.user_files():
            if not self.allows(part.url, chat.id):
                scheme = _scheme(part.url)
                what = f"{scheme}: URLs are" if scheme else "this URL is"
                raise ClientError(422, f"{where}.url: {what} refused; {REFUSED}")


def _masked(exc: Exception) -> ClientError:
    return ClientError(500, MASKED)


def _scheme(url: str) -> str:
    try:
        return urlsplit(url).scheme
    except ValueError:  # an unbalanced "[" in the host
        return ""


def _own_upload(url: str, prefix: str) -> bool:
    """``url`` is the path history gives one upload of the chat: one quoted name, no more."""
    if not url.startswith(prefix):
        return False
    name = url[len(prefix) :]
    return bool(name) and not any(c in name for c in "/?#") and unquote(name) not in (".", "..")


_RULE: ContextVar[FileUrlRule | None] = ContextVar("adk_asgi_file_urls", default=None)
_DATA_ONLY: Final = FileUrlRule()


def bind(rule: FileUrlRule) -> None:
    """``rule`` checks the requests of this context (one HTTP request, one live connection)."""
    _RULE.set(rule)


def current() -> FileUrlRule:
    return _RULE.get() or _DATA_ONLY
