"""What both transports refuse in a decoded chat request, with a 4xx reason.

Checked before anything runs, so a refusal is always a clean 4xx (SSE) or an ``error`` frame
(live), never a stream that starts and then fails.
"""

from __future__ import annotations

import msgspec

from . import file_urls
from .errors import ClientError
from .file_urls import FileUrlRule
from .messages import CHAT_ID, CHAT_ID_RULE, ChatRequest, RequestError, decode_chat_request
from .pending import PAYLOADS_KEY


def decode_and_check(body: bytes, urls: FileUrlRule | None = None) -> ChatRequest:
    """The request body as a checked :class:`ChatRequest`, or a 4xx :class:`ClientError`."""
    try:
        chat = decode_chat_request(body)
    except RequestError as exc:
        raise ClientError(400, str(exc)) from None
    check_chat(chat, urls)
    return chat


def check_chat(chat: ChatRequest, urls: FileUrlRule | None = None) -> None:
    """``urls``: the file URLs the user may send; by default the rule bound for this context
    (:func:`.file_urls.bind`: the live connection's), else ``data:`` only."""
    if not CHAT_ID.match(chat.id):
        raise ClientError(400, f"id: {CHAT_ID_RULE}")
    if not chat.messages:
        raise ClientError(400, "messages: the chat has no messages")
    if chat.messages[-1].role == "system":
        raise ClientError(422, "the last message must be a user or assistant message")
    payloads = chat.extra.get(PAYLOADS_KEY, {})
    if not isinstance(payloads, dict):
        raise ClientError(400, f"{PAYLOADS_KEY}: expected an object of approval id → payload")
    (urls or file_urls.current()).check(chat)


def decode_send_frame(text: str) -> ChatRequest:
    """A ``send`` frame carries the same fields as the SSE body (``body`` holds the extras)."""
    try:
        chat = decode_chat_request(text.encode())
    except RequestError as exc:
        raise ClientError(400, str(exc)) from None
    body = chat.extra.get("body")
    if isinstance(body, dict):
        chat.extra = {**chat.extra, **body}
    return chat


class _ResumeFrame(msgspec.Struct, rename="camel"):
    id: str | None = None
    last_sequence: int | None = None


_RESUME = msgspec.json.Decoder(_ResumeFrame)


def decode_resume_frame(text: str) -> tuple[str | None, int | None]:
    """A ``resume`` frame's chat id and ``lastSequence`` (either may be absent), or a 400."""
    try:
        frame = _RESUME.decode(text)
    except msgspec.DecodeError as exc:
        raise ClientError(400, f"resume: {exc}") from None
    if frame.id is not None and not CHAT_ID.match(frame.id):
        raise ClientError(400, f"id: {CHAT_ID_RULE}")
    if frame.last_sequence is not None and frame.last_sequence < -1:
        raise ClientError(400, "lastSequence: expected -1 or more")
    return frame.id, frame.last_sequence


_FRAME = msgspec.json.Decoder(dict[str, msgspec.Raw])
_STR = msgspec.json.Decoder(str)


def frame_head(text: str) -> tuple[str, str] | None:
    """A live client frame's ``type`` and ``requestId`` (``""`` when absent), or ``None`` when
    it is not a JSON object with string values there."""
    try:
        frame = _FRAME.decode(text)
        kind = _STR.decode(frame["type"]) if "type" in frame else ""
        request_id = _STR.decode(frame["requestId"]) if "requestId" in frame else ""
    except msgspec.DecodeError:
        return None
    return kind, request_id
