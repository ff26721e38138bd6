"""What both transports refuse in a decoded chat request, with a 4xx reason.

Checked before anything runs, so a refusal is always a clean 4xx (SSE) or an ``error`` frame
(live), never a stream that starts and then fails.
"""

from __future__ import annotations

import msgspec

from adk_asgi.errors import ClientError
from adk_asgi.hitl.pending import PAYLOADS_KEY
from adk_asgi.serving import file_urls
from adk_asgi.serving.file_urls import FileUrlRule
from adk_asgi.wire.decoding import BadJson, check_json, check_readable, decode
from adk_asgi.wire.messages import ChatRequest, ToolPart, decode_chat_request
from adk_asgi.wire.values import (
    CHAT_ID,
    CHAT_ID_RULE,
    CLIENT_ID,
    CLIENT_ID_RULE,
    MEDIA_TYPE_RULE,
    is_media_type,
)


def decode_and_check(body: bytes, urls: FileUrlRule | None = None) -> ChatRequest:
    """The request body as a checked :class:`ChatRequest`, or a 4xx :class:`ClientError`.
    ``POST /chat`` only: a regenerate may send no message (the session holds it)."""
    chat = decode_chat_request(body)  # a RequestError is a 400 ClientError
    check_chat(chat, urls, stored_regenerate=True)
    return chat


def check_chat(
    chat: ChatRequest, urls: FileUrlRule | None = None, *, stored_regenerate: bool = False
) -> None:
    """``urls``: the file URLs the user may send; by default the rule bound for this context
    (:func:`.file_urls.bind`: the live connection's), else ``data:`` only.
    ``stored_regenerate``: a regenerate that sends no message at all (``{id, trigger,
    messageId?}``: the session holds the message to answer again) passes; the live protocol
    has no regenerate, so it never lets one through."""
    if not CHAT_ID.fullmatch(chat.id):
        raise ClientError(400, f"id: {CHAT_ID_RULE}")
    regenerate = chat.trigger == "regenerate-message" and chat.last_only
    if not chat.messages and not (stored_regenerate and regenerate):
        raise ClientError(400, "messages: the chat has no messages")
    _check_ids(chat)
    if chat.messages and chat.messages[-1].role == "system":
        raise ClientError(422, "the last message must be a user or assistant message")
    payloads = chat.extra.get(PAYLOADS_KEY, {})
    if not isinstance(payloads, dict):
        raise ClientError(400, f"{PAYLOADS_KEY}: expected an object of approval id → payload")
    _check_media_types(chat)
    (urls or file_urls.current()).check(chat)


def _check_media_types(chat: ChatRequest) -> None:
    """Each user file part's media type, before anything is stored (:func:`.is_media_type`)."""
    for where, part in chat.user_files():
        if not is_media_type(part.media_type):
            raise ClientError(400, f"{where}.mediaType: {MEDIA_TYPE_RULE}")


MAX_PARTS = 1_000
"""The parts the last message (the one translated for ADK, and stored) may hold: every part
is a genai ``Part`` to build and store (about 9 µs each), so 125,000 of them held the event
loop for over a second; a long agentic turn holds a few hundred."""


MAX_METADATA = 4 * 1024
"""The JSON bytes a user message's own ``metadata`` may take: it is stored with the message
(in the tags of each event of its run) and returned by history."""


def _check_ids(chat: ChatRequest) -> None:
    """Every id the client sends is matched whole and bounded (:data:`.CLIENT_ID`): they are
    echoed in frames and stored in the session. And the last message is bounded in parts."""
    if chat.message_id is not None and not CLIENT_ID.fullmatch(chat.message_id):
        raise ClientError(400, f"messageId: {CLIENT_ID_RULE}")
    for i, message in enumerate(chat.messages):
        if not CLIENT_ID.fullmatch(message.id):
            raise ClientError(400, f"{chat.where(i)}.id: {CLIENT_ID_RULE}")
    if not chat.messages:
        return
    last = len(chat.messages) - 1
    if len(chat.messages[last].parts) > MAX_PARTS:
        raise ClientError(413, f"{chat.where(last)}.parts: a message holds at most {MAX_PARTS}")
    metadata = chat.messages[last].metadata  # (an assistant message's is the server's: ignored)
    too_big = metadata is not None and len(msgspec.json.encode(metadata)) > MAX_METADATA
    if chat.messages[last].role == "user" and too_big:
        raise ClientError(413, f"{chat.where(last)}.metadata: at most {MAX_METADATA} bytes of JSON")
    for j, part in enumerate(chat.messages[last].parts):
        if not isinstance(part, ToolPart):
            continue
        where = f"{chat.where(last)}.parts[{j}]"
        if not CLIENT_ID.fullmatch(part.tool_call_id):
            raise ClientError(400, f"{where}.toolCallId: {CLIENT_ID_RULE}")
        if part.approval is not None and not CLIENT_ID.fullmatch(part.approval.id):
            raise ClientError(400, f"{where}.approval.id: {CLIENT_ID_RULE}")


def decode_send_frame(text: str) -> ChatRequest:
    """A ``send`` frame carries the same fields as the SSE body (``body`` holds the extras)."""
    chat = decode_chat_request(text.encode())
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
        frame = decode(_RESUME, text)
    except (msgspec.DecodeError, BadJson) as exc:
        raise ClientError(400, f"resume: {exc}") from None
    if frame.id is not None and not CHAT_ID.fullmatch(frame.id):
        raise ClientError(400, f"id: {CHAT_ID_RULE}")
    if frame.last_sequence is not None and frame.last_sequence < -1:
        raise ClientError(400, "lastSequence: expected -1 or more")
    return frame.id, frame.last_sequence


_FRAME = msgspec.json.Decoder(dict[str, msgspec.Raw])
_STR = msgspec.json.Decoder(str)


class FrameRefused(ClientError):
    """A live frame the decoding policy refuses; ``request_id``: its ``requestId``, when that
    could be read (``""`` otherwise), so the ``error`` frame names the request."""

    def __init__(self, request_id: str, reason: str) -> None:
        super().__init__(400, reason)
        self.request_id = request_id


def frame_head(text: str) -> tuple[str, str] | None:
    """A live client frame's ``type`` and ``requestId`` (``""`` when absent), or ``None`` when
    it is not a JSON object with string values there. A frame the decoding policy refuses
    (:mod:`adk_asgi.wire.decoding`), or whose ``requestId`` is not an id, raises
    :class:`FrameRefused`: every frame passes here first, so no later decoding meets it. A
    frame nested deeper than :data:`~adk_asgi.wire.decoding.READABLE_DEPTH` is refused unread
    (``""``) on every Python, whatever depth the interpreter lets msgspec reach."""
    data = text.encode()
    try:
        check_readable(data)
        frame = decode(_FRAME, text)
        kind = decode(_STR, frame["type"]) if "type" in frame else ""
        request_id = decode(_STR, frame["requestId"]) if "requestId" in frame else ""
    except BadJson as exc:
        raise FrameRefused("", str(exc)) from None
    except msgspec.DecodeError:
        return None
    if request_id and not CLIENT_ID.fullmatch(request_id):
        raise FrameRefused("", f"requestId: {CLIENT_ID_RULE}")
    try:
        check_json(data)
    except BadJson as exc:
        raise FrameRefused(request_id, str(exc)) from None
    return kind, request_id
