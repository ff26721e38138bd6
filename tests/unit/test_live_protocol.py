"""The live protocol machine alone: the connection's phases, bad frames, and a turn paused for
the user's approval, as exact sequences of outputs (frames decoded, in order)."""

from __future__ import annotations

import json
from typing import Any

from google.adk.agents.live_request_queue import LiveRequest
from google.adk.events.event import Event
from google.genai import types

from adk_asgi.hitl.interrupts import REQUEST_INPUT
from adk_asgi.live import durable
from adk_asgi.live.calls import UNANSWERED
from adk_asgi.live.outputs import (
    Close,
    KeepFailure,
    OpenSession,
    Output,
    Resolve,
    Send,
    ToModel,
)
from adk_asgi.live.protocol import BUSY, TIMED_OUT
from tests.unit.live_machine import (
    TURN_COMPLETE,
    Machine,
    send_frame,
    text_event,
    user_message,
)

HI = ToModel(
    LiveRequest(
        content=types.Content(role="user", parts=[types.Part(text="hi")]),
        # the client's message id, and the chat's title: this is its first message
        state_delta={"adk_asgi:userMessageId": "u1", "adk_asgi:title": "hi"},
    )
)


def decoded(outputs: list[Output]) -> list[Any]:
    """Outputs with their frames decoded, so a sequence reads as the wire does."""

    return [
        json.loads(o.data) if isinstance(o, Send) and isinstance(o.data, str) else o
        for o in outputs
    ]


def chunk(request_id: str, sequence: int, **fields: Any) -> dict[str, Any]:
    return {"type": "chunk", "requestId": request_id, "sequence": sequence, "chunk": fields}


# --- phases ------------------------------------------------------------------------------------


def test_a_send_before_the_session_opens_waits_for_it() -> None:
    live = Machine()
    assert live.say("r1") == [OpenSession("chat-1")]  # the chat is bound; nothing streams yet
    assert live.protocol.phase == "opening"
    started = live.take(live.protocol.session_started(answers_history=False))
    assert decoded(started) == [
        {"type": "start", "requestId": "r1"},
        chunk("r1", 0, type="start", messageId="m1"),
        HI,
    ]


def test_an_abort_while_the_send_waits_for_the_session_still_stops_its_stream() -> None:
    live = Machine()
    live.say("r1")
    assert live.receive(type="abort", requestId="r1") == []
    started = live.take(live.protocol.session_started(answers_history=False))
    assert decoded(started) == [
        {"type": "start", "requestId": "r1"},
        chunk("r1", 0, type="start", messageId="m1"),
        HI,  # the message still goes to the model: stop only stops reading
    ]
    live.event(text_event("Hello", partial=True))
    live.event(text_event("Hello", partial=False))
    assert live.event(TURN_COMPLETE) == []  # nothing more for the aborted request
    assert live.chunks_of("r1") == [{"type": "start", "messageId": "m1"}]


def test_a_chat_named_in_the_url_opens_before_any_send() -> None:
    live = Machine()
    assert live.take(live.protocol.bind("chat-1")) == [OpenSession("chat-1")]
    live.take(live.protocol.session_started(answers_history=False))
    assert decoded(live.say("r1")) == [
        {"type": "start", "requestId": "r1"},
        chunk("r1", 0, type="start", messageId="m1"),
        HI,
    ]


def test_a_busy_chat_refuses_the_waiting_send_and_closes_with_try_again_later_and_why() -> None:
    live = Machine()
    live.say("r1")
    busy = live.take(live.protocol.session_busy())
    error = "this chat is busy in another request or connection"
    assert decoded(busy) == [
        {"type": "error", "requestId": "r1", "errorText": error},
        Close(BUSY, error),
    ]


def test_the_end_of_the_session_fails_the_response_under_way_and_closes() -> None:
    live = Machine()
    live.open()
    live.say("r1")
    ended = live.take(live.protocol.session_ended(RuntimeError("boom")))
    shown = {"errorText": "RuntimeError: boom"}
    assert decoded(ended) == [
        chunk("r1", 1, type="data-error", id="m1-error", data=shown),
        chunk("r1", 2, type="error", errorText="RuntimeError: boom"),
        chunk("r1", 3, type="finish", finishReason="error"),
        {"type": "end", "requestId": "r1"},
        KeepFailure("m1", [], "RuntimeError: boom"),
        Close(1011, "the live session ended after an error"),
    ]
    reason = "the live session ended after an error"
    assert decoded(live.say("r2")) == [
        {"type": "error", "requestId": "r2", "errorText": reason},
        Close(1011, reason),
    ]


