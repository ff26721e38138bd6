"""The converter alone: ADK events in, exact chunk sequences out (no runner, no I/O)."""

from __future__ import annotations

from typing import Any

import msgspec
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from adk_asgi.convert.adk_values import map_finish_reason
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.failures import AgentError
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import UIMessageChunk
from demo_app import change_bgm

MID = "m1"
T1 = f"{MID}-txt1"


def wire(chunks: list[UIMessageChunk]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = msgspec.json.decode(msgspec.json.encode(chunks))
    return result


def model_event(event_id: str, *parts: types.Part, partial: bool = False, **fields: Any) -> Event:
    return Event(
        id=event_id,
        invocation_id="inv",
        author="agent",
        content=types.Content(role="model", parts=list(parts)),
        partial=partial,
        **fields,
    )


def response_event(
    event_id: str, *responses: tuple[str, str, dict[str, Any]], **fields: Any
) -> Event:
    parts = [
        types.Part(function_response=types.FunctionResponse(id=cid, name=name, response=resp))
        for cid, name, resp in responses
    ]
    return Event(
        id=event_id,
        invocation_id="inv",
        author="agent",
        content=types.Content(role="user", parts=parts),
        **fields,
    )


def text(value: str, thought: bool = False) -> types.Part:
    return types.Part(text=value, thought=thought or None)


def call(call_id: str, name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))


def run(events: list[Event], **options: Any) -> list[dict[str, Any]]:
    converter = EventConverter(message_id=MID, **options)
    chunks = converter.start()
    for event in events:
        chunks += converter.feed(event)
    chunks += converter.finish()
    return wire(chunks)


STOP = types.FinishReason.STOP
ADK_HINT = (
    "Please approve or reject the tool call process_payment() by responding with a"
    " FunctionResponse with an expected ToolConfirmation payload."
)


def test_partials_then_final_stream_text_once() -> None:
    events = [
        model_event("e1", text("Hel"), partial=True),
        model_event("e1", text("lo!"), partial=True),
        model_event("e1", text("Hello!"), finish_reason=STOP),
    ]
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Hel"},
        {"type": "text-delta", "id": T1, "delta": "lo!"},
        {"type": "text-end", "id": T1},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_final_event_without_partials_emits_its_text() -> None:
    assert run([model_event("e1", text("Hi there"), finish_reason=STOP)]) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Hi there"},
        {"type": "text-end", "id": T1},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_final_text_longer_than_partials_adds_only_the_suffix() -> None:
    events = [
        model_event("e1", text("Hel"), partial=True),
        model_event("e1", text("Hello"), finish_reason=STOP),
    ]
    assert run(events)[2:6] == [
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Hel"},
        {"type": "text-delta", "id": T1, "delta": "lo"},
        {"type": "text-end", "id": T1},
    ]


def test_final_text_rewritten_by_a_callback_is_not_streamed_twice() -> None:
    events = [
        model_event("e1", text("Hello"), partial=True),
        model_event("e1", text("Goodbye"), finish_reason=STOP),
    ]
    deltas = [c for c in run(events) if c["type"] == "text-delta"]
    assert deltas == [{"type": "text-delta", "id": T1, "delta": "Hello"}]


