"""The AI SDK *UI message stream* chunks, as msgspec structs.

One struct per chunk type of ``ai@6`` plus the ``ai@7`` additions. Together they form a union
tagged on ``type``. The rules come from the client's zod schema (``uiMessageChunkSchema``):

* keys are camelCase on the wire (``rename="camel"``);
* an optional key that is unset is *omitted*, never written as ``null`` — the client rejects
  ``null`` in optional fields (``omit_defaults=True`` with ``None`` defaults does this);
* ``input``, ``output`` and ``data`` are typed ``unknown`` on the client: the key must be present
  even when the value is ``null``, so they are required fields here;
* v7-only chunk types (their ``v7_only`` class flag) and ``finishReason: "interrupted"`` fail
  validation in a v6 client, so the encoder refuses them unless it is told the client is v7.

``data-*`` chunks carry their name in ``type`` itself, which a fixed msgspec tag cannot express,
so :class:`DataChunk` is an untagged struct whose ``type`` is an ordinary field.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec

JSONObject = dict[str, Any]
ProviderMetadata = dict[str, dict[str, Any]]

FinishReason = Literal[
    "stop", "length", "content-filter", "tool-calls", "error", "other", "interrupted"
]


class _Chunk(
    msgspec.Struct,
    tag_field="type",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    v7_only: ClassVar[bool] = False


class Start(_Chunk, tag="start"):
    message_id: str | None = None
    message_metadata: Any = None


class Finish(_Chunk, tag="finish"):
    finish_reason: FinishReason | None = None
    message_metadata: Any = None


class Abort(_Chunk, tag="abort"):
    reason: str | None = None


class StartStep(_Chunk, tag="start-step"):
    pass


class FinishStep(_Chunk, tag="finish-step"):
    pass


class Error(_Chunk, tag="error"):
    error_text: str


class MessageMetadata(_Chunk, tag="message-metadata"):
    message_metadata: Any  # required key, may be null


class TextStart(_Chunk, tag="text-start"):
    id: str
    provider_metadata: ProviderMetadata | None = None


class TextDelta(_Chunk, tag="text-delta"):
    id: str
    delta: str
    provider_metadata: ProviderMetadata | None = None


class TextEnd(_Chunk, tag="text-end"):
    id: str
    provider_metadata: ProviderMetadata | None = None
    citations: list[JSONObject] | None = None  # v7 field; ignored by v6 (loose object)


class ReasoningStart(_Chunk, tag="reasoning-start"):
    id: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningDelta(_Chunk, tag="reasoning-delta"):
    id: str
    delta: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningEnd(_Chunk, tag="reasoning-end"):
    id: str
    provider_metadata: ProviderMetadata | None = None


class ToolInputStart(_Chunk, tag="tool-input-start"):
    tool_call_id: str
    tool_name: str
    input_encoding: Literal["json", "text"] | None = None
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    tool_metadata: JSONObject | None = None
    dynamic: bool | None = None
    title: str | None = None


class ToolInputDelta(_Chunk, tag="tool-input-delta"):
    tool_call_id: str
    input_text_delta: str


class ToolInputAvailable(_Chunk, tag="tool-input-available"):
    tool_call_id: str
    tool_name: str
    input: Any  # required key, may be null
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    tool_metadata: JSONObject | None = None
    dynamic: bool | None = None
    title: str | None = None


class ToolInputError(_Chunk, tag="tool-input-error"):
    tool_call_id: str
    tool_name: str
    input: Any  # required key, may be null
    error_text: str
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    tool_metadata: JSONObject | None = None
    dynamic: bool | None = None
    title: str | None = None


class ToolApprovalRequest(_Chunk, tag="tool-approval-request"):
    approval_id: str
    tool_call_id: str
    approval_descriptor: Any = None
    input_schema_input: Any = None
    signature: str | None = None
    reason: str | None = None  # v7 field; ignored by v6
    is_automatic: bool | None = None  # v7 field: such a request is v7 only (is_v7_only)


class ToolOutputAvailable(_Chunk, tag="tool-output-available"):
    tool_call_id: str
    output: Any  # required key, may be null
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    tool_metadata: JSONObject | None = None
    dynamic: bool | None = None
    preliminary: bool | None = None


class ToolOutputError(_Chunk, tag="tool-output-error"):
    tool_call_id: str
    error_text: str
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    tool_metadata: JSONObject | None = None
    dynamic: bool | None = None


class ToolOutputDenied(_Chunk, tag="tool-output-denied"):
    tool_call_id: str


class SourceUrl(_Chunk, tag="source-url"):
    source_id: str
    url: str
    title: str | None = None
    provider_metadata: ProviderMetadata | None = None


class SourceDocument(_Chunk, tag="source-document"):
    source_id: str
    media_type: str
    title: str
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


class File(_Chunk, tag="file"):
    url: str
    media_type: str
    provider_metadata: ProviderMetadata | None = None


# --- v7 only -------------------------------------------------------------------------------


class ToolApprovalResponse(_Chunk, tag="tool-approval-response"):
    v7_only: ClassVar[bool] = True
    approval_id: str
    approved: bool
    reason: str | None = None
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None


class Custom(_Chunk, tag="custom"):
    v7_only: ClassVar[bool] = True
    kind: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningFile(_Chunk, tag="reasoning-file"):
    v7_only: ClassVar[bool] = True
    url: str
    media_type: str
    provider_metadata: ProviderMetadata | None = None


class SteeringMessage(_Chunk, tag="steering-message"):
    v7_only: ClassVar[bool] = True
    id: str
    parts: list[JSONObject]


class ResetStep(_Chunk, tag="reset-step"):
    v7_only: ClassVar[bool] = True


class DataChunk(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """A ``data-<name>`` chunk: app-defined payloads the client stores as ``data-*`` parts."""

    v7_only: ClassVar[bool] = False
    type: str  # "data-<name>"
    data: Any  # required key, may be null
    id: str | None = None
    transient: bool | None = None

    def __post_init__(self) -> None:
        if not self.type.startswith("data-"):
            raise ValueError(f"a data chunk's type must start with 'data-', got {self.type!r}")


UIMessageChunk = (
    Start
    | Finish
    | Abort
    | StartStep
    | FinishStep
    | Error
    | MessageMetadata
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolInputStart
    | ToolInputDelta
    | ToolInputAvailable
    | ToolInputError
    | ToolApprovalRequest
    | ToolOutputAvailable
    | ToolOutputError
    | ToolOutputDenied
    | SourceUrl
    | SourceDocument
    | File
    | ToolApprovalResponse
    | Custom
    | ReasoningFile
    | SteeringMessage
    | ResetStep
    | DataChunk
)


def is_v7_only(chunk: UIMessageChunk) -> bool:
    """Whether a v6 client would reject this chunk (a v7-only type or finish reason), or would
    misread it: an automatic approval's request (``isAutomatic``) would leave a v6 part
    ``approval-requested``, its approval (``tool-approval-response``) being v7 only."""
    if chunk.v7_only:
        return True
    if isinstance(chunk, ToolApprovalRequest):
        return chunk.is_automatic is True
    return isinstance(chunk, Finish) and chunk.finish_reason == "interrupted"
