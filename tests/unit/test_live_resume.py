"""Live resume from a new connection, sans-I/O: what a connection records for the stream store,
how a ``resume`` names its chat and falls back to the store, and the frames a stored answer
replays as (no socket, no store, no model)."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import msgspec

from adk_asgi.live.outputs import Record, Replay, StopReplay
from adk_asgi.live.stored_replay import StoredReplay
from adk_asgi.wire.chunks import Finish, Start, TextDelta
from tests.unit.live_machine import TURN_COMPLETE, Machine, text_event

HELLO_SSE = (
    b'data: {"type":"start","messageId":"m1"}\n\n'
    b'data: {"type":"text-start","id":"t"}\n\n'
    b'data: {"type":"text-delta","id":"t","delta":"Hel"}\n\n'
    b'data: {"type":"text-delta","id":"t","delta":"lo"}\n\n'
    b'data: {"type":"text-end","id":"t"}\n\n'
    b'data: {"type":"finish"}\n\n'
    b"data: [DONE]\n\n"
)
HELLO_CHUNKS = [
    {"type": "start", "messageId": "m1"},
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "Hel"},
    {"type": "text-delta", "id": "t", "delta": "lo"},
    {"type": "text-end", "id": "t"},
    {"type": "finish"},
]


def frames(replay: StoredReplay, pieces: list[bytes]) -> list[dict[str, Any]]:
    texts = [replay.start()] + [f for piece in pieces for f in replay.feed(piece)] + [replay.end()]
    return [json.loads(text) for text in texts]


def test_a_stored_answer_replays_as_one_request_numbered_from_zero() -> None:
    replay = StoredReplay("r9")
    assert frames(replay, [HELLO_SSE]) == [
        {"type": "start", "requestId": "r9"},
        *(
            {"type": "chunk", "requestId": "r9", "sequence": n, "chunk": chunk}
            for n, chunk in enumerate(HELLO_CHUNKS)
        ),
        {"type": "end", "requestId": "r9"},
    ]
    assert replay.done


def test_events_split_across_stored_pieces_replay_whole() -> None:
    cuts = [0, 7, 50, 51, 120, len(HELLO_SSE)]
    pieces = [HELLO_SSE[a:b] for a, b in pairwise(cuts)]
    assert frames(StoredReplay("r"), pieces) == frames(StoredReplay("r"), [HELLO_SSE])


def test_a_resume_with_last_sequence_gets_only_what_follows() -> None:
    replayed = frames(StoredReplay("r", last_sequence=2), [HELLO_SSE])
    assert [f.get("sequence") for f in replayed] == [None, 3, 4, 5, None]
    assert [f["chunk"] for f in replayed[1:-1]] == HELLO_CHUNKS[3:]


def test_sse_comments_are_not_chunks() -> None:
    replayed = frames(StoredReplay("r"), [b": ping\n\n" + HELLO_SSE])
    assert [f["chunk"] for f in replayed[1:-1]] == HELLO_CHUNKS


def test_each_response_is_recorded_from_its_start_to_its_end() -> None:
    live = Machine(stored_streams=True)
    live.open()
    live.say("r1")
    live.event(text_event("Hel", partial=True))
    live.event(text_event("Hello", partial=False))
    live.event(TURN_COMPLETE)
    records = [o for o in live.others if isinstance(o, Record)]
    assert records[0] == Record([], begin=True)
    assert records[-1] == Record([], end=True)
    recorded = [c for r in records for c in r.chunks]
    assert recorded[0] == Start(message_id="m1")
    assert recorded[-1] == Finish(finish_reason="stop")
    assert TextDelta(id="m1-txt1", delta="Hel") in recorded
    # what was recorded is what the request was sent, chunk for chunk
    assert live.chunks_of("r1") == [json.loads(msgspec.json.encode(c)) for c in recorded]


def test_nothing_is_recorded_without_a_stream_store() -> None:
    live = Machine()
    live.open()
    live.say("r1")
    live.event(text_event("Hi", partial=False))
    live.event(TURN_COMPLETE)
    assert not any(isinstance(o, Record) for o in live.others)


def test_a_resume_on_a_new_connection_names_the_chat_and_asks_the_store() -> None:
    live = Machine(stored_streams=True)
    live.receive(type="resume", requestId="r1", id="chat-9")
    assert live.protocol.chat_id == "chat-9"
    assert [type(o).__name__ for o in live.others] == ["OpenSession", "Replay"]
    assert live.others[-1] == Replay("r1")
    live.take(live.protocol.replay_started("r1"))
    live.take(live.protocol.replayed("r1", HELLO_SSE[:60]))
    live.take(live.protocol.replayed("r1", HELLO_SSE[60:]))
    live.take(live.protocol.replay_ended("r1", found=True))
    assert live.chunks_of("r1") == HELLO_CHUNKS
    assert live.frames_of("r1")[-1] == {"type": "end", "requestId": "r1"}


def test_a_resume_the_store_has_nothing_for_gets_no_active() -> None:
    live = Machine(stored_streams=True)
    live.receive(type="resume", requestId="r1", id="chat-9")
    live.take(live.protocol.replay_ended("r1", found=False))
    assert live.frames == [{"type": "no-active", "requestId": "r1"}]


def test_without_a_store_a_resume_with_nothing_local_is_no_active_at_once() -> None:
    live = Machine()
    live.receive(type="resume", requestId="r1", id="chat-9")
    assert live.frames == [{"type": "no-active", "requestId": "r1"}]
    assert not any(isinstance(o, Replay) for o in live.others)


def test_an_aborted_replay_stops_reading_the_store_and_sends_nothing_more() -> None:
    live = Machine(stored_streams=True)
    live.receive(type="resume", requestId="r1", id="chat-9")
    live.take(live.protocol.replay_started("r1"))
    live.receive(type="abort", requestId="r1")
    assert live.others[-1] == StopReplay("r1")
    live.take(live.protocol.replayed("r1", HELLO_SSE))
    live.take(live.protocol.replay_ended("r1", found=True))
    assert live.frames == [{"type": "start", "requestId": "r1"}]


def test_a_resume_for_another_chat_or_a_bad_one_is_refused() -> None:
    live = Machine(stored_streams=True)
    live.open("chat-1")
    live.receive(type="resume", requestId="r1", id="chat-2")
    live.receive(type="resume", requestId="r2", id="not a chat id!")
    live.receive(type="resume", requestId="r3", id="chat-1", lastSequence=-5)
    assert [(f["requestId"], f["type"]) for f in live.frames] == [
        ("r1", "error"),
        ("r2", "error"),
        ("r3", "error"),
    ]
    assert "chat-1" in live.frames[0]["errorText"]
    assert not any(isinstance(o, Replay) for o in live.others)


def test_a_local_resume_skips_what_the_client_has() -> None:
    live = Machine()
    live.open()
    live.say("r1")
    live.event(text_event("Hel", partial=True))
    live.receive(type="resume", requestId="r2", lastSequence=1)
    resumed = [f for f in live.frames_of("r2") if f["type"] == "chunk"]
    assert [f["sequence"] for f in resumed] == [2, 3]
    assert [f["chunk"]["type"] for f in resumed] == ["text-start", "text-delta"]