def test_a_send_for_another_chat_is_refused() -> None:
    live = Machine()
    live.open("chat-1")
    refused = live.receive(**send_frame("r1", [user_message("u1", "hi")], chat_id="chat-2"))
    error = "this connection serves chat 'chat-1'"
    assert decoded(refused) == [{"type": "error", "requestId": "r1", "errorText": error}]


def test_a_second_send_while_a_response_streams_is_refused() -> None:
    live = Machine()
    live.open()
    live.say("r1")
    error = "a response is still streaming on this connection"
    assert decoded(live.say("r2", message_id="u2")) == [
        {"type": "error", "requestId": "r2", "errorText": error}
    ]


def test_bad_frames_get_an_error_frame_and_change_nothing() -> None:
    live = Machine()
    live.open()
    assert decoded(live.take(live.protocol.receive("{not json"))) == [
        {"type": "error", "requestId": "", "errorText": "not a JSON frame"}
    ]
    assert decoded(live.receive(type="shout", requestId="r9")) == [
        {"type": "error", "requestId": "r9", "errorText": "unknown frame 'shout'"}
    ]
    assert decoded(live.receive(type="ping")) == [{"type": "pong"}]
    assert live.protocol.phase == "open"


def test_voice_activity_goes_to_the_model() -> None:
    live = Machine(audio=True)  # (push to talk: the model's own detection is off)
    live.open()
    assert live.receive(type="activity-start") == [
        ToModel(LiveRequest(activity_start=types.ActivityStart()))
    ]
    assert live.receive(type="activity-end") == [
        ToModel(LiveRequest(activity_end=types.ActivityEnd()))
    ]
    assert live.receive(type="audio-end") == [ToModel(LiveRequest(audio_stream_end=True))]


def test_activity_signals_are_refused_where_the_model_detects_speech() -> None:
    """A text connection (or an app whose run config leaves Gemini's own voice detection on):
    Gemini would close the session on an activity signal, so it never reaches the model."""
    live = Machine(audio=False)
    live.open()
    for kind in ("activity-start", "activity-end"):
        assert live.receive(type=kind) == [
            Send(
                json.dumps(
                    {
                        "type": "error",
                        "requestId": "",
                        "errorText": f"{kind}: the model detects speech on this connection;"
                        " send audio-end",
                    },
                    separators=(",", ":"),
                )
            )
        ]
    assert live.receive(type="audio-end") == [ToModel(LiveRequest(audio_stream_end=True))]


# --- a turn paused for the user ------------------------------------------------------------------


def call_event(call_id: str = "c1") -> Event:
    call = types.FunctionCall(id=call_id, name="pay", args={"amount": 5})
    content = types.Content(role="model", parts=[types.Part(function_call=call)])
    return Event(invocation_id="i", author="agent", content=content)


def response_event(result: dict[str, Any]) -> Event:
    response = types.FunctionResponse(id="c1", name="pay", response=result)
    content = types.Content(role="user", parts=[types.Part(function_response=response)])
    return Event(invocation_id="i", author="agent", content=content)


def answered(approved: bool) -> dict[str, Any]:
    """The paused message as the stock client re-sends it after Approve or Deny."""
    part = {
        "type": "tool-pay",
        "toolCallId": "c1",
        "state": "approval-responded",
        "input": {"amount": 5},
        "approval": {"id": "approval-c1", "approved": approved},
    }
    message = {"id": "m1", "role": "assistant", "parts": [{"type": "step-start"}, part]}
    return send_frame("r2", [user_message("u1", "hi"), message])


def paused_for_approval() -> Machine:
    live = Machine()
    live.open()
    live.say("r1")
    live.event(call_event())
    call = live.protocol.tools.call("c1", "pay", {"amount": 5}, "i")
    paused = live.take(live.protocol.tools.wait(call, "approval"))
    assert decoded(paused) == [
        chunk("r1", 4, type="tool-approval-request", approvalId="approval-c1", toolCallId="c1"),
        chunk("r1", 5, type="finish-step"),
        chunk("r1", 6, type="finish", finishReason="tool-calls"),
        {"type": "end", "requestId": "r1"},
    ]
    return live


