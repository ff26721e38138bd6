"""Live text deltas coalesced into fewer frames, driven step by step through the bridge alone:
the first delta at once, the rest merged per interval, order kept, nothing lost or held back
past the end, replays delta by delta."""

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

HOUR = 3600.0
"""An interval no test waits out: a delta held for it is visibly held."""


def bridge(interval: float) -> tuple[LiveBridge, list[Any]]:
    frames: list[Any] = []
    app = AdkApp(scripted_agent([]), message_id_factory=counter("m"), live_write_interval=interval)
    live = LiveBridge(
        app,
        LiveRequestQueue(),
        lambda f: frames.append(json.loads(f) if isinstance(f, str) else f),
        v7=True,
        audio=False,
    )
    return live, frames


def delta(text: str) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    return Event(invocation_id="i", author="agent", partial=True, content=content)


def final(text: str) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    return Event(invocation_id="i", author="agent", partial=False, content=content)


TURN_COMPLETE = Event(invocation_id="i", author="agent", turn_complete=True)


def chunks_of(frames: list[Any], request_id: str) -> list[dict[str, Any]]:
    """The chunks of one request, checking that their sequence numbers count up from 0."""
    chunks = [f for f in frames if isinstance(f, dict) and f.get("requestId") == request_id]
    chunks = [f for f in chunks if f["type"] == "chunk"]
    assert [f["sequence"] for f in chunks] == list(range(len(chunks)))
    return [f["chunk"] for f in chunks]


def say(live: LiveBridge, request_id: str = "r1") -> None:
    live.send_user_turn(request_id, types.Content(role="user", parts=[types.Part(text="hi")]), "u1")


OPENING = [
    {"type": "start", "messageId": "m1"},
    {"type": "start-step"},
    {"type": "text-start", "id": "m1-txt1"},
]
CLOSING = [
    {"type": "text-end", "id": "m1-txt1"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


def text_delta(text: str) -> dict[str, Any]:
    return {"type": "text-delta", "id": "m1-txt1", "delta": text}


async def test_the_first_delta_goes_at_once_the_next_wait_and_merge() -> None:
    live, frames = bridge(HOUR)
    say(live)
    for text in ("He", "ll", "o ", "there"):
        live.on_event(delta(text))
    assert chunks_of(frames, "r1") == [*OPENING, text_delta("He")]
    live.on_event(final("Hello there"))  # a chunk that is not a delta sends what is held first
    live.on_event(TURN_COMPLETE)
    assert chunks_of(frames, "r1") == [
        *OPENING,
        text_delta("He"),
        text_delta("llo there"),
        *CLOSING,
    ]
    assert frames[-1] == {"type": "end", "requestId": "r1"}


async def test_held_deltas_go_out_when_the_interval_ends() -> None:
    live, frames = bridge(0.05)
    say(live)
    live.on_event(delta("a"))
    live.on_event(delta("b"))
    live.on_event(delta("c"))
    assert chunks_of(frames, "r1")[-1] == text_delta("a")
    await asyncio.sleep(0.2)
    assert chunks_of(frames, "r1")[-2:] == [text_delta("a"), text_delta("bc")]
    live.on_event(delta("d"))  # a whole interval after the last write: at once
    assert chunks_of(frames, "r1")[-1] == text_delta("d")
    live.on_event(delta("e"))  # right after it: held
    assert chunks_of(frames, "r1")[-1] == text_delta("d")
    live.close()


async def test_a_frame_that_is_not_a_chunk_keeps_its_place_after_held_deltas() -> None:
    live, frames = bridge(HOUR)
    say(live)
    live.on_event(delta("a"))
    live.on_event(delta("b"))
    live.frame(type="pong")
    tail = [f for f in frames if isinstance(f, dict)][-2:]
    assert tail[0]["type"] == "chunk" and tail[0]["chunk"] == text_delta("b")
    assert tail[1] == {"type": "pong"}
    live.close()


async def test_an_interval_of_zero_sends_every_delta() -> None:
    live, frames = bridge(0)
    say(live)
    for text in ("a", "b", "c"):
        live.on_event(delta(text))
    assert chunks_of(frames, "r1") == [*OPENING, text_delta("a"), text_delta("b"), text_delta("c")]


async def test_a_resume_replays_every_delta_and_the_old_request_gets_its_end() -> None:
    live, frames = bridge(HOUR)
    say(live)
    for text in ("a", "b", "c"):
        live.on_event(delta(text))
    live.resume("r2")  # e.g. sent as the user starts talking over the typed answer
    assert chunks_of(frames, "r1") == [*OPENING, text_delta("a"), text_delta("bc")]
    r1 = [f for f in frames if isinstance(f, dict) and f.get("requestId") == "r1"]
    assert r1[-1] == {"type": "end", "requestId": "r1"}
    assert chunks_of(frames, "r2") == [*OPENING, text_delta("a"), text_delta("b"), text_delta("c")]
    live.on_event(final("abc"))
    live.on_event(TURN_COMPLETE)
    assert chunks_of(frames, "r2")[-3:] == CLOSING
    assert frames[-1] == {"type": "end", "requestId": "r2"}


async def test_an_aborted_response_drops_what_it_held() -> None:
    live, frames = bridge(HOUR)
    say(live)
    live.on_event(delta("a"))
    live.on_event(delta("b"))
    live.abort("r1")
    live.on_event(delta("c"))
    live.frame(type="pong")
    assert chunks_of(frames, "r1") == [*OPENING, text_delta("a")]
    assert frames[-1] == {"type": "pong"}


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="live_write_interval must be >= 0 seconds"):
        AdkApp(scripted_agent([]), live_write_interval=-1)
