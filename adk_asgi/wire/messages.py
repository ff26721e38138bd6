"""The request side: ``UIMessage`` and its parts (v6 and v7), and the chat request body.

A part's ``type`` is either a fixed name (``text``, ``file``, …) or a prefixed one
(``tool-<name>``, ``data-<name>``), which a msgspec tag cannot express. So the body is decoded
once into raw parts (``msgspec.Raw`` slices of the original bytes, no copy), and each part is
then decoded straight into its struct by a decoder chosen from its ``type``. Every decoder is
built once, at import.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, Literal

import msgspec

from adk_asgi.errors import ClientError
from adk_asgi.wire.decoding import ANY, BadJson, check_json, decode

ProviderMetadata = dict[str, dict[str, Any]]

ToolState = Literal[
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
]
Trigger = Literal["submit-message", "regenerate-message"]


class _Part(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


class _FixedPart(_Part, tag_field="type"):
    """A part whose ``type`` is a fixed name: a msgspec tag, so it is always encoded."""

    @property
    def type(self) -> str:
        tag = self.__struct_config__.tag
        assert isinstance(tag, str)
        return tag


class TextPart(_FixedPart, tag="text"):
    text: str
    state: Literal["streaming", "done"] | None = None
    provider_metadata: ProviderMetadata | None = None
    citations: list[Any] | None = None


class ReasoningPart(_FixedPart, tag="reasoning"):
    text: str
    id: str | None = None
    state: Literal["streaming", "done"] | None = None
    provider_metadata: ProviderMetadata | None = None


class FilePart(_FixedPart, tag="file"):
    media_type: str
    url: str
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None
    provider_reference: dict[str, str] | None = None


class SourceUrlPart(_FixedPart, tag="source-url"):
    source_id: str
    url: str
    title: str | None = None
    provider_metadata: ProviderMetadata | None = None


class SourceDocumentPart(_FixedPart, tag="source-document"):
    source_id: str
    media_type: str
    title: str
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


class StepStartPart(_FixedPart, tag="step-start"):
    pass


class CustomPart(_FixedPart, tag="custom"):
    """v7: a provider-specific ``custom`` part."""

    kind: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningFilePart(_FixedPart, tag="reasoning-file"):
    """v7: a file produced while reasoning."""

    media_type: str
    url: str
    provider_metadata: ProviderMetadata | None = None


class SteeringMessagePart(_FixedPart, tag="steering-message"):
    """v7: a message the user injected while the assistant was answering."""

    id: str
    parts: list[dict[str, Any]]


class DataPart(_Part):
    type: str  # "data-<name>"
    data: Any = None
    id: str | None = None


class Approval(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    id: str
    approved: bool | None = None
    reason: str | None = None
    descriptor: Any = None
    signature: str | None = None
    input_schema_input: Any = None
    request_reason: str | None = None  # v7
    is_automatic: bool | None = None  # v7


class ToolPart(_Part):
    """A tool call: ``tool-<name>`` (static) or ``dynamic-tool`` (``tool_name`` is set)."""

    type: str
    tool_call_id: str
    state: ToolState
    tool_name: str | None = None  # dynamic-tool only
    input: Any = None
    raw_input: Any = None
    output: Any = msgspec.UNSET
    """``UNSET`` when the part has none (``omit_defaults`` drops ``None``): an output of
    ``null`` is one (``addToolOutput({output: null})``), encoded as the client holds it."""
    error_text: str | None = None
    approval: Approval | None = None
    provider_executed: bool | None = None
    preliminary: bool | None = None
    title: str | None = None
    tool_metadata: dict[str, Any] | None = None
    call_provider_metadata: ProviderMetadata | None = None
    result_provider_metadata: ProviderMetadata | None = None
    input_encoding: Literal["json", "text"] | None = None
    dynamic: bool | None = None

    @property
    def name(self) -> str:
        """The tool's name, whether the part is static (``tool-<name>``) or dynamic."""
        if self.type == "dynamic-tool":
            return self.tool_name or ""
        return self.type[len("tool-") :]


