"""The converter in live mode, fed the event shapes ``Runner.run_live`` yields for Gemini Live
(captured from the real runner with the scripted connection): no runner, no I/O."""

from __future__ import annotations

from typing import Any

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.events import EventConverter
from tests.unit.test_convert import wire

MID = "m1"
PCM = "audio/pcm;rate=24000"


def event(**fields: Any) -> Event:
    return Event(invocation_id="inv", author="agent", **fields)


def audio(data: bytes) -> Event:
    """One audio chunk: Gemini Live sends each as a complete (non-partial) message."""
    part = types.Part(inline_data=types.Blob(data=data, mime_type=PCM))
    return event(content=types.Content(role="model", parts=[part]))


def spoken(text: str, *, finished: bool = False) -> Event:
    return event(
        output_transcription=types.Transcription(text=text, finished=finished),
        partial=not finished,
    )


def live_text(text: str, *, partial: bool) -> Event:
    return event(
        content=types.Content(role="model", parts=[types.Part(text=text)]), partial=partial
    )


def run_live(events: list[Event]) -> list[dict[str, Any]]:
    converter = EventConverter(message_id=MID, live=True)
    chunks = converter.start()
    for item in events:
        chunks += converter.feed(item)
    return wire(chunks + converter.finish())


def test_audio_chunks_between_transcript_deltas_keep_one_text_block() -> None:
    chunks = run_live(
        [
            audio(b"Hello "),
            spoken("Hello "),
            audio(b"there"),
            spoken("there"),
            spoken("Hello there", finished=True),
            event(turn_complete=True),
        ]
    )
    assert chunks == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": f"{MID}-txt1"},
        {"type": "text-delta", "id": f"{MID}-txt1", "delta": "Hello "},
        {"type": "text-delta", "id": f"{MID}-txt1", "delta": "there"},
        {"type": "text-end", "id": f"{MID}-txt1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_a_finished_transcript_adds_only_what_its_deltas_missed() -> None:
    chunks = run_live([audio(b"Hi"), spoken("Hi"), audio(b" you"), spoken("Hi you", finished=True)])
    deltas = [c["delta"] for c in chunks if c["type"] == "text-delta"]
    assert deltas == ["Hi", " you"]


def test_live_text_partials_then_their_full_text_stream_once() -> None:
    chunks = run_live(
        [
            live_text("Hel", partial=True),
            live_text("lo", partial=True),
            live_text("Hello", partial=False),
            event(turn_complete=True),
        ]
    )
    assert chunks == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": f"{MID}-txt1"},
        {"type": "text-delta", "id": f"{MID}-txt1", "delta": "Hel"},
        {"type": "text-delta", "id": f"{MID}-txt1", "delta": "lo"},
        {"type": "text-end", "id": f"{MID}-txt1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def live_thought(text: str, *, partial: bool) -> Event:
    part = types.Part(text=text, thought=True)
    return event(content=types.Content(role="model", parts=[part]), partial=partial)


def test_text_after_reasoning_is_sent_once_when_the_thought_ends_in_its_own_event() -> None:
    """Gemini Live ends a step's thought and its text in separate complete events: the
    thought's end used to drop the text streamed so far, so the text's own end sent all of it
    again (the page showed the answer twice)."""
    chunks = run_live(
        [
            live_thought("hmm", partial=True),
            live_text("Bonj", partial=True),
            live_text("our", partial=True),
            live_thought("hmm", partial=False),
            live_text("Bonjour", partial=False),
            event(turn_complete=True),
        ]
    )
    assert chunks == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "reasoning-start", "id": f"{MID}-rsn1"},
        {"type": "reasoning-delta", "id": f"{MID}-rsn1", "delta": "hmm"},
        {"type": "reasoning-end", "id": f"{MID}-rsn1"},
        {"type": "text-start", "id": f"{MID}-txt2"},
        {"type": "text-delta", "id": f"{MID}-txt2", "delta": "Bonj"},
        {"type": "text-delta", "id": f"{MID}-txt2", "delta": "our"},
        {"type": "text-end", "id": f"{MID}-txt2"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
