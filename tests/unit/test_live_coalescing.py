"""Live text deltas coalesced into fewer frames, driven step by step through the protocol
machine alone on a clock the test moves: the first delta at once, the rest merged per interval,
order kept, nothing lost or held back past the end, replays delta by delta."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.events.event import Event
from google.genai import types

from adk_asgi import AdkApp, Streaming
from tests.support import scripted_agent
from tests.unit.live_machine import TURN_COMPLETE, Machine

HOUR = 3600.0
"""An interval no test waits out: a delta held for it is visibly held."""


def bridge(interval: float) -> Machine:
    machine = Machine(interval=interval)
    machine.open()
    return machine


def delta(text: str) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    return Event(invocation_id="i", author="agent", partial=True, content=content)


def final(text: str) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    return Event(invocation_id="i", author="agent", partial=False, content=content)


def say(live: Machine, request_id: str = "r1") -> None:
    live.say(request_id)


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


def test_the_first_delta_goes_at_once_the_next_wait_and_merge() -> None:
    live = bridge(HOUR)
    say(live)
    for text in ("He", "ll", "o ", "there"):
        live.event(delta(text))
    assert live.chunks_of("r1") == [*OPENING, text_delta("He")]
    live.event(final("Hello there"))  # a chunk that is not a delta sends what is held first
    live.event(TURN_COMPLETE)
    assert live.chunks_of("r1") == [
        *OPENING,
        text_delta("He"),
        text_delta("llo there"),
        *CLOSING,
    ]
    assert live.frames[-1] == {"type": "end", "requestId": "r1"}


def test_held_deltas_go_out_when_the_interval_ends() -> None:
    live = bridge(0.05)
    say(live)
    live.event(delta("a"))
    live.event(delta("b"))
    live.event(delta("c"))
    assert live.chunks_of("r1")[-1] == text_delta("a")
    live.advance(0.049)
    assert live.chunks_of("r1")[-1] == text_delta("a")  # held until the interval ends
    live.advance(0.001)
    assert live.chunks_of("r1")[-2:] == [text_delta("a"), text_delta("bc")]
    live.advance(0.05)
    live.event(delta("d"))  # a whole interval after the last write: at once
    assert live.chunks_of("r1")[-1] == text_delta("d")
    live.event(delta("e"))  # right after it: held
    assert live.chunks_of("r1")[-1] == text_delta("d")


def test_the_first_delta_after_a_pause_goes_at_once_though_the_last_frame_is_recent() -> None:
    """A pause longer than the interval ends the flow: the next delta is the first words after
    it, sent at once even if a frame of held deltas went out within the interval (the interval
    counts from the last delta, not from the last frame); the ones right after it merge."""
    live = bridge(0.05)
    say(live)
    live.event(delta("a"))  # at once
    live.event(delta("b"))  # held
    live.advance(0.05)  # "b" goes out: a frame 0 s ago, the last delta 0.05 s ago
    live.advance(0.03)
    live.event(delta("c"))  # 0.08 s after "b": at once, 0.03 s after the last frame
    live.event(delta("d"))
    live.event(delta("e"))
    assert live.chunks_of("r1") == [*OPENING, text_delta("a"), text_delta("b"), text_delta("c")]
    live.advance(0.049)
    assert live.chunks_of("r1")[-1] == text_delta("c")
    live.advance(0.001)
    assert live.chunks_of("r1") == [
        *OPENING,
        *(text_delta(text) for text in ("a", "b", "c", "de")),
    ]


def test_the_first_delta_after_another_frame_goes_at_once() -> None:
    """Coalescing starts with the text: frames that are not deltas (here the opening chunks of
    the answer) hold nothing back, so the first words go in the same breath."""
    live = bridge(HOUR)
    say(live)
    live.event(delta("a"))
    assert live.chunks_of("r1") == [*OPENING, text_delta("a")]


def test_the_interval_stretches_with_the_load_of_the_process() -> None:
    """With many streams in the process a stream's deltas come further apart than the interval
    and would each be a frame: the server passes :func:`adk_asgi.serving.load.under_load`, and the
    interval a write starts is the stretched one."""
    live = Machine(interval=0.01, under_load=lambda interval: interval * 5)
    live.open()
    say(live)
    live.event(delta("a"))
    live.event(delta("b"))
    live.advance(0.049)
    assert live.chunks_of("r1")[-1] == text_delta("a")  # held for 50 ms, not 10
    live.advance(0.001)
    assert live.chunks_of("r1")[-2:] == [text_delta("a"), text_delta("b")]


def test_a_frame_that_is_not_a_chunk_keeps_its_place_after_held_deltas() -> None:
    live = bridge(HOUR)
    say(live)
    live.event(delta("a"))
    live.event(delta("b"))
    live.receive(type="ping")
    tail = [f for f in live.frames if isinstance(f, dict)][-2:]
    assert tail[0]["type"] == "chunk" and tail[0]["chunk"] == text_delta("b")
    assert tail[1] == {"type": "pong"}


def test_an_interval_of_zero_sends_every_delta() -> None:
    live = bridge(0)
    say(live)
    for text in ("a", "b", "c"):
        live.event(delta(text))
    assert live.chunks_of("r1") == [*OPENING, text_delta("a"), text_delta("b"), text_delta("c")]


def test_a_resume_replays_every_delta_and_the_old_request_gets_its_end() -> None:
    live = bridge(HOUR)
    say(live)
    for text in ("a", "b", "c"):
        live.event(delta(text))
    live.receive(
        type="resume", requestId="r2"
    )  # e.g. sent as the user starts talking over the typed answer
    assert live.chunks_of("r1") == [*OPENING, text_delta("a"), text_delta("bc")]
    r1 = live.frames_of("r1")
    assert r1[-1] == {"type": "end", "requestId": "r1"}
    assert live.chunks_of("r2") == [*OPENING, text_delta("a"), text_delta("b"), text_delta("c")]
    live.event(final("abc"))
    live.event(TURN_COMPLETE)
    assert live.chunks_of("r2")[-3:] == CLOSING
    assert live.frames[-1] == {"type": "end", "requestId": "r2"}


def test_an_aborted_response_drops_what_it_held() -> None:
    live = bridge(HOUR)
    say(live)
    live.event(delta("a"))
    live.event(delta("b"))
    live.receive(type="abort", requestId="r1")
    live.event(delta("c"))
    live.receive(type="ping")
    assert live.chunks_of("r1") == [*OPENING, text_delta("a")]
    assert live.frames[-1] == {"type": "pong"}


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="live_write_interval must be >= 0 seconds"):
        AdkApp(scripted_agent([]), streaming=Streaming(live_write_interval=-1))