def test_an_approval_pauses_the_turn_and_the_answer_releases_the_call() -> None:
    live = paused_for_approval()
    assert decoded(live.receive(**answered(True))) == [
        Resolve("c1", True),
        {"type": "start", "requestId": "r2"},
        chunk("r2", 0, type="start", messageId="m1"),
    ]
    call = live.protocol.calls.state.calls["c1"]
    assert live.take(live.protocol.tools.decided(call, True)) == []
    assert decoded(live.take(live.protocol.tools.tool_finished("c1", {"ok": 5}))) == [
        chunk("r2", 1, type="tool-output-available", toolCallId="c1", output={"ok": 5})
    ]
    for event in [response_event({"ok": 5}), TURN_COMPLETE, text_event("Paid.", partial=False)]:
        live.event(event)
    assert decoded(live.event(TURN_COMPLETE)) == [
        chunk("r2", 6, type="finish-step"),
        chunk("r2", 7, type="finish", finishReason="stop"),
        {"type": "end", "requestId": "r2"},
    ]
    assert live.chunks_of("r2")[2:6] == [
        {"type": "start-step"},
        {"type": "text-start", "id": "m1-txt1"},
        {"type": "text-delta", "id": "m1-txt1", "delta": "Paid."},
        {"type": "text-end", "id": "m1-txt1"},
    ]


def test_a_denial_is_shown_once_and_answers_the_wait_with_false() -> None:
    live = paused_for_approval()
    assert decoded(live.receive(**answered(False))) == [
        Resolve("c1", False),
        {"type": "start", "requestId": "r2"},
        chunk("r2", 0, type="start", messageId="m1"),
        chunk("r2", 1, type="tool-output-denied", toolCallId="c1"),
    ]
    call = live.protocol.calls.state.calls["c1"]
    assert live.take(live.protocol.tools.decided(call, False)) == []  # shown already
    assert live.protocol.calls.state.live_decisions == {"c1": False}


def test_the_same_answer_twice_is_a_conflict_and_runs_nothing() -> None:
    live = paused_for_approval()
    live.receive(**answered(True))
    live.take(live.protocol.tools.tool_finished("c1", {"ok": 5}))
    for event in [response_event({"ok": 5}), TURN_COMPLETE, text_event("Paid.", False)]:
        live.event(event)
    live.event(TURN_COMPLETE)
    assert live.frames[-1] == {"type": "end", "requestId": "r2"}
    again = live.receive(**{**answered(True), "requestId": "r3"})
    assert [o for o in again if isinstance(o, Resolve)] == []
    error = "approval 'approval-c1' is not open in this chat"  # (ADK ran it already)
    assert decoded(again) == [{"type": "error", "requestId": "r3", "errorText": error}]


def test_an_approval_that_times_out_is_denied_and_a_late_answer_gets_that_denial() -> None:
    live = paused_for_approval()
    outcome, outputs = live.protocol.tools.timed_out("c1")
    assert (outcome, outputs) == (False, [])
    call = live.protocol.calls.state.calls["c1"]
    live.take(live.protocol.tools.decided(call, False))  # no request is open: kept for the message
    late = live.receive(**answered(True))
    assert decoded(late) == [
        {"type": "start", "requestId": "r2"},
        chunk("r2", 0, type="start", messageId="m1"),
        chunk("r2", 1, type="tool-output-denied", toolCallId="c1"),
    ]


def test_a_browser_result_that_never_comes_times_out_into_the_paused_message() -> None:
    live = Machine()
    live.open()
    live.say("r1")
    live.event(call_event())
    call = live.protocol.tools.call("c1", "pay", {"amount": 5}, "i")
    live.take(live.protocol.tools.wait(call, "result"))
    outcome, outputs = live.protocol.tools.timed_out("c1")
    assert outcome == TIMED_OUT
    assert live.protocol.streams.response is not None
    assert live.protocol.streams.response.message_id == "m1"  # the paused message goes on
    assert decoded(outputs) == []


def test_a_new_message_closes_the_waiting_approval_unanswered() -> None:
    live = paused_for_approval()
    moved_on = live.say("r2", text="hi", message_id="u2")
    assert moved_on[0] == Resolve("c1", UNANSWERED)  # not the user's denial
    assert live.protocol.calls.waits == {}


# --- a result next to a call that waits ----------------------------------------------------------


def responses(*results: tuple[str, str, dict[str, Any]]) -> Event:
    parts = [
        types.Part(function_response=types.FunctionResponse(id=i, name=n, response=r))
        for i, n, r in results
    ]
    return Event(invocation_id="i", author="agent", content=types.Content(role="user", parts=parts))


STEP = ["c0", "c1"]


