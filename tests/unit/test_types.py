"""Chunk structs on the wire, the version gate (ai@5, ai@6, ai@7), and request decoding."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from adk_asgi.wire import chunks as c
from adk_asgi.wire.encoding import SSE_DONE, ChunkEncoder
from adk_asgi.wire.messages import (
    ChatRequest,
    DataPart,
    FilePart,
    RequestError,
    StepStartPart,
    TextPart,
    ToolPart,
    decode_chat_request,
)


def as_json(chunk: c.UIMessageChunk) -> dict[str, Any]:
    result: dict[str, Any] = msgspec.json.decode(ChunkEncoder(7).json(chunk))
    return result


def test_keys_are_camel_case_and_unset_optionals_are_omitted() -> None:
    assert as_json(c.ToolInputStart(tool_call_id="a", tool_name="t")) == {
        "type": "tool-input-start",
        "toolCallId": "a",
        "toolName": "t",
    }
    assert as_json(c.Start()) == {"type": "start"}
    assert as_json(c.Finish()) == {"type": "finish"}


def test_unknown_typed_keys_are_always_present_even_when_null() -> None:
    assert as_json(c.ToolOutputAvailable(tool_call_id="a", output=None)) == {
        "type": "tool-output-available",
        "toolCallId": "a",
        "output": None,
    }
    assert as_json(c.ToolInputAvailable(tool_call_id="a", tool_name="t", input=None)) == {
        "type": "tool-input-available",
        "toolCallId": "a",
        "toolName": "t",
        "input": None,
    }
    assert as_json(c.DataChunk(type="data-weather", data=None)) == {
        "type": "data-weather",
        "data": None,
    }
    assert as_json(c.MessageMetadata(message_metadata=None)) == {
        "type": "message-metadata",
        "messageMetadata": None,
    }


def test_data_chunk_type_must_start_with_data() -> None:
    with pytest.raises(ValueError, match="must start with 'data-'"):
        c.DataChunk(type="weather", data=1)


def test_sse_frame_ends_with_a_blank_line() -> None:
    assert ChunkEncoder().sse(c.TextDelta(id="t", delta="hi\n")) == (
        b'data: {"type":"text-delta","id":"t","delta":"hi\\n"}\n\n'
    )
    assert SSE_DONE == b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    "chunk",
    [
        c.ResetStep(),
        c.ToolApprovalResponse(approval_id="a", approved=True),
        c.Custom(kind="x.y"),
        c.ReasoningFile(url="data:,", media_type="text/plain"),
        c.SteeringMessage(id="s", parts=[]),
    ],
)
def test_v7_only_chunks_never_reach_a_v6_client(chunk: c.UIMessageChunk) -> None:
    assert c.is_v7_only(chunk)
    assert ChunkEncoder(6).sse(chunk) == b""
    assert ChunkEncoder(7).sse(chunk).startswith(b"data: {")


def test_interrupted_finish_is_other_for_a_v6_client() -> None:
    chunk = c.Finish(finish_reason="interrupted")
    assert ChunkEncoder(6).sse(chunk) == b'data: {"type":"finish","finishReason":"other"}\n\n'
    assert ChunkEncoder(7).sse(chunk) == (
        b'data: {"type":"finish","finishReason":"interrupted"}\n\n'
    )


@pytest.mark.parametrize(
    "chunk",
    [
        c.ResetStep(),
        c.ToolApprovalResponse(approval_id="a", approved=True),
        c.Custom(kind="x.y"),
        c.ReasoningFile(url="data:,", media_type="text/plain"),
        c.SteeringMessage(id="s", parts=[]),
    ],
)
def test_v7_only_chunks_never_reach_a_v5_client(chunk: c.UIMessageChunk) -> None:
    assert ChunkEncoder(5).sse(chunk) == b""


def test_an_ai5_client_gets_no_approval_chunks() -> None:
    """ai@5's schema has neither ``tool-approval-request`` nor ``tool-output-denied``: the
    request becomes an error that says why, the denial an error of its call."""
    v5 = ChunkEncoder(5)
    assert v5.admit(c.ToolApprovalRequest(approval_id="a", tool_call_id="t")) == c.Error(
        error_text=(
            "This step needs the user's approval, which an AI SDK 5 client cannot give: serve "
            "this agent with ai_sdk_version=6 or 7 (docs/ai-sdk-versions.md)."
        )
    )
    assert v5.sse(c.ToolOutputDenied(tool_call_id="t")) == (
        b'data: {"type":"tool-output-error","toolCallId":"t",'
        b'"errorText":"The user denied this call."}\n\n'
    )
    assert v5.sse(c.Finish(finish_reason="interrupted")) == (
        b'data: {"type":"finish","finishReason":"other"}\n\n'
    )
    for version in (6, 7):  # v6 and v7 clients get them as they are
        chunk = c.ToolOutputDenied(tool_call_id="t")
        assert ChunkEncoder(version).admit(chunk) is chunk


@pytest.mark.parametrize("version", [4, 8, 0])
def test_an_encoder_for_another_version_is_refused(version: Any) -> None:
    with pytest.raises(
        ValueError, match=f"AI SDK version must be one of \\(5, 6, 7\\), got {version}"
    ):
        ChunkEncoder(version)


def test_every_chunk_type_has_a_distinct_tag() -> None:
    tags = [
        cls.__struct_config__.tag for cls in c.UIMessageChunk.__args__ if cls is not c.DataChunk
    ]
    assert len(tags) == len(set(tags)) == 29


BODY = b"""{
  "plan": "pro", "id": "chat-1", "trigger": "submit-message", "messageId": "a1",
  "messages": [
    {"id": "u1", "role": "user", "metadata": {"k": 1}, "parts": [
      {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA==",
       "filename": "a.png"},
      {"type": "text", "text": "hi"}]},
    {"id": "a1", "role": "assistant", "parts": [
      {"type": "step-start"},
      {"type": "tool-get_weather", "toolCallId": "c1", "state": "approval-responded",
       "input": {"city": "Paris"}, "approval": {"id": "ap1", "approved": true, "reason": "ok"}},
      {"type": "dynamic-tool", "toolName": "search", "toolCallId": "c2",
       "state": "output-available", "input": {}, "output": [1, 2]},
      {"type": "data-weather", "id": "d1", "data": {"t": 1}},
      {"type": "reasoning", "text": "hm", "state": "done"},
      {"type": "source-url", "sourceId": "s", "url": "https://x"},
      {"type": "custom", "kind": "a.b"}
    ]}
  ]
}"""


def test_chat_request_decodes_every_part_into_its_struct() -> None:
    request = decode_chat_request(BODY)
    assert isinstance(request, ChatRequest)
    assert (request.id, request.trigger, request.message_id) == ("chat-1", "submit-message", "a1")
    assert request.extra == {"plan": "pro"}
    user, assistant = request.messages
    assert user.metadata == {"k": 1}
    assert user.parts == [
        FilePart(media_type="image/png", url="data:image/png;base64,AA==", filename="a.png"),
        TextPart(text="hi"),
    ]
    assert isinstance(assistant.parts[0], StepStartPart)
    static_tool, dynamic_tool, data = assistant.parts[1:4]
    assert isinstance(static_tool, ToolPart) and static_tool.name == "get_weather"
    assert static_tool.state == "approval-responded"
    assert static_tool.approval is not None and static_tool.approval.approved is True
    assert static_tool.approval.reason == "ok"
    assert isinstance(dynamic_tool, ToolPart) and dynamic_tool.name == "search"
    assert dynamic_tool.output == [1, 2]
    assert data == DataPart(type="data-weather", id="d1", data={"t": 1})
    assert [p.type for p in assistant.parts[4:]] == ["reasoning", "source-url", "custom"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{nope", "the request body is not valid JSON"),
        (b"[1, 2]", "the request body must be a JSON object"),
        (b'{"messages": []}', "the request body has no 'id'"),
        (b'{"id": "c"}', "the request body has no 'messages' (or 'message', the last one)"),
        (b'{"id": 5, "messages": []}', "id: Expected `str`, got `int`"),
        (b'{"id": "c", "messages": {}}', "messages: Expected `array`, got `object`"),
        (b'{"id": "c", "messages": [], "trigger": "go"}', "trigger: Invalid enum value 'go'"),
        (
            b'{"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "video"}]}]}',
            "messages[0].parts[0]: unknown part type 'video'",
        ),
        (
            b'{"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text"}]}]}',
            "messages[0].parts[0]: Object missing required field `text`",
        ),
        (
            b'{"id": "c", "messages": [{"id": "u", "role": "robot", "parts": []}]}',
            "messages: Invalid enum value 'robot' - at `$[0].role`",
        ),
        (
            b'{"id": "c", "messages": [{"id": "a", "role": "assistant", "parts": '
            b'[{"type": "tool-x", "toolCallId": "c", "state": "done"}]}]}',
            "messages[0].parts[0]: Invalid enum value 'done' - at `$.state`",
        ),
        (
            b'{"id": "c", "messages": [{"id": "a", "role": "assistant", "parts": '
            b'[{"type": "dynamic-tool", "toolCallId": "c", "state": "input-available"}]}]}',
            "messages[0].parts[0]: a dynamic-tool part needs a toolName",
        ),
    ],
)
def test_bad_bodies_name_the_problem(body: bytes, reason: str) -> None:
    with pytest.raises(RequestError) as info:
        decode_chat_request(body)
    assert str(info.value).startswith(reason)
