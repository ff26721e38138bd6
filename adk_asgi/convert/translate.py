"""UI messages → ADK ``Content``: the sans-I/O sibling of the converter.

The client sends its whole copy of the chat with every request, but the ADK session is the
truth: only the *new* input is translated — here, the last user message of a new turn. The
answers a continuation of an assistant message carries are checked and translated by
:mod:`adk_asgi.hitl.continuation`.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse

from google.genai import types

from adk_asgi.errors import ClientError
from adk_asgi.wire.messages import (
    DataPart,
    FilePart,
    StepStartPart,
    TextPart,
    UIMessage,
)


class TranslationError(ClientError, ValueError):
    """A message that cannot become ADK input (400); the message says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(400, reason)


def decode_data_url(url: str) -> tuple[str, bytes]:
    """``data:<mime>[;base64],<payload>`` → ``(mime, bytes)``."""
    header, sep, payload = url.partition(",")
    if not sep or not header.startswith("data:"):
        raise TranslationError("a data URL must look like data:<type>[;base64],<data>")
    params = header[len("data:") :].split(";")
    mime = params[0] or "text/plain"
    if "base64" in params[1:]:
        try:
            return mime, base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise TranslationError("a data URL's base64 payload is invalid") from None
    return mime, urllib.parse.unquote_to_bytes(payload)


def file_to_part(part: FilePart) -> types.Part:
    """A file part: inline bytes for a ``data:`` URL, a file reference for anything else.

    Which URLs get here is decided before (:mod:`adk_asgi.serving.file_urls`: ``data:`` unless the
    app allows more), since the model reads a file reference with the server's credentials."""
    if part.url.startswith("data:"):
        _, data = decode_data_url(part.url)
        return types.Part(
            inline_data=types.Blob(mime_type=part.media_type, data=data, display_name=part.filename)
        )
    try:
        scheme = urllib.parse.urlsplit(part.url).scheme
    except ValueError:
        scheme = ""
    if not scheme:  # an upload's URL, as history gives it back: the bytes are not at hand here
        raise TranslationError("a file of an earlier message cannot be sent again: attach it anew")
    if scheme not in ("http", "https", "gs"):
        raise TranslationError(f"a file URL must be data:, http(s): or gs:, not {scheme or '?'}:")
    return types.Part(
        file_data=types.FileData(
            file_uri=part.url, mime_type=part.media_type, display_name=part.filename
        )
    )


def user_content(message: UIMessage) -> types.Content:
    """The new user turn as ADK input.

    Text and files become parts. ``data-*`` and ``step-start`` parts are the app's own
    bookkeeping and are not model input; anything else has no meaning in a user message.
    """
    if message.role != "user":
        raise TranslationError(f"expected a user message, got a {message.role} message")
    parts: list[types.Part] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                parts.append(types.Part(text=part.text))
        elif isinstance(part, FilePart):
            parts.append(file_to_part(part))
        elif isinstance(part, DataPart | StepStartPart):
            continue
        else:
            raise TranslationError(f"a user message cannot carry a {part.type!r} part")
    if not parts:
        raise TranslationError("the user message has no text or file to send")
    return types.Content(role="user", parts=parts)
