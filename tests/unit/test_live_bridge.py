"""The live bridge's request streams, alone: events in, frames out (no socket, no model)."""

from __future__ import annotations

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
    live.send_user_turn("r1", types.Content(role="user", parts=[types.Part(text="hi")]))
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
    live.send_user_turn("r1", types.Content(role="user", parts=[types.Part(text="hi")]))
    audio = types.Part(inline_data=types.Blob(mime_type="audio/pcm;rate=24000", data=b"\x01\x02"))
    live.on_event(
        Event(invocation_id="i", author="agent", content=types.Content(role="model", parts=[audio]))
    )
    assert frames[-1] == b"\x01\x02"
    assert [f["type"] for f in frames if isinstance(f, dict)] == ["start", "chunk"]  # only `start`
