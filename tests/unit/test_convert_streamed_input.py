"""Streamed tool input: ADK's ``partial_args`` in, ``tool-input-delta`` chunks out (sans-I/O)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.adk_values import to_json
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.failures import shown_answer
from adk_asgi.convert.history import rebuild_messages
from adk_asgi.convert.streamed_input import StreamedInput
from adk_asgi.convert.tool_looks import CUT_SHORT
from adk_asgi.hitl.bookkeeping import CutCall
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.hitl.tools import client_tool
from adk_asgi.testing import read_ui_message
from adk_asgi.testing.scripted import Call, Text, turn_to_responses
from adk_asgi.wire.messages import ToolPart
from tests.unit.test_convert import (
    MID,
    STOP,
    T1,
    call,
    model_event,
    response_event,
    run,
    text,
    wire,
)


def piece(
    call_id: str | None, name: str | None, *args: types.PartialArg, will_continue: bool | None
) -> types.Part:
    """A partial event's piece of a call whose arguments stream."""
    return types.Part(
        function_call=types.FunctionCall(
            id=call_id, name=name, partial_args=list(args) or None, will_continue=will_continue
        )
    )


def string(path: str, value: str, *, more: bool) -> types.PartialArg:
    return types.PartialArg(json_path=path, string_value=value, will_continue=more)


def number(path: str, value: float) -> types.PartialArg:
    return types.PartialArg(json_path=path, number_value=value)


def delta(text: str) -> dict[str, Any]:
    return {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": text}


START = {"type": "tool-input-start", "toolCallId": "c1", "toolName": "get_weather"}
AVAILABLE = {
    "type": "tool-input-available",
    "toolCallId": "c1",
    "toolName": "get_weather",
    "input": {"city": "Paris, FR", "days": 3},
}


def test_a_call_whose_arguments_stream_sends_them_as_json_text_then_the_input() -> None:
    """Anthropic's shape (ADK's ``anthropic_llm``): an opening piece, then ``partial_args``
    pieces, every one ``will_continue``; the final event repeats the whole call."""
    events = [
        model_event("e1", text("Let me see."), partial=True),
        model_event("e1", piece("c1", "get_weather", will_continue=True), partial=True),
        model_event(
            "e1",
            piece("c1", "get_weather", string("$.city", "Par", more=True), will_continue=True),
            partial=True,
        ),
        model_event(
            "e1",
            piece("c1", "get_weather", string("$.city", "is, FR", more=True), will_continue=True),
            partial=True,
        ),
        model_event(
            "e1",
            piece(
                "c1",
                "get_weather",
                string("$.city", "", more=False),
                number("$.days", 3),
                will_continue=True,
            ),
            partial=True,
        ),
        model_event(
            "e1",
            text("Let me see."),
            call("c1", "get_weather", city="Paris, FR", days=3),
            finish_reason=STOP,
        ),
        response_event("e2", ("c1", "get_weather", {"forecast": "sunny"})),
    ]
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Let me see."},
        {"type": "text-end", "id": T1},
        START,
        delta('{"city":"Par'),
        delta("is, FR"),
        delta('","days":3'),
        delta("}"),
        AVAILABLE,
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"forecast": "sunny"}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_vertex_pieces_name_the_call_once_and_end_without_will_continue() -> None:
    """Vertex's ``stream_function_call_arguments``: later pieces may omit the name, and the
    closing one says nothing of ``will_continue`` (ADK's aggregator gives each the call id).
    ADK's own calls come whole, and a partial that repeats a whole call (no ``partial_args``,
    no ``will_continue``: Gemini without argument streaming) is no piece: both are shown from
    the final event only."""
    events = [
        model_event(
            "e1",
            piece(
                "q1", "adk_request_input", string("$.message", "Na", more=True), will_continue=True
            ),
            call("c0", "get_weather", city="Oslo"),
            partial=True,
        ),
        model_event(
            "e1",
            piece("c1", "get_weather", string("$.city", "Paris", more=True), will_continue=True),
            partial=True,
        ),
        model_event(
            "e1",
            piece("c1", None, string("$.city", ", FR", more=False), will_continue=True),
            partial=True,
        ),
        model_event("e1", piece("c1", None, number("$.days", 3), will_continue=None), partial=True),
        model_event("e1", call("c1", "get_weather", city="Paris, FR", days=3), finish_reason=STOP),
    ]
    assert run(events)[1:-2] == [
        {"type": "start-step"},
        START,
        delta('{"city":"Paris'),
        delta(', FR"'),
        delta(',"days":3'),
        delta("}"),
        AVAILABLE,
    ]


