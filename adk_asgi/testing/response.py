"""What one request of :class:`~adk_asgi.testing.ChatClient` came to, over either transport.

A transport (:mod:`.sse_transport`, :mod:`.live_transport`) only moves a request and returns its
:class:`Exchange`: the status, the chunks as sent, a refusal or a close. The chat
(:mod:`.client`) applies the chunks to its messages the way ``useChat`` does and hands the test
a :class:`ChatResponse`, the same whichever transport carried it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from adk_asgi.convert.ui_parts import Chunk, UIMessageDict
from adk_asgi.testing.asgi_websocket import Closed

__all__ = ["ChatResponse", "Closed", "Exchange", "Transport"]


@dataclass
class Exchange:
    """One request as the transport saw it, before the chat applies it."""

    status: int
    chunks: list[Chunk] = field(default_factory=list)
    error: str | None = None
    """Why the request failed before or beside its chunks: a refusal, a live ``error`` frame,
    a connection lost."""
    closed: Closed | None = None
    started: bool = True
    """Whether a response stream began (a refused request has none: no message)."""


class Transport(Protocol):
    """How the chat's requests reach the app: ``DefaultChatTransport`` or
    ``WebSocketChatTransport``."""

    def body(
        self,
        chat_id: str,
        messages: list[UIMessageDict],
        trigger: str,
        message_id: str | None,
        extra: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        """What the stock transport sends for this request: a JSON body, or a ``send`` frame."""
        ...

    async def exchange(self, body: dict[str, Any], headers: Mapping[str, str] | None) -> Exchange:
        """Send ``body`` and read its response whole."""
        ...

    async def aclose(self) -> None: ...


@dataclass
class ChatResponse:
    """One request and what came of it."""

    status: int
    """The HTTP status: 200 for a stream; 4xx when the app refused the request. Live: 200
    once the request's stream started, the handshake's status when the app refused the
    connection (403…), 0 when an ``error`` frame refused the request or the connection
    closed before it started."""
    body: dict[str, Any]
    """What was sent, exactly: the JSON body posted, or the live ``send`` frame."""
    chunks: list[Chunk]
    """The stream's chunks as sent (``[DONE]`` left out); empty when refused."""
    message: UIMessageDict | None
    """The assistant message after this response, as the client shows it (a copy); ``None``
    when the request was refused."""
    error: str | None
    """The refusal's ``{"error": …}`` (the body's text if it is not that JSON), or an
    ``error`` chunk's text: what ``useChat``'s ``error`` would say. Live also: an ``error``
    frame's ``errorText``, or the stock transport's words for a connection closed mid-answer
    (``WebSocket chat network connection closed (code 1011: …).``)."""
    finish_reason: str | None
    """The ``finish`` chunk's ``finishReason`` (``stop``, ``tool-calls``, ``error``…)."""
    followup: ChatResponse | None = None
    """The request the stock client sent by itself right after this one (its
    ``sendAutomaticallyWhen`` held when the stream ended); normally ``None``."""
    closed: Closed | None = None
    """Live: the app closed the connection during this response or right after its ``end``
    (its code and reason: 1011 after a failure, 1013 for a busy chat…). The next request
    opens a new connection, as the stock transport does."""

    @property
    def text(self) -> str:
        """The message's text parts, joined: what the user reads."""
        if self.message is None:
            return ""
        return "".join(p["text"] for p in self.message["parts"] if p.get("type") == "text")
