"""ScriptedLlm must stream exactly like Gemini behind ADK, or the bridge is tested against a
fiction: delta-only partials, one aggregated final, stable call ids, usage on the final."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest
from google.adk.agents import LlmAgent, RunConfig
from google.adk.agents.run_config import StreamingMode  # type: ignore[attr-defined]
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import ValidationError

from adk_asgi.testing import (
    Call,
    Code,
    CodeResult,
    Fail,
    Image,
    ScriptedLlm,
    ScriptedModelError,
    ScriptExhaustedError,
    Text,
    Thought,
    Turn,
    turn_to_responses,
)

SSE = RunConfig(streaming_mode=StreamingMode.SSE)
USER = "user-1"


def counter_ids() -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"call_{next(numbers)}"


def partial(*parts: types.Part) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=list(parts)), partial=True)


def final(*parts: types.Part, prompt: int = 0, candidates: int, thoughts: int = 0) -> LlmResponse:
    return LlmResponse(
        content=types.Content(role="model", parts=list(parts)) if parts else None,
        partial=False,
        finish_reason=types.FinishReason.STOP,
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt,
            candidates_token_count=candidates,
            thoughts_token_count=thoughts or None,
            total_token_count=prompt + candidates + thoughts,
        ),
        model_version="scripted",
    )


def text(value: str) -> types.Part:
    return types.Part.from_text(text=value)


def thought(value: str) -> types.Part:
    return types.Part(text=value, thought=True)


def call(name: str, args: dict[str, Any], call_id: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))


def render(turn: Turn, *, stream: bool, chunk_size: int = 4) -> list[LlmResponse]:
    return list(
        turn_to_responses(turn, stream=stream, chunk_size=chunk_size, id_factory=counter_ids())
    )


# --- the segment -> LlmResponse rendering ---------------------------------------------------


def test_stream_text_is_split_into_delta_partials_then_one_aggregate() -> None:
    assert render([Text("Hello world")], stream=True) == [
        partial(text("Hell")),
        partial(text("o wo")),
        partial(text("rld")),
        final(text("Hello world"), candidates=3),
    ]


def test_stream_thought_text_and_calls_keep_order_and_merge_same_kind_text() -> None:
    turn: Turn = [
        Thought("Let me"),
        Thought(" think"),
        Text("Sure. "),
        Text("Calling."),
        Call("get_weather", {"city": "Paris"}),
        Call("get_weather", {"city": "Oslo"}, id="mine"),
    ]
    assert render(turn, stream=True, chunk_size=8) == [
        partial(thought("Let me")),
        partial(thought(" think")),
        partial(text("Sure. ")),
        partial(text("Calling.")),
        partial(call("get_weather", {"city": "Paris"}, "call_1")),
        partial(call("get_weather", {"city": "Oslo"}, "mine")),
        final(
            thought("Let me think"),
            text("Sure. Calling."),
            call("get_weather", {"city": "Paris"}, "call_1"),
            call("get_weather", {"city": "Oslo"}, "mine"),
            candidates=4 + 16,
            thoughts=3,
        ),
    ]


def test_text_on_both_sides_of_a_call_stays_two_parts_like_the_adk_aggregator() -> None:
    responses = render([Text("a"), Call("f", {}), Text("b"), Text("c")], stream=False)
    assert responses == [final(text("a"), call("f", {}, "call_1"), text("bc"), candidates=9)]


def test_non_stream_yields_only_the_aggregate_identical_to_the_stream_final() -> None:
    turn: Turn = [Thought("hmm"), Text("Checking the weather."), Call("get_weather", {"city": "X"})]
    non_stream = render(turn, stream=False)
    assert non_stream == [
        final(
            thought("hmm"),
            text("Checking the weather."),
            call("get_weather", {"city": "X"}, "call_1"),
            candidates=6 + 8,
            thoughts=1,
        )
    ]
    assert render(turn, stream=True)[-1] == non_stream[0]


def test_code_execution_streams_each_part_in_a_chunk_of_its_own_as_gemini_does() -> None:
    ran = types.ExecutableCode(code="print(1)", language=types.Language.PYTHON)
    printed = types.CodeExecutionResult(outcome=types.Outcome.OUTCOME_FAILED, output="boom")
    parts = [
        types.Part(executable_code=ran),
        types.Part(code_execution_result=printed),
        types.Part(inline_data=types.Blob(data=b"png", mime_type="image/png")),
    ]
    turn: Turn = [
        Text("Run: "),
        Code("print(1)"),
        CodeResult("boom", outcome="OUTCOME_FAILED"),
        Image(b"png"),
        Text("Done."),
    ]
    assert render(turn, stream=True, chunk_size=8) == [
        partial(text("Run: ")),
        *(partial(part) for part in parts),
        partial(text("Done.")),
        final(text("Run: "), *parts, text("Done."), candidates=3),
    ]


def test_partial_and_final_call_share_the_generated_id() -> None:
    responses = render([Call("f", {"x": 1}), Call("g")], stream=True)
    partial_ids = [r.get_function_calls()[0].id for r in responses[:-1]]
    final_ids = [fc.id for fc in responses[-1].get_function_calls()]
    assert partial_ids == final_ids == ["call_1", "call_2"]


def test_a_call_with_streamed_arguments_streams_as_adks_anthropic_model_does() -> None:
    """An opening piece, then the ``partial_args`` ADK's own tracker makes of each
    ``chunk_size`` characters of the arguments' JSON text, every piece ``will_continue``; the
    final response has the whole call, as always."""

    def piece(*args: types.PartialArg) -> LlmResponse:
        function_call = types.FunctionCall(
            id="call_1", name="f", partial_args=list(args) or None, will_continue=True
        )
        return partial(types.Part(function_call=function_call))

    streamed = Call(
        "f", {"city": "Oslo", "days": 2}, stream_args=True, json_text='{"city":"Oslo","days":2}'
    )
    assert render([streamed], stream=True, chunk_size=10) == [
        piece(),
        piece(types.PartialArg(json_path="$.city", string_value="O", will_continue=True)),
        piece(),  # ('slo","days': the tracker waits for the key to end)
        piece(
            types.PartialArg(json_path="$.city", string_value="slo", will_continue=False),
            types.PartialArg(json_path="$.days", number_value=2, will_continue=False),
        ),
        final(call("f", {"city": "Oslo", "days": 2}, "call_1"), candidates=8),
    ]
    assert render([streamed], stream=False) == [
        final(call("f", {"city": "Oslo", "days": 2}, "call_1"), candidates=8)
    ]


def test_default_ids_are_unique_and_not_adk_prefixed() -> None:
    responses = list(turn_to_responses([Call("f"), Call("f")], stream=False))
    ids = [fc.id for fc in responses[0].get_function_calls()]
    assert len(set(ids)) == 2
    assert all(i is not None and i.startswith("call_") and len(i) == 21 for i in ids)


def test_fail_raises_after_the_preceding_partials_were_yielded() -> None:
    produced: list[LlmResponse] = []
    with pytest.raises(ScriptedModelError, match=r"^backend broke$"):
        for response in turn_to_responses(
            [Text("Hello there"), Fail("backend broke"), Text("never")], stream=True, chunk_size=6
        ):
            produced.append(response)
    assert produced == [partial(text("Hello ")), partial(text("there"))]


def test_fail_in_non_stream_mode_yields_nothing() -> None:
    produced: list[LlmResponse] = []
    with pytest.raises(ScriptedModelError, match=r"^scripted model failure$"):
        produced.extend(turn_to_responses([Text("Hello"), Fail()], stream=False))
    assert produced == []


def test_empty_text_is_dropped_and_an_empty_turn_has_no_content() -> None:
    assert render([Text(""), Thought("")], stream=True) == [final(candidates=0)]


def test_whitespace_turn_is_returned_as_is_for_adk_to_reject() -> None:
    assert render([Text("   ")], stream=True) == [
        partial(text("   ")),
        final(text("   "), candidates=1),
    ]


def test_chunk_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^chunk_size must be >= 1$"):
        render([Text("x")], stream=True, chunk_size=0)
    with pytest.raises(ValidationError):
        ScriptedLlm(turns=[], chunk_size=0)


# --- the model object -----------------------------------------------------------------------


def request(user_text: str) -> LlmRequest:
    return LlmRequest(contents=[types.Content(role="user", parts=[types.Part(text=user_text)])])


async def collect(llm: ScriptedLlm, req: LlmRequest, stream: bool = True) -> list[LlmResponse]:
    return [r async for r in llm.generate_content_async(req, stream=stream)]


async def test_turns_are_consumed_one_per_call_and_requests_are_recorded() -> None:
    llm = ScriptedLlm(turns=[[Text("one")], [Text("two")]], id_factory=counter_ids())
    first, second = request("hello world!"), request("again")
    assert await collect(llm, first) == [
        partial(text("one")),
        final(text("one"), prompt=3, candidates=1),
    ]
    assert await collect(llm, second, stream=False) == [final(text("two"), prompt=2, candidates=1)]
    assert llm.requests == [first, second]
    with pytest.raises(
        ScriptExhaustedError,
        match=r"^ScriptedLlm has no turn left for model call #3: only 2 turn\(s\) were scripted$",
    ):
        await collect(llm, request("more"))


async def test_responder_sees_the_request_contents() -> None:
    seen: list[list[types.Content]] = []

    def responder(contents: list[types.Content]) -> Turn:
        seen.append(contents)
        return [Text(f"{len(contents)} content(s)")]

    llm = ScriptedLlm(responder=responder, chunk_size=100)
    req = request("hi")
    assert await collect(llm, req) == [
        partial(text("1 content(s)")),
        final(text("1 content(s)"), prompt=1, candidates=3),
    ]
    assert seen == [req.contents]


def test_exactly_one_script_source_is_required() -> None:
    with pytest.raises(
        ValueError, match=r"^ScriptedLlm needs exactly one of turns= or responder=$"
    ):
        ScriptedLlm()
    with pytest.raises(
        ValueError, match=r"^ScriptedLlm needs exactly one of turns= or responder=$"
    ):
        ScriptedLlm(turns=[], responder=lambda contents: [])


def test_name_is_not_gemini_like_so_capabilities_do_not_warn() -> None:
    llm = ScriptedLlm(turns=[])
    assert llm.model == "scripted"
    assert llm.capabilities.output_schema_and_tools is False  # would warn for a Gemini name


async def test_one_instance_serves_concurrent_calls_with_local_state() -> None:
    order: list[str] = []

    def responder(contents: list[types.Content]) -> Turn:
        user_text = contents[-1].parts[0].text if contents[-1].parts else ""
        return [Text(f"{user_text}-{user_text}-{user_text}"), Call("f", {"who": user_text})]

    llm = ScriptedLlm(responder=responder, chunk_size=2, id_factory=counter_ids())

    async def run(name: str) -> list[LlmResponse]:
        out: list[LlmResponse] = []
        async for response in llm.generate_content_async(request(name), stream=True):
            order.append(name)
            out.append(response)
        return out

    a, b = await asyncio.gather(run("aa"), run("bb"))
    assert order[:4] == ["aa", "bb", "aa", "bb"]  # interleaved: the model yields to the loop
    assert a[-1].content is not None and b[-1].content is not None
    assert a[-1].content.parts == [text("aa-aa-aa"), call("f", {"who": "aa"}, "call_1")]
    assert b[-1].content.parts == [text("bb-bb-bb"), call("f", {"who": "bb"}, "call_2")]
    assert [r.get_function_calls()[0].id for r in a[:-1] if r.get_function_calls()] == ["call_1"]
    assert len(llm.requests) == 2


async def test_delay_paces_every_response() -> None:
    llm = ScriptedLlm(turns=[[Text("abcdef")]], chunk_size=2, delay=0.02)
    started = time.monotonic()
    responses = await collect(llm, request("x"))
    assert len(responses) == 4
    assert time.monotonic() - started >= 0.08


# --- behind the real ADK Runner --------------------------------------------------------------


async def run_agent(
    llm: ScriptedLlm, user_text: str, run_config: RunConfig = SSE
) -> tuple[list[Event], BaseException | None]:
    runner = InMemoryRunner(agent=LlmAgent(name="assistant", model=llm), app_name="app")
    session = await runner.session_service.create_session(app_name="app", user_id=USER)
    message = types.Content(role="user", parts=[types.Part(text=user_text)])
    events: list[Event] = []
    try:
        async for event in runner.run_async(
            user_id=USER, session_id=session.id, new_message=message, run_config=run_config
        ):
            events.append(event)
    except Exception as exc:  # ADK re-raises model errors after yielding an error event
        return events, exc
    return events, None


def shape(events: list[Event]) -> list[tuple[Any, ...]]:
    """Event id index, partial flag, parts, error — ids replaced by first-seen order."""
    ids: dict[str, int] = {}
    out: list[tuple[Any, ...]] = []
    for event in events:
        parts = event.content.parts if event.content and event.content.parts else []
        rendered = [
            ("thought" if p.thought else "text", p.text)
            if p.text is not None
            else ("call", p.function_call.name, p.function_call.id)
            if p.function_call
            else ("other",)
            for p in parts
        ]
        out.append((ids.setdefault(event.id, len(ids)), bool(event.partial), rendered))
        if event.error_code:
            out.append(("error", event.error_code, event.error_message))
    return out


async def test_runner_streams_partials_and_a_final_event_with_the_same_id() -> None:
    llm = ScriptedLlm(
        turns=[[Thought("hm"), Text("Hello there!")]], chunk_size=5, id_factory=counter_ids()
    )
    events, error = await run_agent(llm, "hi")
    assert error is None
    assert shape(events) == [
        (0, True, [("thought", "hm")]),
        (0, True, [("text", "Hello")]),
        (0, True, [("text", " ther")]),
        (0, True, [("text", "e!")]),
        (0, False, [("thought", "hm"), ("text", "Hello there!")]),
    ]
    last = events[-1]
    assert last.finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None
    assert last.usage_metadata.total_token_count == 1 + 3 + 1
    assert last.is_final_response()


async def test_runner_keeps_model_call_ids_on_partial_and_final_events() -> None:
    llm = ScriptedLlm(turns=[[Text("Calling."), Call("missing_tool", {})], [Text("ok")]])
    events, error = await run_agent(llm, "hi")
    assert error is None
    calls = [(e.partial, fc.id) for e in events for fc in e.get_function_calls()]
    assert len(calls) == 2
    assert calls[0][0] is True and calls[1][0] is False
    assert calls[0][1] == calls[1][1]
    assert str(calls[0][1]).startswith("call_")


async def test_runner_turns_a_whitespace_answer_into_model_returned_no_content() -> None:
    events, error = await run_agent(ScriptedLlm(turns=[[Text("  ")]]), "hi")
    assert error is None
    assert shape(events) == [
        (0, True, [("text", "  ")]),
        (0, False, [("text", "  ")]),
        (
            "error",
            "MODEL_RETURNED_NO_CONTENT",
            "The model returned no actionable content (finish_reason=STOP with thought-only"
            " or whitespace-only parts).",
        ),
    ]


async def test_runner_reports_a_mid_stream_failure_then_raises() -> None:
    llm = ScriptedLlm(turns=[[Text("Hello "), Fail("stream broke")]], chunk_size=10)
    events, error = await run_agent(llm, "hi")
    assert isinstance(error, ScriptedModelError)
    assert str(error) == "stream broke"
    assert shape(events) == [
        (0, True, [("text", "Hello ")]),
        (1, False, []),
        ("error", "ScriptedModelError", "stream broke"),
    ]


async def test_runner_reports_running_out_of_turns() -> None:
    llm = ScriptedLlm(turns=[[Call("missing_tool")]])  # the tool error makes ADK call again
    events, error = await run_agent(llm, "hi", RunConfig(streaming_mode=StreamingMode.NONE))
    assert isinstance(error, ScriptExhaustedError)
    assert events[-1].error_code == "ScriptExhaustedError"
    assert events[-1].error_message == (
        "ScriptedLlm has no turn left for model call #2: only 1 turn(s) were scripted"
    )
