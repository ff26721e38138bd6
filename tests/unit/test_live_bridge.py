"""The live bridge's request streams, alone: events in, frames out (no socket, no model)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.events.event import Event
from google.genai import types

from adk_asgi import AdkApp
from adk_asgi.live_bridge import LiveBridge
from tests.support import counter, scripted_agent


def bridge(v7: bool) -> tuple[LiveBridge, list[Any]]:
    frames: list[Any] = []
    app = AdkApp(scripted_agent([]), message_id_factory=counter("m"))
    live = LiveBridge(
        app,
        LiveRequestQueue(),
        lambda f: frames.append(json.loads(f) if isinstance(f, str) else f),
        v7=v7,
        audio=True,
    )
    return live, frames


def text_event(text: str, partial: bool) -> Event:
    return Event(
        invocation_id="i",
        author="agent",
        partial=partial,
        content=types.Content(role="model", parts=[types.Part(text=text)]),
    )


@pytest.mark.parametrize(("v7", "reason"), [(True, "interrupted"), (False, "other")])
def test_barge_in_ends_the_response_cleanly(v7: bool, reason: str) -> None:
    live, frames = bridge(v7)
    live.send_user_turn("r1", types.Content(role="user", parts=[types.Part(text="hi")]), "u1")
    live.on_event(text_event("Hel", partial=True))
    live.on_event(Event(invocation_id="i", author="agent", interrupted=True))
    live.on_event(text_event("late", partial=True))  # after the barge-in: a new, unclaimed answer
    chunks = [f["chunk"] for f in frames if isinstance(f, dict) and f.get("type") == "chunk"]
    assert chunks == [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "m1-txt1"},
        {"type": "text-delta", "id": "m1-txt1", "delta": "Hel"},
        {"type": "text-end", "id": "m1-txt1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": reason},
    ]
    assert {"type": "end", "requestId": "r1"} in frames
    assert {"type": "interrupted"} in frames  # the audio client stops playback


def test_audio_goes_out_as_binary_frames_not_chunks() -> None:
    live, frames = bridge(True)
    live.send_user_turn("r1", types.Content(role="user", parts=[types.Part(text="hi")]), "u1")
    audio = types.Part(inline_data=types.Blob(mime_type="audio/pcm;rate=24000", data=b"\x01\x02"))
    live.on_event(
        Event(invocation_id="i", author="agent", content=types.Content(role="model", parts=[audio]))
    )
    assert frames[-1] == b"\x01\x02"
    assert [f["type"] for f in frames if isinstance(f, dict)] == ["start", "chunk"]  # only `start`


def heard(text: str) -> Event:
    """The user's speech as the live connection transcribes it (the first event of a voice turn)."""
    return Event(
        invocation_id="i",
        author="user",
        input_transcription=types.Transcription(text=text, finished=True),
    )


def frames_of(frames: list[Any], request_id: str) -> list[Any]:
    return [f for f in frames if isinstance(f, dict) and f.get("requestId") == request_id]


async def test_resume_right_after_speech_waits_for_the_voice_answer() -> None:
    live, frames = bridge(True)
    live.speech_ended()
    live.resume("r1")  # before the model has heard anything
    assert frames_of(frames, "r1") == []
    live.on_event(heard("hi"))
    live.on_event(text_event("Hello", partial=False))
    live.on_event(Event(invocation_id="i", author="agent", turn_complete=True))
    replies = frames_of(frames, "r1")
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


async def test_resume_after_silence_gives_up_with_no_active(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("adk_asgi.live_bridge.VOICE_ANSWER_WAIT", 0.01)
    live, frames = bridge(True)
    live.speech_ended()
    live.resume("r1")
    await asyncio.sleep(0.05)
    assert frames_of(frames, "r1") == [{"type": "no-active", "requestId": "r1"}]
    live.resume("r2")  # the due answer was given up on: no more waiting
    assert frames_of(frames, "r2") == [{"type": "no-active", "requestId": "r2"}]


async def test_a_typed_message_releases_a_resume_waiting_for_speech() -> None:
    live, frames = bridge(True)
    live.speech_ended()
    live.resume("r1")
    live.send_user_turn("r2", types.Content(role="user", parts=[types.Part(text="hi")]), "u1")
    assert frames_of(frames, "r1") == [{"type": "no-active", "requestId": "r1"}]
    live.close()


def test_resume_with_nothing_due_answers_no_active_at_once() -> None:
    live, frames = bridge(True)
    live.resume("r1")
    assert frames_of(frames, "r1") == [{"type": "no-active", "requestId": "r1"}]
