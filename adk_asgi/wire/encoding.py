"""Chunk → bytes: JSON for one chunk, SSE events (framed by :mod:`.sse_frames`), and the
version gate (AI SDK 5, 6 or 7), for chunks and for the messages of history
(:func:`admit_messages`).

Kept apart from the chunk types so both transports share one encoder, and so the gate sits at
the last point before the wire, where nothing can slip past it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

import msgspec

from adk_asgi.wire.chunks import (
    Error,
    Finish,
    ToolApprovalRequest,
    ToolApprovalResponse,
    ToolOutputDenied,
    ToolOutputError,
    UIMessageChunk,
    is_v7_only,
)
from adk_asgi.wire.messages import ToolPart, UIMessage
from adk_asgi.wire.sse_frames import DONE, sse_event

SSE_HEADERS: Final[dict[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
SSE_DONE: Final = sse_event(DONE.encode())
SSE_KEEP_ALIVE: Final = b": keep-alive\n\n"
"""An SSE comment: every client ignores it; a proxy sees the stream is alive."""
_ENCODER: Final = msgspec.json.Encoder()


def sse_events(chunks: Iterable[UIMessageChunk]) -> bytes:
    """The SSE events of ``chunks``, encoded as they are (no v6 gate)."""
    return b"".join(sse_event(_ENCODER.encode(chunk)) for chunk in chunks)


CUT_SHORT: Final = "The answer was cut short: the server stopped writing it before it ended."
"""The error a stored answer ends with when its writer stopped before it did (a live connection
closed and its answer ran past the detached timeout; a worker died mid-answer)."""
SSE_CUT_SHORT: Final = sse_events([Error(error_text=CUT_SHORT), Finish()]) + SSE_DONE
"""What the readers of such an answer get after its last stored piece, instead of waiting
forever: the error, ``finish`` and ``[DONE]``."""


SdkVersion = Literal[5, 6, 7]
"""The AI SDK major versions (``ai@5``, ``ai@6``, ``ai@7``) whose clients the app can serve."""
SDK_VERSIONS: Final[tuple[SdkVersion, ...]] = (5, 6, 7)


def named_sdk_version(name: str | None, served: SdkVersion) -> SdkVersion:
    """The version of a live client: what it names in its ``sdk`` query parameter
    (``transport.js`` says ``5`` or ``6``, its ``sdk`` option; the stock v7
    ``WebSocketChatTransport`` says nothing), except that an app that serves ai@5 (``served``)
    speaks ai@5 to every client, whatever it names: a page that left the option out still
    parses every chunk. (An app serving 6 cannot do the same: the stock v7 transport, which
    names nothing, would lose its v7 chunks.)"""
    if served == 5 or name == "5":
        return 5
    if name == "6":
        return 6
    return 7


NO_APPROVALS_IN_V5: Final = (
    "This step needs the user's approval, which an AI SDK 5 client cannot give: serve this "
    "agent with ai_sdk_version=6 or 7 (docs/ai-sdk-versions.md)."
)
"""What an ai@5 client is shown instead of an approval request. AdkApp refuses, at start-up, the
tools it can see asking for approval; a tool that calls ``request_confirmation`` itself, or a
toolset's tool, is only known when it asks."""
DENIED: Final = "The user denied this call."
DENIED_AUTOMATICALLY: Final = "This call was denied."
"""An automatic denial's error below v7, when the denial gave no reason."""


class ChunkEncoder:
    """Encodes chunks for one client, whose AI SDK major version decides what it may receive.

    A client rejects every chunk its ``uiMessageChunkSchema`` lacks, and a rejected chunk puts
    the whole chat into its error state. So:

    * below v7, v7-only chunks are dropped and an ``interrupted`` finish is reported as
      ``other``;
    * an automatic denial (an ``isAutomatic`` request, its ``approved: false`` response, then
      ``tool-output-denied``) is the call's ``tool-output-error`` below v7, with the denial's
      reason: ai@6 has no approval the user did not give (the encoder remembers the
      automatic requests it dropped, one client's stream at a time);
    * ai@5 has no approvals (no ``tool-approval-request``, no ``tool-output-denied``): a request
      becomes an ``error`` chunk that says why, and a denial the call's ``tool-output-error``, so
      the call's part settles. Every other v6 chunk is in ai@5's schema, whose objects are loose:
      the fields v6 added (``title``, ``toolMetadata``, …) pass and are ignored.
    """

    __slots__ = ("_automatic", "_denied", "_encoder", "version")

    def __init__(self, version: SdkVersion = 6) -> None:
        if version not in SDK_VERSIONS:
            raise ValueError(f"AI SDK version must be one of {SDK_VERSIONS}, got {version!r}")
        self.version: SdkVersion = version
        self._encoder = msgspec.json.Encoder()
        self._automatic: dict[str, str] = {}
        """Below v7: the approval id → call id of each automatic request dropped."""
        self._denied: set[str] = set()
        """Below v7: the calls whose automatic denial was sent as their error."""

    def admit(self, chunk: UIMessageChunk) -> UIMessageChunk | None:
        """The chunk as this client may receive it, or ``None`` when it must not see it."""
        if self.version == 7:
            return chunk
        if isinstance(chunk, ToolApprovalRequest) and chunk.is_automatic:
            self._automatic[chunk.approval_id] = chunk.tool_call_id
        elif isinstance(chunk, ToolApprovalResponse) and not chunk.approved:
            call_id = self._automatic.pop(chunk.approval_id, None)
            if call_id is not None:
                self._denied.add(call_id)
                return ToolOutputError(
                    tool_call_id=call_id, error_text=chunk.reason or DENIED_AUTOMATICALLY
                )
        elif isinstance(chunk, ToolOutputDenied) and chunk.tool_call_id in self._denied:
            self._denied.discard(chunk.tool_call_id)
            return None
        if is_v7_only(chunk):
            if isinstance(chunk, Finish):
                return msgspec.structs.replace(chunk, finish_reason="other")
            return None
        if self.version == 5:
            if isinstance(chunk, ToolApprovalRequest):
                return Error(error_text=NO_APPROVALS_IN_V5)
            if isinstance(chunk, ToolOutputDenied):
                return ToolOutputError(tool_call_id=chunk.tool_call_id, error_text=DENIED)
        return chunk

    def json(self, chunk: UIMessageChunk) -> bytes:
        return self._encoder.encode(chunk)

    def sse(self, chunk: UIMessageChunk) -> bytes:
        """One SSE event (``data: <json>`` and the blank line every event needs), or ``b""``."""
        admitted = self.admit(chunk)
        if admitted is None:
            return b""
        return sse_event(self._encoder.encode(admitted))


def admit_messages(messages: list[UIMessage], *, v7: bool) -> list[UIMessage]:
    """History as a client of this version built it from the streams: below v7, without what the
    chunk gate kept from it (an automatic approval: the part shows its call and result only; an
    automatic denial: the call's error, with the reason).
    Changes ``messages`` in place and returns them."""
    if v7:
        return messages
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolPart) and part.approval and part.approval.is_automatic:
                if part.state == "output-denied":  # an automatic denial: the call's error
                    part.state = "output-error"
                    part.error_text = part.approval.reason or DENIED_AUTOMATICALLY
                part.approval = None
    return messages