def test_thoughts_become_reasoning_before_text() -> None:
    events = [
        model_event("e1", text("Let me ", thought=True), partial=True),
        model_event("e1", text("think.", thought=True), partial=True),
        model_event("e1", text("Answer."), partial=True),
        model_event("e1", text("Let me think.", thought=True), text("Answer."), finish_reason=STOP),
    ]
    r1, t2 = f"{MID}-rsn1", f"{MID}-txt2"
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "reasoning-start", "id": r1},
        {"type": "reasoning-delta", "id": r1, "delta": "Let me "},
        {"type": "reasoning-delta", "id": r1, "delta": "think."},
        {"type": "reasoning-end", "id": r1},
        {"type": "text-start", "id": t2},
        {"type": "text-delta", "id": t2, "delta": "Answer."},
        {"type": "text-end", "id": t2},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_server_tool_round_trip_is_two_steps() -> None:
    events = [
        model_event("e1", text("Checking."), partial=True),
        model_event("e1", call("c1", "get_weather", city="Paris"), partial=True),
        model_event(
            "e1", text("Checking."), call("c1", "get_weather", city="Paris"), finish_reason=STOP
        ),
        response_event("e2", ("c1", "get_weather", {"forecast": "sunny"})),
        model_event("e3", text("Sunny."), partial=True),
        model_event("e3", text("Sunny."), finish_reason=STOP),
    ]
    t2 = f"{MID}-txt2"
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Checking."},
        {"type": "text-end", "id": T1},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "get_weather"},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
        },
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"forecast": "sunny"}},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": t2},
        {"type": "text-delta", "id": t2, "delta": "Sunny."},
        {"type": "text-end", "id": t2},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_partial_function_calls_are_ignored() -> None:
    events = [model_event("e1", call("c1", "get_weather", city="P"), partial=True)]
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_error_response_becomes_tool_output_error() -> None:
    events = [
        model_event("e1", call("c1", "nope"), finish_reason=STOP),
        response_event("e2", ("c1", "nope", {"error": "no tool named nope"})),
    ]
    assert run(events)[4] == {
        "type": "tool-output-error",
        "toolCallId": "c1",
        "errorText": "no tool named nope",
    }


def test_response_for_an_unknown_call_is_not_emitted() -> None:
    events = [response_event("e2", ("ghost", "get_weather", {"x": 1}))]
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_known_calls_get_their_results_before_the_first_step() -> None:
    events = [
        response_event("e2", ("c1", "get_weather", {"forecast": "sunny"})),
        model_event("e3", text("Sunny."), finish_reason=STOP),
    ]
    assert run(events, known_calls=["c1"])[:3] == [
        {"type": "start", "messageId": MID},
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"forecast": "sunny"}},
        {"type": "start-step"},
    ]


def test_long_running_call_ends_with_tool_calls() -> None:
    events = [
        model_event(
            "e1",
            call("c1", "change_bgm", track=3),
            finish_reason=STOP,
            long_running_tool_ids={"c1"},
        )
    ]
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "change_bgm"},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "change_bgm",
            "input": {"track": 3},
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]


def test_confirmation_becomes_an_approval_request_on_the_original_call() -> None:
    confirmation_args = {
        "originalFunctionCall": {"id": "c1", "name": "process_payment", "args": {"amount": 5}},
        "toolConfirmation": {"hint": ADK_HINT, "confirmed": False},
    }
    events = [
        model_event("e1", call("c1", "process_payment", amount=5), finish_reason=STOP),
        Event(
            id="e2",
            invocation_id="inv",
            author="agent",
            content=types.Content(
                role="model", parts=[call("req1", "adk_request_confirmation", **confirmation_args)]
            ),
            long_running_tool_ids={"req1"},
        ),
        response_event(
            "e3",
            ("c1", "process_payment", {"error": "This tool call requires confirmation."}),
            actions=EventActions(
                requested_tool_confirmations={"c1": ToolConfirmation(hint="approve?")}
            ),
        ),
    ]
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "process_payment"},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "process_payment",
            "input": {"amount": 5},
        },
        {"type": "tool-approval-request", "approvalId": "req1", "toolCallId": "c1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]


def _asks(*calls: tuple[str, str, dict[str, Any]]) -> Event:
    """ADK's confirmation event: one ``adk_request_confirmation`` call per (id, call id, args)."""
    parts = [
        call(
            ask_id,
            "adk_request_confirmation",
            originalFunctionCall={"id": call_id, "name": "process_payment", "args": args},
            toolConfirmation={"hint": ADK_HINT, "confirmed": False},
        )
        for ask_id, call_id, args in calls
    ]
    return Event(
        id="asks",
        invocation_id="inv",
        author="agent",
        content=types.Content(role="model", parts=parts),
        long_running_tool_ids={ask_id for ask_id, _, _ in calls},
    )


def _payment(call_id: str, amount: int) -> list[dict[str, Any]]:
    return [
        {"type": "tool-input-start", "toolCallId": call_id, "toolName": "process_payment"},
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": "process_payment",
            "input": {"amount": amount},
        },
    ]