def test_a_stream_that_goes_back_on_itself_starts_the_text_over_at_the_end() -> None:
    """A value changed after it was sent cannot be followed by appending: the deltas stop, and
    the final call starts the part's text over with its whole JSON (the client resets it at
    ``tool-input-start``), so the text the client holds is still the input's JSON."""
    events = [
        model_event(
            "e1",
            piece("c1", "get_weather", string("$.city", "Paris", more=True), will_continue=True),
            partial=True,
        ),
        model_event(
            "e1",
            piece("c1", "get_weather", number("$.city", 75), will_continue=True),
            partial=True,
        ),
        model_event("e1", call("c1", "get_weather", city="Paris, FR", days=3), finish_reason=STOP),
    ]
    assert run(events)[1:-2] == [
        {"type": "start-step"},
        START,
        delta('{"city":"Paris'),
        START,
        delta('{"city":"Paris, FR","days":3}'),
        AVAILABLE,
    ]


def test_a_browser_tool_that_waits_for_approval_holds_the_whole_json_as_its_raw_input() -> None:
    """Its input is only the text until the user approves (``rawInput``; no
    ``input-available``), so the streamed text must end as the same JSON the unstreamed call
    sends in one delta (history shows that)."""

    @client_tool(require_approval=True)
    def delete_file(path: str) -> None:
        """Delete a file in the browser."""

    converter = EventConverter(message_id=MID, policy=ToolPolicy([delete_file]))
    chunks = converter.start()
    for event in [
        model_event(
            "e1",
            piece("c1", "delete_file", string("$.path", "/tmp/", more=True), will_continue=True),
            partial=True,
        ),
        model_event(
            "e1",
            piece("c1", "delete_file", string("$.path", "a.txt", more=True), will_continue=True),
            partial=True,
        ),
        model_event("e1", call("c1", "delete_file", path="/tmp/a.txt"), finish_reason=STOP),
    ]:
        chunks += converter.feed(event)
    streamed = wire(chunks)[2:]
    assert streamed == [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "delete_file"},
        delta('{"path":"/tmp/'),
        delta("a.txt"),
        delta('"}'),
        {"type": "tool-approval-request", "approvalId": "approval-c1", "toolCallId": "c1"},
    ]
    texts = [c["inputTextDelta"] for c in streamed if c["type"] == "tool-input-delta"]
    assert "".join(texts) == to_json({"path": "/tmp/a.txt"})


ARGS = [
    {"city": 'Boston "MA"', "days": 3, "units": ["c", True, None]},
    {"a": {"b": [1, 2.5, {"c": "xyz"}]}, "note": "ü\n\t\\"},
    {},
]


@pytest.mark.parametrize("args", ARGS)
@pytest.mark.parametrize("chunk_size", [1, 3, 64])
def test_the_deltas_concatenated_are_the_final_input_json(
    args: dict[str, Any], chunk_size: int
) -> None:
    """Whatever pieces ADK's tracker makes of the model's JSON text (the scripted model
    streams as ADK's Anthropic model does), the text sent is the final input's JSON."""
    turn = [Text("ok"), Call("f", args, id="c1", stream_args=True)]
    events = [
        Event(
            id="e1",
            invocation_id="inv",
            author="agent",
            content=response.content,
            partial=response.partial,
        )
        for response in turn_to_responses(turn, stream=True, chunk_size=chunk_size)
    ]
    chunks = run(events)
    texts = [c["inputTextDelta"] for c in chunks if c["type"] == "tool-input-delta"]
    assert "".join(texts) == to_json(args)
    assert [c["type"] for c in chunks if c["type"].startswith("tool-")] == [
        "tool-input-start",
        *["tool-input-delta"] * len(texts),
        "tool-input-available",
    ]


