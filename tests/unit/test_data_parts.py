"""App data parts without I/O: the checks of ``send_data``, the event that carries a part, the
converter's chunks (after calls it holds), and history's reconciliation by type and id."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from google.adk.events.event import Event

from adk_asgi.convert.data_parts import (
    MAX_DATA_BYTES,
    DataPartError,
    chunk_of,
    data_chunk,
    in_sent_order,
    record,
)
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.history import rebuild_messages
from adk_asgi.convert.ui_message import read_ui_message
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import DataChunk
from adk_asgi.wire.encoding import ChunkEncoder
from adk_asgi.wire.messages import DataPart
from tests.unit.live_machine import Machine, text_event
from tests.unit.test_convert import MID, STOP, _asks, _payment, call, model_event, run, text, wire

DEEP: Any = []
for _ in range(70):
    DEEP = [DEEP]


def data_event(chunk: DataChunk, event_id: str = "d1", at: float = 0.0) -> Event:
    return Event(
        id=event_id,
        timestamp=at,
        invocation_id="inv",
        author="agent",
        partial=bool(chunk.transient),
        custom_metadata=bookkeeping.with_tags(None, message_id=MID, data_part=record(chunk)),
    )


def test_a_part_is_checked_and_its_data_is_what_json_keeps() -> None:
    chunk = data_chunk("weather-card_2", {"temps": (20, 21.5)}, id="w1")
    assert wire([chunk]) == [
        {"type": "data-weather-card_2", "id": "w1", "data": {"temps": [20, 21.5]}}
    ]
    assert wire([data_chunk("notice", "hi", transient=True)]) == [
        {"type": "data-notice", "data": "hi", "transient": True}
    ]  # (no "transient": false, which the client's reducer would keep in the part)
    assert wire([data_chunk("n", 0, transient=False)]) == [{"type": "data-n", "data": 0}]


@pytest.mark.parametrize(
    ("name", "data", "options"),
    [
        ("", 1, {}),
        ("has space", 1, {}),
        ("-lead", 1, {}),
        ("x" * 65, 1, {}),
        ("error", 1, {}),  # the bridge's own parts
        ("transcript", 1, {}),
        ("ok", None, {}),
        ("ok", {1j: 1}, {}),
        ("ok", object(), {}),
        ("ok", "x" * MAX_DATA_BYTES, {}),
        ("ok", DEEP, {}),
        ("ok", 1, {"id": ""}),
        ("ok", 1, {"id": 7}),
        ("ok", 1, {"transient": 1}),
    ],
)
def test_what_no_client_takes_is_refused(name: str, data: Any, options: dict[str, Any]) -> None:
    with pytest.raises(DataPartError):
        data_chunk(name, data, **options)


def test_every_sdk_version_takes_a_data_chunk() -> None:
    """ai@5, ai@6 and ai@7 parse ``data-*`` chunks alike (``id``, ``data``, ``transient``)."""
    chunk = data_chunk("weather", {"city": "Paris"}, id="w1", transient=True)
    assert [ChunkEncoder(v).admit(chunk) for v in (5, 6, 7)] == [chunk] * 3


def test_the_event_carries_the_part_and_only_a_persisted_one_is_in_history() -> None:
    kept = data_chunk("weather", {"city": "Paris"}, id="w1")
    assert chunk_of(data_event(kept)) == kept
    notice = data_chunk("notice", "hi", transient=True)
    assert chunk_of(data_event(notice)) == notice
    assert chunk_of(model_event("e1", call("c1", "x"))) is None
    stored = [data_event(kept), data_event(notice, "d2")]  # (a transient one is never stored)
    assert rebuild_messages([e for e in stored if not e.partial], ToolPolicy())[0].parts == [
        DataPart(type="data-weather", id="w1", data={"city": "Paris"})
    ]


def test_a_part_of_the_same_type_and_id_is_updated_in_place() -> None:
    """As the AI SDK client's reducer places them (history replays the chat through it)."""
    chunks = [
        data_chunk("w", "loading", id="1"),
        data_chunk("x", "other type", id="1"),
        data_chunk("w", "no id"),
        data_chunk("w", "no id again"),
        data_chunk("w", "done", id="1"),
    ]
    shown = read_ui_message([{"type": "start", "messageId": MID}, *wire(chunks)])
    assert shown["parts"] == [
        {"type": "data-w", "id": "1", "data": "done"},
        {"type": "data-x", "id": "1", "data": "other type"},
        {"type": "data-w", "data": "no id"},
        {"type": "data-w", "data": "no id again"},
    ]


