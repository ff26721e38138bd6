"""A driver for the sans-I/O live protocol: client frames and ADK events in, outputs out, on a
clock the test moves (no socket, no model, no sleeps)."""

from __future__ import annotations

import json
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.live.outputs import Output, Send
from adk_asgi.live.protocol import LiveProtocol
from tests.support import counter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Machine:
    """A :class:`LiveProtocol` and everything it asked for so far."""

    def __init__(
        self, *, tools: ToolPolicy | None = None, interval: float = 0.0, **options: Any
    ) -> None:
        self.clock = Clock()
        self.protocol = LiveProtocol(
            tools=tools or ToolPolicy(),
            new_message_id=counter("m"),
            clock=self.clock,
            write_interval=interval,
            **options,
        )
        self.outputs: list[Output] = []

    def take(self, outputs: list[Output]) -> list[Output]:
        self.outputs += outputs
        return outputs

    @property
    def frames(self) -> list[Any]:
        """Every frame sent so far: JSON ones decoded, audio as bytes."""
        return [_decoded(o.data) for o in self.outputs if isinstance(o, Send)]

    @property
    def others(self) -> list[Output]:
        """Every output that is not a frame."""
        return [o for o in self.outputs if not isinstance(o, Send)]

    def receive(self, **frame: Any) -> list[Output]:
        return self.take(self.protocol.receive(json.dumps(frame)))

    def event(self, event: Event) -> list[Output]:
        return self.take(self.protocol.event(event))

    def advance(self, seconds: float) -> list[Output]:
        """Move the clock on, and call the protocol back if its deadline has come."""
        self.clock.now += seconds
        deadline = self.protocol.deadline
        if deadline is None or self.clock.now < deadline:
            return []
        return self.take(self.protocol.tick())

    def open(self, chat_id: str = "chat-1") -> None:
        """The connection serves ``chat_id`` and its session has started."""
        self.take(self.protocol.bind(chat_id))
        self.take(self.protocol.session_started(answers_history=False))

    def say(self, request_id: str, text: str = "hi", message_id: str = "u1") -> list[Output]:
        return self.receive(**send_frame(request_id, [user_message(message_id, text)]))

    def chunks_of(self, request_id: str) -> list[dict[str, Any]]:
        """The chunks of one request, checking that their sequence numbers count up from 0."""
        chunks = [f for f in self.frames_of(request_id) if f["type"] == "chunk"]
        assert [f["sequence"] for f in chunks] == list(range(len(chunks)))
        return [f["chunk"] for f in chunks]

    def frames_of(self, request_id: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if isinstance(f, dict) and f.get("requestId") == request_id]


def _decoded(data: str | bytes) -> Any:
    return json.loads(data) if isinstance(data, str) else data


def user_message(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def send_frame(
    request_id: str, messages: list[dict[str, Any]], chat_id: str = "chat-1", **body: Any
) -> dict[str, Any]:
    """A ``send`` frame as the v7 ``WebSocketChatTransport`` writes it."""
    return {
        "type": "send",
        "requestId": request_id,
        "id": chat_id,
        "trigger": "submit-message",
        "messageId": None,
        "messages": messages,
        "headers": {},
        "body": body,
        "metadata": None,
    }


def text_event(text: str, partial: bool) -> Event:
    return Event(
        invocation_id="i",
        author="agent",
        partial=partial,
        content=types.Content(role="model", parts=[types.Part(text=text)]),
    )


TURN_COMPLETE = Event(invocation_id="i", author="agent", turn_complete=True)
