"""The live protocol's request streams, alone: events in, frames out (no socket, no model)."""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.genai import types

from adk_asgi.live.streams import VOICE_ANSWER_WAIT
from tests.unit.live_machine import Machine, text_event


def machine(sdk: int = 7) -> Machine:
    live = Machine(sdk=sdk, audio=True)
    live.open()
    return live


@pytest.mark.parametrize(("sdk", "reason"), [(7, "interrupted"), (6, "other"), (5, "other")])
def test_barge_in_ends_the_response_cleanly(sdk: int, reason: str) -> None:
    live = machine(sdk)
    live.say("r1")
    live.event(text_event("Hel", partial=True))
    live.event(Event(invocation_id="i", author="agent", interrupted=True))
    live.event(text_event("late", partial=True))  # after the barge-in: a new, unclaimed answer
    assert live.chunks_of("r1") == [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "m1-txt1"},
        {"type": "text-delta", "id": "m1-txt1", "delta": "Hel"},
        {"type": "text-end", "id": "m1-txt1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": reason},
    ]
    assert {"type": "end", "requestId": "r1"} in live.frames
    assert {"type": "interrupted"} in live.frames  # the audio client stops playback


def test_audio_goes_out_as_binary_frames_not_chunks() -> None:
    live = machine()
    live.say("r1")
    audio = types.Part(inline_data=types.Blob(mime_type="audio/pcm;rate=24000", data=b"\x01\x02"))
    live.event(
        Event(invocation_id="i", author="agent", content=types.Content(role="model", parts=[audio]))
    )
    assert live.frames[-1] == b"\x01\x02"
    assert [f["type"] for f in live.frames if isinstance(f, dict)] == ["start", "chunk"]


def heard(text: str) -> Event:
    """The user's speech as the live connection transcribes it (the first event of a voice turn)."""
    return Event(
        invocation_id="i",
        author="user",
        input_transcription=types.Transcription(text=text, finished=True),
    )


def test_resume_right_after_speech_waits_for_the_voice_answer() -> None:
    live = machine()
    live.receive(type="activity-end")
    live.receive(type="resume", requestId="r1")  # before the model has heard anything
    assert live.frames_of("r1") == []
    assert live.protocol.deadline == live.clock.now + VOICE_ANSWER_WAIT
    live.event(heard("hi"))
    live.event(text_event("Hello", partial=False))
    live.event(Event(invocation_id="i", author="agent", turn_complete=True))
    replies = live.frames_of("r1")
    assert [f["type"] for f in replies] == ["start", *["chunk"] * 8, "end"]
    assert [f["chunk"]["type"] for f in replies[1:-1]] == [
        "start",
        "data-transcript",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert [f["sequence"] for f in replies[1:-1]] == list(range(8))
    assert live.protocol.deadline is None


def test_resume_after_silence_gives_up_with_no_active() -> None:
    live = machine()
    live.receive(type="audio-end")
    live.receive(type="resume", requestId="r1")
    live.advance(VOICE_ANSWER_WAIT - 0.001)
    assert live.frames_of("r1") == []  # still waiting for the answer
    live.advance(0.001)
    assert live.frames_of("r1") == [{"type": "no-active", "requestId": "r1"}]
    live.receive(type="resume", requestId="r2")  # the due answer was given up on: no more waiting
    assert live.frames_of("r2") == [{"type": "no-active", "requestId": "r2"}]


def test_a_typed_message_releases_a_resume_waiting_for_speech() -> None:
    live = machine()
    live.receive(type="activity-end")
    live.receive(type="resume", requestId="r1")
    live.say("r2")
    assert live.frames_of("r1") == [{"type": "no-active", "requestId": "r1"}]


def test_resume_with_nothing_due_answers_no_active_at_once() -> None:
    live = machine()
    live.receive(type="resume", requestId="r1")
    assert live.frames_of("r1") == [{"type": "no-active", "requestId": "r1"}]