UIPart = (
    TextPart
    | ReasoningPart
    | FilePart
    | SourceUrlPart
    | SourceDocumentPart
    | StepStartPart
    | CustomPart
    | ReasoningFilePart
    | SteeringMessagePart
    | DataPart
    | ToolPart
)


class UIMessage(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[UIPart]
    metadata: Any = None


class ChatRequest(msgspec.Struct, kw_only=True):
    """The body ``DefaultChatTransport`` POSTs (and the ``send`` frame of the WebSocket one).

    The client sends the whole chat (``messages``) or, with the persistence guide's
    ``prepareSendMessagesRequest``, only its last message (``message``); either way the
    session is the chat's truth and only the last message is read, so both decode to
    ``messages`` (``[message]``). A regenerate may send no message at all (``[]``): the
    session holds the message to answer again."""

    id: str
    messages: list[UIMessage]
    trigger: Trigger = "submit-message"
    message_id: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """The keys the client added to the body (``new DefaultChatTransport({body})``,
    ``sendMessage(msg, {body})``): read only by the app's ``request_state`` hook."""
    last_only: bool = False
    """The body held ``message`` (or no message), not ``messages``: the client keeps no
    copy of the chat for the server, so a message it sends again is recognized by its id."""
    state: dict[str, Any] | None = None
    """What the app's ``request_state`` hook made of :attr:`extra`, once asked: a live
    connection asks as it reads the ``send`` frame (the hook may be async; the protocol machine
    that then takes the request is sans-I/O). Never decoded from the body."""

    def where(self, index: int) -> str:
        """How the body names ``messages[index]``, for a reason the client can act on."""
        return "message" if self.last_only else f"messages[{index}]"

    def user_files(self) -> Iterator[tuple[str, FilePart]]:
        """Each file part of the user's messages (every one: the stock client re-sends the
        chat), with how the body names it (``messages[i].parts[j]``)."""
        for i, message in enumerate(self.messages):
            if message.role != "user":
                continue
            for j, part in enumerate(message.parts):
                if isinstance(part, FilePart):
                    yield f"{self.where(i)}.parts[{j}]", part


class RequestError(ClientError, ValueError):
    """A request body that does not follow the protocol (400); the message names the problem."""

    def __init__(self, reason: str) -> None:
        super().__init__(400, reason)


# --- decoding --------------------------------------------------------------------------------


class _PartHead(msgspec.Struct):
    type: str


class _RawMessage(msgspec.Struct, omit_defaults=True):
    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[msgspec.Raw]
    metadata: Any = None


_FIXED_PARTS: Final[dict[str, type[_Part]]] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "file": FilePart,
    "source-url": SourceUrlPart,
    "source-document": SourceDocumentPart,
    "step-start": StepStartPart,
    "custom": CustomPart,
    "reasoning-file": ReasoningFilePart,
    "steering-message": SteeringMessagePart,
    "dynamic-tool": ToolPart,
}
_PART_CLASSES: Final[list[type[_Part]]] = [*_FIXED_PARTS.values(), ToolPart, DataPart]
_PART_DECODERS: Final[dict[type[_Part], msgspec.json.Decoder[Any]]] = {
    cls: msgspec.json.Decoder(cls) for cls in _PART_CLASSES
}
_HEAD_DECODER: Final = msgspec.json.Decoder(_PartHead)
_BODY_DECODER: Final = msgspec.json.Decoder(dict[str, msgspec.Raw])
_FIELD_DECODERS: Final[dict[str, msgspec.json.Decoder[Any]]] = {
    "id": msgspec.json.Decoder(str),
    "messages": msgspec.json.Decoder(list[_RawMessage]),
    "message": msgspec.json.Decoder(_RawMessage),
    "trigger": msgspec.json.Decoder(Trigger),
    "messageId": msgspec.json.Decoder(str | None),
}


def _part_class(part_type: str) -> type[_Part]:
    if part_type in _FIXED_PARTS:
        return _FIXED_PARTS[part_type]
    if part_type.startswith("tool-") and len(part_type) > len("tool-"):
        return ToolPart
    if part_type.startswith("data-"):
        return DataPart
    raise RequestError(f"unknown part type {part_type!r}")


