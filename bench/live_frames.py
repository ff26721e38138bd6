"""What the live benches send and count on ``WS /live``: the ``send`` frame, the microphone's
frames, a response's text deltas and audio frames (:class:`Seen`), and one :class:`Run`.

Shared by the rows in this process (``bench.live_rows``) and over a socket
(``bench.live_client``), so both count a response alike.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from bench.agent import DELTA_CHARS

SHORT_ANSWER: Final = 5
"""Deltas of the untimed warm-up turns."""
FRAME_SECONDS: Final = 0.020
MIC_FRAME_BYTES: Final = 640
"""20 ms of PCM16 mono at 16 kHz, what a browser microphone sends."""
_noise = random.Random(1)
MIC_FRAMES: Final = [_noise.randbytes(MIC_FRAME_BYTES) for _ in range(64)]
"""Noise (not UTF-8, so the scripted model "hears" ``[x s of audio]`` and answers with
``SHORT_ANSWER`` frames), differing from frame to frame as speech does."""
TEXT_DELTA: Final = '"type":"text-delta"'
_FRAME = msgspec.json.Decoder(dict[str, Any])

ACTIVITY_START: Final = '{"type":"activity-start"}'
ACTIVITY_END: Final = '{"type":"activity-end"}'


@dataclass(frozen=True, slots=True)
class Run:
    seconds: float
    units: int
    """Text deltas (``text``), output audio frames (``speech``) or microphone frames
    (``listen``) of the run, checked against what was asked."""
    audio_bytes: int
    server_cpu: float
    """CPU seconds of the process that runs the agent (the floor: this one)."""
    client_cpu: float
    pushed: float = 0.0
    """``listen`` over ``WS /live``: seconds the client took to send every frame."""


def check(row: str, what: str, got: int, expected: int) -> None:
    if got != expected:
        raise RuntimeError(f"{row}: {got} {what}, expected {expected}")


@dataclass(slots=True)
class Seen:
    text_chars: int = 0
    frames: int = 0
    """``text-delta`` frames: fewer than the deltas when adk_asgi merges them."""
    audio: int = 0
    audio_bytes: int = 0

    @property
    def text(self) -> int:
        """Text deltas made by the model (each ``DELTA_CHARS`` long), however they were framed."""
        return self.text_chars // DELTA_CHARS

    def take(self, message: str | bytes) -> bool:
        """Count one ``WS /live`` message; true at the ``finish`` chunk of the response."""
        if isinstance(message, bytes):
            self.audio += 1
            self.audio_bytes += len(message)
            return False
        if TEXT_DELTA in message:
            self.text_chars += len(_FRAME.decode(message)["chunk"]["delta"])
            self.frames += 1
            return False
        frame: dict[str, Any] = _FRAME.decode(message)
        chunk = frame.get("chunk") or {}
        if frame["type"] == "error" or chunk.get("type") == "error":
            raise RuntimeError(f"adk_asgi: {message[:500]}")
        return bool(chunk.get("type") == "finish")


def new_chat() -> str:
    return uuid.uuid4().hex


# --- adk_asgi: WS /live on the server process -----------------------------------------------


def send_frame(chat_id: str, text: str) -> str:
    """A ``send`` frame as ``WebSocketChatTransport`` sends it, for a one-message chat."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    frame: dict[str, Any] = {
        "type": "send",
        "requestId": "r1",
        "id": chat_id,
        "trigger": "submit-message",
        "messageId": None,
        "messages": [message],
        "headers": {},
        "body": {},
        "metadata": None,
    }
    return msgspec.json.encode(frame).decode()