def test_a_part_sent_while_calls_are_held_comes_after_them_and_their_approvals() -> None:
    """A step's second call is held until the next event shows whether it asks approval; a
    part a tool sends meanwhile comes after the held call and its request, as history has it
    (the part's event is stored after the calls' event)."""
    card = data_chunk("weather", {"status": "loading"}, id="w1")
    events = [
        model_event(
            "e1",
            call("c1", "process_payment", amount=5),
            call("c2", "process_payment", amount=7),
            finish_reason=STOP,
        ),
        data_event(card),
        _asks(("req1", "c1", {"amount": 5}), ("req2", "c2", {"amount": 7})),
    ]
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *_payment("c1", 5),
        {"type": "tool-approval-request", "approvalId": "req1", "toolCallId": "c1"},
        *_payment("c2", 7),
        {"type": "tool-approval-request", "approvalId": "req2", "toolCallId": "c2"},
        {"type": "data-weather", "id": "w1", "data": {"status": "loading"}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    held_to_the_end = run(events[:2])
    assert held_to_the_end[-4:] == [
        *_payment("c2", 7)[1:],
        {"type": "data-weather", "id": "w1", "data": {"status": "loading"}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_live_shows_no_part_from_its_event() -> None:
    """Live mode shows a part when it is sent, from the tool pipeline (live/waits.py)."""
    converter = EventConverter(message_id=MID, live=True)
    converter.start()
    assert converter.feed(data_event(data_chunk("weather", 1, id="w1"))) == []


def test_history_rebuilds_the_parts_in_place_updated_by_id() -> None:
    parts = [
        data_chunk("plan", {"step": 1}),
        data_chunk("weather", {"status": "loading"}, id="w1"),
        data_chunk("notice", "hi", transient=True),
        data_chunk("weather", {"status": "done"}, id="w1"),
    ]
    events = [data_event(chunk, f"d{i}", at=i + 1) for i, chunk in enumerate(parts)]
    tags = bookkeeping.with_tags(None, message_id=MID)
    events.insert(1, model_event("e1", text("Hi"), custom_metadata=tags, timestamp=1.5))
    messages = rebuild_messages([e for e in events if not e.partial], ToolPolicy())
    assert [msgspec.to_builtins(m) for m in messages] == [
        {
            "id": MID,
            "role": "assistant",
            "parts": [
                {"type": "data-plan", "data": {"step": 1}},
                {"type": "step-start"},
                {"type": "text", "text": "Hi", "state": "done"},
                {"type": "data-weather", "id": "w1", "data": {"status": "done"}},
            ],
        }
    ]


def test_a_part_stored_after_events_made_after_it_goes_back_where_it_was_sent() -> None:
    """Live mode drains the agent's events and the queue a part goes on at once: a model that
    answers at once can have its answer stored before the part sent just before it."""
    tags = bookkeeping.with_tags(None, message_id=MID)
    other = bookkeeping.with_tags(None, message_id="m0")
    earlier = model_event("e0", text("Before"), custom_metadata=other, timestamp=3)
    answer = model_event("e1", text("Hi"), custom_metadata=tags, timestamp=5)
    plan = data_event(data_chunk("plan", 1), "d1", at=4)
    card = data_event(data_chunk("card", 2), "d2", at=4.5)
    later = data_event(data_chunk("late", 3), "d3", at=6)
    events = [earlier, answer, plan, card, later]
    assert [e.id for e in in_sent_order(events)] == ["e0", "d1", "d2", "e1", "d3"]
    assert in_sent_order([answer, earlier]) == [answer, earlier]  # (only parts move)


def test_live_shows_a_part_in_the_response_under_way_and_names_its_message() -> None:
    live = Machine()
    live.open()
    card = data_chunk("weather", {"status": "loading"}, id="w1")
    message_id, outputs = live.protocol.tools.data(card)  # (no response under way: not shown)
    assert (message_id, live.take(outputs)) == (None, [])
    live.say("r1")
    live.event(text_event("Hi", partial=True))
    message_id, outputs = live.protocol.tools.data(card)
    live.take(outputs)
    assert message_id == "m1"
    assert live.chunks_of("r1")[-2:] == [
        {"type": "text-delta", "id": "m1-txt1", "delta": "Hi"},
        {"type": "data-weather", "id": "w1", "data": {"status": "loading"}},
    ]