def test_an_empty_container_mid_stream_is_sent_with_the_rest() -> None:
    """ADK's tracker cannot say whether an empty value is ``{}`` or ``[]`` and drops it; the
    final JSON has it, and the text stays a prefix of it only if the model put it last."""
    streamed = StreamedInput("f")
    sent = streamed.feed([string("$.a", "x", more=False)])
    assert sent == '{"a":"x"'
    assert streamed.rest({"a": "x", "tags": []}) == ',"tags":[]}'


def test_an_answer_that_fails_while_a_call_streams_ends_the_call_with_an_error() -> None:
    """The client stops reading at ``error``: the call would stay ``input-streaming`` for
    good, and no stored event holds it. It is ended as an error with the arguments so far,
    and kept for the answer's record (``cards.cut``), which history shows."""
    converter = EventConverter(message_id=MID)
    converter.start()
    converter.feed(
        model_event(
            "e1",
            piece("c1", "get_weather", string("$.city", "Par", more=True), will_continue=True),
            partial=True,
        )
    )
    assert wire(converter.fail("boom")) == [
        {
            "type": "tool-input-error",
            "toolCallId": "c1",
            "toolName": "get_weather",
            "input": {"city": "Par"},
            "errorText": "The answer ended before this call was complete.",
        },
        {"type": "data-error", "id": f"{MID}-error", "data": {"errorText": "boom"}},
        {"type": "error", "errorText": "boom"},
    ]
    assert converter.cards.cut == [CutCall(id="c1", name="get_weather", input={"city": "Par"})]


def test_a_stopped_answer_ends_its_streaming_call_and_history_shows_it_so() -> None:
    """The user stops the answer while a call streams: the call ends as an error before the
    ``abort`` chunk; the answer's record (:func:`shown_answer`, the stopped answer's text and
    its cut calls) is shown by history as the stream left it, for ai@6 and ai@7."""
    policy = ToolPolicy([])  # (a server tool: providerExecuted)
    converter = EventConverter(message_id=MID, policy=policy)
    chunks = converter.start()
    for event in [
        model_event(
            "e1",
            piece("c1", "get_weather", string("$.city", "Par", more=True), will_continue=True),
            partial=True,
        ),
        Event(invocation_id="inv", author="agent", error_code="INVOCATION_ABORTED"),
    ]:
        chunks += converter.feed(event)
    chunks += converter.finish()
    cut = {
        "type": "tool-input-error",
        "toolCallId": "c1",
        "toolName": "get_weather",
        "input": {"city": "Par"},
        "errorText": CUT_SHORT,
        "providerExecuted": True,
    }
    assert wire(chunks)[4:] == [
        cut,
        {"type": "abort"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    record = shown_answer("agent", MID, converter.stopped, None, None, converter.cards.cut)
    client = read_ui_message(wire(chunks))
    assert client["parts"][1] == {
        "type": "tool-get_weather",
        "toolCallId": "c1",
        "state": "output-error",
        "rawInput": {"city": "Par"},
        "errorText": CUT_SHORT,
        "providerExecuted": True,
    }
    for v7 in (False, True):
        history = rebuild_messages([record], policy, v7=v7)
        part = history[0].parts[1]
        assert isinstance(part, ToolPart)
        assert (part.state, part.error_text) == ("output-error", CUT_SHORT)
        shown = (part.input, part.raw_input)
        assert shown == (({"city": "Par"}, None) if v7 else (None, {"city": "Par"}))
    assert as_json(rebuild_messages([record], policy)[0]) == client


def as_json(message: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(message))
