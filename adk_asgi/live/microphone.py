"""A live connection's microphone: the client's binary frames (PCM16 mono at 16 kHz, when it
asked for audio with ``?audio=1``) into the model's queue, within two bounds.

The model may fall behind by :data:`MAX_AUDIO_BACKLOG`; past it the reader stops reading the
socket, so TCP slows the client instead of memory growing. Before a session takes audio (its
first ``send`` may be behind the frames) at most :data:`EARLY_AUDIO_FRAMES` are kept, and those
past the backlog are dropped, since waiting for room could never end.
"""

from __future__ import annotations

import logging

from google.genai import types

from adk_asgi.live.protocol import LiveProtocol
from adk_asgi.live.queue import LiveQueue

logger = logging.getLogger("adk_asgi")

AUDIO_IN_MIME = "audio/pcm;rate=16000"
MAX_AUDIO_BACKLOG = 10 * 32_000
"""Bytes of microphone audio (10 s of PCM16 at 16 kHz) the model may fall behind by before the
connection stops reading the socket, so TCP slows the client down instead of memory growing."""
EARLY_AUDIO_FRAMES = 256
"""Audio frames taken before the session opens, at most (the model's queue holds them until
then, each a request object however small the frame): past this they are dropped."""


class Microphone:
    """The audio one connection's reader takes from the socket, into the model's queue."""

    def __init__(self, queue: LiveQueue, protocol: LiveProtocol) -> None:
        self.queue = queue
        self.protocol = protocol
        self.early_audio = 0
        """Audio frames taken before the session opened (:data:`EARLY_AUDIO_FRAMES`)."""
        self.dropped_audio = False

    async def take(self, pcm: bytes) -> None:
        """Queue one frame for the model, waiting while the model is too far behind."""
        queue = self.queue
        if self.protocol.phase != "open":
            self.early_audio += 1
            if self.early_audio > EARLY_AUDIO_FRAMES:
                return  # kept for no session yet: past the limit, dropped
        if queue.audio_backlog > MAX_AUDIO_BACKLOG:
            if self.protocol.phase != "open":
                # No session takes audio yet (its first ``send`` may be behind this frame, so
                # waiting could never end): what is past the limit is dropped.
                if not self.dropped_audio:
                    logger.warning("adk_asgi: microphone audio dropped: no live session yet")
                self.dropped_audio = True
                return
            await queue.room(MAX_AUDIO_BACKLOG // 2)
        queue.send_realtime(types.Blob(mime_type=AUDIO_IN_MIME, data=pcm))