def test_a_result_next_to_a_call_that_waits_is_stored_as_it_comes_and_once() -> None:
    """ADK's live flow stores a step's results as one event once all its calls returned: the
    weather, shown as it came, would be stored only when the payment's wait ends. It is stored
    at once, tagged as ADK's call event is (the step's calls are the stored event's: the
    machine may see that event after the tools ran); the step's merged event keeps the
    payment's result only (the model gets both: ADK sends the event it made, whole)."""
    live = Machine()
    live.open()
    live.say("r1")
    calls = [
        types.FunctionCall(id="c0", name="get_weather", args={"city": "Paris"}),
        types.FunctionCall(id="c1", name="pay", args={"amount": 5}),
    ]
    content = types.Content(role="model", parts=[types.Part(function_call=c) for c in calls])
    called = live.protocol.tag(Event(invocation_id="i", author="agent", content=content))
    assert called is not None
    # ADK runs the tools as it hands the stored event over: before the machine sees it
    live.protocol.tools.call("c0", "get_weather", {"city": "Paris"}, "i")
    early = live.protocol.tools.stored_result("c0", "agent", {"temp": 19}, STEP)
    assert early is not None
    assert early.custom_metadata == called.custom_metadata  # (its message, its step)
    live.event(called)
    assert early.content == responses(("c0", "get_weather", {"temp": 19})).content
    assert (early.author, early.invocation_id) == ("agent", "i")
    assert decoded(live.take(live.protocol.tools.tool_finished("c0", {"temp": 19}))) == [
        chunk("r1", 6, type="tool-output-available", toolCallId="c0", output={"temp": 19})
    ]
    call = live.protocol.tools.call("c1", "pay", {"amount": 5}, "i")
    live.take(live.protocol.tools.wait(call, "approval"))
    live.receive(**answered(True))
    live.take(live.protocol.tools.decided(call, True))
    stored = live.protocol.tools.stored_result("c1", "agent", {"ok": 5}, STEP)
    assert stored is None  # (the step's last)
    live.take(live.protocol.tools.tool_finished("c1", {"ok": 5}))
    merged = responses(("c0", "get_weather", {"temp": 19}), ("c1", "pay", {"ok": 5}))
    stored = live.protocol.tag(merged)
    assert stored is not None
    assert stored.content == responses(("c1", "pay", {"ok": 5})).content
    tags = (stored.custom_metadata or {})["adk_asgi"]
    assert {k: v for k, v in tags.items() if k != "liveStep"} == {
        "v": 2,
        "messageId": "m1",
        "decisions": {"c1": True},
    }
    assert merged.content is not None and len(merged.content.parts or []) == 2


def test_a_stored_result_stays_in_the_merged_event_when_it_is_all_or_was_changed() -> None:
    """The merged event keeps a result the agent's ``after_tool_callback`` changed after it was
    stored (as the model got it), and all its results when none would be left (it ends the
    step); a result stored twice is harmless: the last is a call's."""
    both = responses(("c0", "get_weather", {"temp": 19}), ("c1", "pay", {"ok": 5}))
    assert (
        durable.without(both, {"c0": {"temp": 19}}).content
        == responses(("c1", "pay", {"ok": 5})).content
    )
    assert durable.without(both, {"c0": {"temp": 20}}) is both
    only = responses(("c0", "get_weather", {"temp": 19}))
    assert durable.without(only, {"c0": {"temp": 19}}) is only


def test_a_failed_session_keeps_the_results_it_showed() -> None:
    """A server tool's result is shown as it returns, before ADK stores it: the record of a
    failure carries it, tagged as ADK's would be, for the session to store if it has not
    (the answer of a workflow's question, shown by the same call without ``ran``, is not)."""
    live = Machine()
    live.open()
    live.say("r1")
    live.event(call_event())
    live.take(live.protocol.tools.tool_finished("c1", {"ok": 5}, ran_by="agent"))
    live.protocol.tools.call("q1", REQUEST_INPUT, {"message": "Sure?"}, "i")
    live.take(live.protocol.tools.tool_finished("q1", {"answer": "yes"}))
    response = live.protocol.streams.response
    assert response is not None
    ended = live.take(live.protocol.session_ended(RuntimeError("boom")))
    (kept,) = [output for output in ended if isinstance(output, KeepFailure)]
    (result,) = kept.results
    assert (result.author, result.invocation_id) == ("agent", "i")
    answers = [(r.id, r.name, r.response) for r in result.get_function_responses()]
    assert answers == [("c1", "pay", {"ok": 5})]
    tags = {"v": 2, "messageId": "m1", "liveStep": f"{response.key}.0"}  # its message, its step
    assert result.custom_metadata == {"adk_asgi": tags}
