"""The text and reasoning blocks of one assistant message, and the user's live speech (sans-I/O).

At most one block is open at a time: a text delta closes an open reasoning block and the other
way round. Each block's chunk id is the message id with a counter (``<message>-txt1``), so ids
are stable across a resume's replay. A block remembers the event (or live step) it streams from,
so the final event of a model call closes its own block and no other.
"""

from __future__ import annotations

from google.genai import types

from adk_asgi.wire.chunks import (
    DataChunk,
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    UIMessageChunk,
)


class _Block:
    """An open text or reasoning block: its chunk id and the event it streams from."""

    __slots__ = ("chunk_id", "event_id")

    def __init__(self, chunk_id: str, event_id: str) -> None:
        self.chunk_id = chunk_id
        self.event_id = event_id


class TextBlocks:
    def __init__(self, message_id: str) -> None:
        self._message_id = message_id
        self.speaker: ProviderMetadata | None = None
        """What a block opened now says of who speaks (``providerMetadata`` of its start)."""
        self._text: _Block | None = None
        self._reasoning: _Block | None = None
        self._count = 0

    def final(
        self, event_id: str, text: str, streamed: str, *, thought: bool, out: list[UIMessageChunk]
    ) -> str:
        """Emit what the final event's text adds to what its partials streamed; return the
        streamed text not yet matched against the final parts."""
        if streamed.startswith(text):
            return streamed[len(text) :]
        if text.startswith(streamed):
            suffix = text[len(streamed) :]
            if suffix:
                if thought:
                    self.reasoning(event_id, suffix, out)
                else:
                    self.text(event_id, suffix, out)
            return ""
        # A callback rewrote the text after it was streamed; the client keeps what it saw.
        return ""

    def text(self, event_id: str, delta: str, out: list[UIMessageChunk]) -> None:
        if self._reasoning is not None:
            out.append(ReasoningEnd(id=self._reasoning.chunk_id))
            self._reasoning = None
        if self._text is None:
            self._text = _Block(self._next_block_id("txt"), event_id)
            out.append(TextStart(id=self._text.chunk_id, provider_metadata=self.speaker))
        out.append(TextDelta(id=self._text.chunk_id, delta=delta))

    def reasoning(self, event_id: str, delta: str, out: list[UIMessageChunk]) -> None:
        if self._text is not None:
            out.append(TextEnd(id=self._text.chunk_id))
            self._text = None
        if self._reasoning is None:
            self._reasoning = _Block(self._next_block_id("rsn"), event_id)
            out.append(ReasoningStart(id=self._reasoning.chunk_id, provider_metadata=self.speaker))
        out.append(ReasoningDelta(id=self._reasoning.chunk_id, delta=delta))

    def _next_block_id(self, kind: str) -> str:
        self._count += 1
        return f"{self._message_id}-{kind}{self._count}"

    def close(self, out: list[UIMessageChunk]) -> None:
        if self._text is not None:
            out.append(TextEnd(id=self._text.chunk_id))
            self._text = None
        if self._reasoning is not None:
            out.append(ReasoningEnd(id=self._reasoning.chunk_id))
            self._reasoning = None

    def close_of(
        self, event_id: str, out: list[UIMessageChunk], *, text: bool = True, reasoning: bool = True
    ) -> None:
        """End the blocks ``event_id`` streamed (of the kinds asked for)."""
        if reasoning and self._reasoning is not None and self._reasoning.event_id == event_id:
            out.append(ReasoningEnd(id=self._reasoning.chunk_id))
            self._reasoning = None
        if text and self._text is not None and self._text.event_id == event_id:
            out.append(TextEnd(id=self._text.chunk_id))
            self._text = None


class HeardSpeech:
    """What the user says in a live turn, as a ``data-transcript`` part of the answer that the
    client updates in place (one part per finished utterance)."""

    def __init__(self, message_id: str) -> None:
        self._message_id = message_id
        self._text = ""
        self._count = 0

    def chunk(self, transcript: types.Transcription) -> DataChunk:
        text = transcript.text or ""
        self._text = text if transcript.finished else self._text + text
        data = {"role": "user", "text": self._text, "final": bool(transcript.finished)}
        chunk = DataChunk(
            type="data-transcript", id=f"{self._message_id}-heard{self._count}", data=data
        )
        if transcript.finished:
            self._count += 1
            self._text = ""
        return chunk
