"""One chunk of every type the package defines (``adk_asgi.wire.chunks.UIMessageChunk``), every
field set, in an order a stream could have: what the encoder, the reducer and the real AI SDK
clients are checked on for every type at once (tests/unit/test_chunk_types.py,
tests/e2e/test_ai_sdk_v5.py). A new chunk type gets its sample here."""

from __future__ import annotations

from adk_asgi.wire import chunks as c

EVERY_CHUNK: list[c.UIMessageChunk] = [
    c.Start(message_id="m1", message_metadata={"k": 1}),
    c.StartStep(),
    c.ReasoningStart(id="r1", provider_metadata={"adk": {"author": "a"}}),
    c.ReasoningDelta(id="r1", delta="hm"),
    c.ReasoningEnd(id="r1"),
    c.ReasoningFile(url="data:,x", media_type="text/plain"),
    c.TextStart(id="t1"),
    c.TextDelta(id="t1", delta="hi"),
    c.TextEnd(id="t1", citations=[{"url": "https://x"}]),
    c.SourceUrl(source_id="s1", url="https://x", title="X"),
    c.SourceDocument(source_id="s2", media_type="text/plain", title="D", filename="d.txt"),
    c.File(url="data:text/plain;base64,eA==", media_type="text/plain"),
    c.DataChunk(type="data-weather", id="d1", data={"t": 1}),
    c.Custom(kind="adk.x"),
    c.ToolInputStart(tool_call_id="a", tool_name="f", title="F", tool_metadata={"k": 1}),
    c.ToolInputDelta(tool_call_id="a", input_text_delta="{}"),
    c.ToolInputAvailable(tool_call_id="a", tool_name="f", input={}, title="F"),
    c.ToolApprovalRequest(approval_id="ap", tool_call_id="a"),
    c.ToolApprovalResponse(approval_id="ap", approved=False),
    c.ToolOutputDenied(tool_call_id="a"),
    c.ToolInputStart(tool_call_id="b", tool_name="g", provider_executed=True),
    c.ToolInputError(tool_call_id="b", tool_name="g", input=None, error_text="bad input"),
    c.ToolInputAvailable(tool_call_id="e", tool_name="g", input={"x": 1}, dynamic=True),
    c.ToolOutputAvailable(tool_call_id="e", output=1, dynamic=True, preliminary=True),
    c.ToolOutputAvailable(tool_call_id="e", output=2, dynamic=True),
    c.ToolInputAvailable(tool_call_id="h", tool_name="g", input={}),
    c.ToolOutputError(tool_call_id="h", error_text="failed"),
    c.Error(error_text="oops"),
    c.MessageMetadata(message_metadata={"k": 2}),
    c.FinishStep(),
    c.ResetStep(),
    c.SteeringMessage(id="s", parts=[]),
    c.Abort(reason="stopped"),
    c.Finish(finish_reason="interrupted"),
]