def _decode_part(raw: msgspec.Raw, where: str) -> UIPart:
    try:
        part_type = decode(_HEAD_DECODER, raw).type
        cls = _part_class(part_type)
        part: UIPart = decode(_PART_DECODERS[cls], raw)
    except (msgspec.DecodeError, BadJson) as exc:
        raise RequestError(f"{where}: {exc}") from None
    except RequestError as exc:
        raise RequestError(f"{where}: {exc}") from None
    if isinstance(part, ToolPart) and part.type == "dynamic-tool" and not part.tool_name:
        raise RequestError(f"{where}: a dynamic-tool part needs a toolName")
    return part


def _decode_field(top: dict[str, msgspec.Raw], key: str) -> Any:
    try:
        return decode(_FIELD_DECODERS[key], top[key])
    except (msgspec.DecodeError, BadJson) as exc:
        raise RequestError(f"{key}: {exc}") from None


def _decode_extra(key: str, raw: msgspec.Raw) -> Any:
    try:
        return decode(ANY, raw)
    except (msgspec.DecodeError, BadJson) as exc:
        raise RequestError(f"{key}: {exc}") from None


def decode_chat_request(body: bytes) -> ChatRequest:
    """Decode a chat request body, or raise :class:`RequestError` naming what is wrong.

    One pass over the bytes: the top level is split into raw values, and each protocol key is
    decoded by its own typed decoder; every other top-level key is kept in ``extra``.
    Structure only: whether the messages make sense for a chat is the caller's question.
    What no part of the bridge takes (:mod:`.decoding`: not UTF-8, a number out of range,
    nesting past the limit, NUL) is refused first.
    """
    try:
        check_json(body)
        top = decode(_BODY_DECODER, body)
    except BadJson as exc:
        raise RequestError(f"the request body is refused: {exc}") from None
    except msgspec.ValidationError:
        raise RequestError("the request body must be a JSON object") from None
    except msgspec.DecodeError as exc:
        raise RequestError(f"the request body is not valid JSON: {exc}") from None
    if "id" not in top:
        raise RequestError("the request body has no 'id'")
    trigger: Trigger = _decode_field(top, "trigger") if "trigger" in top else "submit-message"
    raw_messages, last_only = _raw_messages(top, trigger)
    where = "message" if last_only else "messages[{}]"
    messages = [
        UIMessage(
            id=m.id,
            role=m.role,
            metadata=m.metadata,
            parts=[_decode_part(p, f"{where.format(i)}.parts[{j}]") for j, p in enumerate(m.parts)],
        )
        for i, m in enumerate(raw_messages)
    ]
    extra = {k: _decode_extra(k, v) for k, v in top.items() if k not in _FIELD_DECODERS}
    return ChatRequest(
        id=_decode_field(top, "id"),
        messages=messages,
        trigger=trigger,
        message_id=_decode_field(top, "messageId") if "messageId" in top else None,
        extra=extra,
        last_only=last_only,
    )


def _raw_messages(top: dict[str, msgspec.Raw], trigger: Trigger) -> tuple[list[_RawMessage], bool]:
    """The body's messages, and whether it sent the last one alone (``message``). Exactly one
    of ``messages`` and ``message``; neither only for a regenerate, which names a message
    the session holds (``messageId``, or its last)."""
    if "messages" in top and "message" in top:
        raise RequestError("the request body has both 'messages' and 'message': send one")
    if "messages" in top:
        return _decode_field(top, "messages"), False
    if "message" in top:
        return [_decode_field(top, "message")], True
    if trigger == "regenerate-message":
        return [], True
    raise RequestError("the request body has no 'messages' (or 'message', the last one)")


def ui_messages(messages: list[dict[str, Any]]) -> list[UIMessage]:
    """Messages as the client holds them (plain JSON objects: the client's reducer,
    :mod:`adk_asgi.convert.ui_message`) as :class:`UIMessage` structs."""
    return [
        UIMessage(
            id=m["id"],
            role=m["role"],
            metadata=m.get("metadata"),
            parts=[_ui_part(p) for p in m["parts"]],
        )
        for m in messages
    ]


def _ui_part(part: dict[str, Any]) -> UIPart:
    converted: UIPart = msgspec.convert(part, _part_class(part["type"]))  # type: ignore[assignment]
    return converted