def test_parallel_approvals_are_requested_each_right_after_its_call() -> None:
    """As the AI SDK's own server does; ADK asks for both after both calls."""
    events = [
        model_event(
            "e1",
            call("c1", "process_payment", amount=5),
            call("c2", "process_payment", amount=7),
            finish_reason=STOP,
        ),
        _asks(("req1", "c1", {"amount": 5}), ("req2", "c2", {"amount": 7})),
    ]
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *_payment("c1", 5),
        {"type": "tool-approval-request", "approvalId": "req1", "toolCallId": "c1"},
        *_payment("c2", 7),
        {"type": "tool-approval-request", "approvalId": "req2", "toolCallId": "c2"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]


def test_parallel_calls_that_ask_nothing_keep_their_order() -> None:
    events = [
        model_event(
            "e1",
            call("c1", "process_payment", amount=5),
            call("c2", "process_payment", amount=7),
            finish_reason=STOP,
        ),
        response_event(
            "e2", ("c1", "process_payment", {"ok": 5}), ("c2", "process_payment", {"ok": 7})
        ),
    ]
    assert run(events)[2:8] == [
        *_payment("c1", 5),
        *_payment("c2", 7),
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"ok": 5}},
        {"type": "tool-output-available", "toolCallId": "c2", "output": {"ok": 7}},
    ]


def process_payment(amount: float, recipient: str) -> dict[str, Any]:
    """Pay someone (a tool that asks the user first)."""
    return {"ok": amount}


def test_calls_of_tools_that_never_ask_are_not_held() -> None:
    """Holding a later call delays its card until the step's tools ran: only when it may ask."""
    payment = FunctionTool(process_payment, require_confirmation=True)
    converter = EventConverter(message_id=MID, policy=ToolPolicy([payment]))
    step = model_event(
        "e1", call("c1", "get_weather", city="Paris"), call("c2", "get_weather", city="Oslo")
    )
    by_server = {"providerExecuted": True}  # (never asks: the server runs it, unasked)
    assert wire(converter.feed(step))[1:] == [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "get_weather", **by_server},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
            **by_server,
        },
        {"type": "tool-input-start", "toolCallId": "c2", "toolName": "get_weather", **by_server},
        {
            "type": "tool-input-available",
            "toolCallId": "c2",
            "toolName": "get_weather",
            "input": {"city": "Oslo"},
            **by_server,
        },
    ]


def test_a_tool_the_server_runs_unasked_is_announced_as_the_servers() -> None:
    """``providerExecuted``: the page's ``onToolCall`` leaves it alone, and the stock
    lastAssistantMessageIsCompleteWithToolCalls does not take an answer ending on its output
    for one to send again. Browser tools, tools that may ask, and the user's questions are
    the page's."""
    payment = FunctionTool(process_payment, require_confirmation=True)
    policy = ToolPolicy([payment, change_bgm])
    converter = EventConverter(message_id=MID, policy=policy)
    names = ["get_weather", "process_payment", "change_bgm", "adk_request_input"]
    for number, name in enumerate(names):
        chunks = converter.feed(model_event(f"e{number}", call(f"c{number}", name)))
        starts = [c for c in wire(chunks) if c["type"] == "tool-input-start"]
        assert [s.get("providerExecuted") for s in starts] == [
            True if name == "get_weather" else None
        ]


def test_a_step_whose_second_call_is_held_still_shows_it_when_the_run_ends() -> None:
    events = [
        model_event(
            "e1",
            call("c1", "process_payment", amount=5),
            call("c2", "process_payment", amount=7),
            finish_reason=STOP,
        )
    ]
    assert run(events)[2:] == [
        *_payment("c1", 5),
        *_payment("c2", 7),
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_error_event_mid_text_closes_the_text_first() -> None:
    events = [
        model_event("e1", text("Hello "), partial=True),
        Event(
            id="e2",
            invocation_id="inv",
            author="agent",
            error_code="RuntimeError",
            error_message="stream broke",
        ),
    ]
    converter = EventConverter(message_id=MID)
    chunks = converter.start()
    for event in events:
        chunks += converter.feed(event)
    chunks += converter.fail("The agent failed while answering.")  # the raise that follows
    chunks += converter.finish()
    assert wire(chunks) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Hello "},
        {"type": "text-end", "id": T1},
        {
            "type": "data-error",
            "id": f"{MID}-error",
            "data": {"errorText": "RuntimeError: stream broke"},
        },
        {"type": "error", "errorText": "RuntimeError: stream broke"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]
    # what the client was shown and no event stores: the text of the call cut short
    assert converter.failure == ([types.Part(text="Hello ")], "RuntimeError: stream broke")


def test_on_error_words_what_the_client_reads_of_a_failure() -> None:
    seen: list[AgentError] = []

    def on_error(error: AgentError) -> str:
        seen.append(error)
        return "Sorry, something broke."

    converter = EventConverter(message_id=MID, on_error=on_error)
    event = Event(invocation_id="inv", author="agent", error_code="E", error_message="secret")
    chunks = converter.start() + converter.feed(event) + converter.finish()
    assert wire(chunks)[1:3] == [
        {
            "type": "data-error",
            "id": f"{MID}-error",
            "data": {"errorText": "Sorry, something broke."},
        },
        {"type": "error", "errorText": "Sorry, something broke."},
    ]
    boom = ValueError("key=hunter2")
    other = EventConverter(message_id=MID, on_error=on_error)
    assert wire(other.fail_with(boom))[-1] == {
        "type": "error",
        "errorText": "Sorry, something broke.",
    }
    assert seen == [AgentError(code="E", message="secret"), AgentError(exception=boom)]


def test_a_run_stopped_by_its_abort_signal_is_an_abort_not_an_error() -> None:
    events = [
        model_event("e1", text("Hel"), partial=True),
        Event(
            invocation_id="inv",
            author="agent",
            error_code="INVOCATION_ABORTED",
            error_message="Invocation was aborted by client.",
        ),
    ]
    converter = EventConverter(message_id=MID)
    chunks = converter.start()
    for event in events:
        chunks += converter.feed(event)
    chunks += converter.finish()
    assert wire(chunks)[3:] == [
        {"type": "text-delta", "id": T1, "delta": "Hel"},
        {"type": "text-end", "id": T1},
        {"type": "abort"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert converter.failure is None


def test_fail_without_an_error_event_reports_once() -> None:
    converter = EventConverter(message_id=MID)
    chunks = converter.start() + converter.fail("boom") + converter.fail("again")
    chunks += converter.finish() + converter.finish()
    assert wire(chunks) == [
        {"type": "start", "messageId": MID},
        {"type": "data-error", "id": f"{MID}-error", "data": {"errorText": "boom"}},
        {"type": "error", "errorText": "boom"},
        {"type": "finish", "finishReason": "error"},
    ]
    assert converter.failure == ([], "boom")


def test_usage_is_summed_into_finish_metadata_when_asked() -> None:
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=10, candidates_token_count=5, total_token_count=15
    )
    events = [
        model_event("e1", text("a"), finish_reason=STOP, usage_metadata=usage),
        model_event("e2", text("b"), finish_reason=STOP, usage_metadata=usage),
    ]
    assert run(events, send_usage=True)[-1] == {
        "type": "finish",
        "finishReason": "stop",
        "messageMetadata": {"usage": {"inputTokens": 20, "outputTokens": 10, "totalTokens": 30}},
    }
    assert run(events)[-1] == {"type": "finish", "finishReason": "stop"}


def test_inline_image_becomes_a_file_chunk() -> None:
    blob = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG"))
    chunks = run([model_event("e1", blob, finish_reason=STOP)])
    assert chunks[2] == {
        "type": "file",
        "url": "data:image/png;base64,iVBORw==",
        "mediaType": "image/png",
    }


def test_grounding_sources_become_source_urls() -> None:
    grounding = types.GroundingMetadata(
        grounding_chunks=[
            types.GroundingChunk(web=types.GroundingChunkWeb(uri="https://a.example", title="A")),
            types.GroundingChunk(web=types.GroundingChunkWeb(uri="https://b.example")),
        ]
    )
    chunks = run([model_event("e1", text("x"), finish_reason=STOP, grounding_metadata=grounding)])
    assert [c for c in chunks if c["type"] == "source-url"] == [
        {"type": "source-url", "sourceId": "e1-src0", "url": "https://a.example", "title": "A"},
        {"type": "source-url", "sourceId": "e1-src1", "url": "https://b.example"},
    ]


def test_user_events_are_not_echoed() -> None:
    user = Event(
        id="u",
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="hi")]),
    )
    assert run([user]) == [
        {"type": "start", "messageId": MID},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_finish_reasons_map_to_the_sdk_enum() -> None:
    assert map_finish_reason(types.FinishReason.MAX_TOKENS) == "length"
    assert map_finish_reason(types.FinishReason.SAFETY) == "content-filter"
    assert map_finish_reason(types.FinishReason.MALFORMED_FUNCTION_CALL) == "error"
    assert map_finish_reason(types.FinishReason.OTHER) == "other"
    assert map_finish_reason(None) == "stop"
    events = [model_event("e1", text("cut"), finish_reason=types.FinishReason.MAX_TOKENS)]
    assert run(events)[-1] == {"type": "finish", "finishReason": "length"}


def test_max_tokens_error_code_is_a_finish_reason_not_an_error() -> None:
    # ADK's LlmResponse.create copies a non-STOP finish reason into error_code.
    event = model_event(
        "e1",
        text("cut"),
        finish_reason=types.FinishReason.MAX_TOKENS,
        error_code="MAX_TOKENS",
        error_message="Maximum tokens reached",
    )
    assert [c["type"] for c in run([event])] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert run([event])[-1] == {"type": "finish", "finishReason": "length"}


def test_parallel_agents_streaming_at_once_each_keep_one_step_and_one_text_part() -> None:
    """Two sub-agents of a ``ParallelAgent`` stream at once (interleaved partials, then their
    final events, then one's tool result): each model call is shown whole, one after the
    other, in a step and a text part of its own — as history shows them — not a step per
    delta."""

    def of(author: str, event: Event) -> Event:
        return event.model_copy(update={"author": author})

    events = [
        of("a", model_event("ea", text("AAAA"), partial=True)),
        of("b", model_event("eb", text("BBBB"), partial=True)),
        of("a", model_event("ea", text(" AA"), partial=True)),
        of("b", model_event("eb", text(" BB"), partial=True)),
        of("b", model_event("eb", text("BBBB BB"), call("cb", "get_weather", city="Oslo"))),
        of("b", response_event("rb", ("cb", "get_weather", {"forecast": "snow"}))),
        of("a", model_event("ea", text("AAAA AA"), finish_reason=STOP)),
    ]
    t2 = f"{MID}-txt2"
    assert run(events) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "AAAA"},
        {"type": "text-delta", "id": T1, "delta": " AA"},
        {"type": "text-end", "id": T1},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": t2},
        {"type": "text-delta", "id": t2, "delta": "BBBB"},
        {"type": "text-delta", "id": t2, "delta": " BB"},
        {"type": "text-end", "id": t2},
        {"type": "tool-input-start", "toolCallId": "cb", "toolName": "get_weather"},
        {
            "type": "tool-input-available",
            "toolCallId": "cb",
            "toolName": "get_weather",
            "input": {"city": "Oslo"},
        },
        {"type": "tool-output-available", "toolCallId": "cb", "output": {"forecast": "snow"}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_an_agent_cut_short_does_not_hold_back_what_the_others_said() -> None:
    events = [
        model_event("ea", text("AAAA"), partial=True),
        model_event("eb", text("BBBB"), partial=True).model_copy(update={"author": "b"}),
    ]
    texts = [c["delta"] for c in run(events) if c["type"] == "text-delta"]
    assert texts == ["AAAA", "BBBB"]  # the run ended without a's final event
