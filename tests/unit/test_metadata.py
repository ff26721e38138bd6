"""Message metadata, sans-I/O (adk_asgi/convert/metadata.py): the hook's moments as the
converter streams them, and as history rebuilds them from the same stored events."""

from __future__ import annotations

from typing import Any

import msgspec
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.genai import types

from adk_asgi import MessageMoment
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.history import rebuild_messages
from adk_asgi.convert.metadata import agent_model, merged
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.testing import ScriptedLlm
from tests.unit.test_convert import call, model_event, text, wire

STARTED = 1_795_000_000.5


def every_fact(moment: MessageMoment) -> dict[str, Any]:
    return {moment.kind: msgspec.to_builtins(moment)}


def usage(prompt: int, answer: int) -> types.GenerateContentResponseUsageMetadata:
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt,
        candidates_token_count=answer,
        total_token_count=prompt + answer,
    )


def tagged(event: Event, started_at: float = STARTED) -> Event:
    return bookkeeping.tagged(event, message_id="m1", started_at=started_at)


FIRST = model_event(
    "e1", call("c1", "get_weather", city="Paris"), usage_metadata=usage(10, 2), model_version="v1"
)
RESULT = Event(
    id="e2",
    invocation_id="inv",
    author="agent",
    content=types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id="c1", name="get_weather", response={"sky": "clear"}
                )
            )
        ],
    ),
)
ANSWER = model_event(
    "e3",
    text("Clear."),
    usage_metadata=usage(20, 3),
    model_version="v2",
    finish_reason=types.FinishReason.MAX_TOKENS,
)
START = {"kind": "start", "message_id": "m1", "started_at": STARTED, "model": None}
START |= {"finish_reason": None, "author": None, "model_version": None, "usage": {}}
FINISH = START | {"kind": "finish", "finish_reason": "length"}
FINISH |= {"author": "agent", "model_version": "v2"}
FINISH["usage"] = {"inputTokens": 30, "outputTokens": 5, "totalTokens": 35}
FIRST_STEP = FINISH | {"kind": "finish-step", "finish_reason": "tool-calls", "model_version": "v1"}
FIRST_STEP["usage"] = {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}
ANSWER_STEP = FINISH | {"kind": "finish-step"}
ANSWER_STEP["usage"] = {"inputTokens": 20, "outputTokens": 3, "totalTokens": 23}


def test_start_each_step_and_finish_carry_what_adk_said_of_them() -> None:
    """As the AI SDK's ``messageMetadata`` is called for ``start``, each ``finish-step`` and
    ``finish``: a step's metadata goes out in a ``message-metadata`` chunk just before its
    ``finish-step`` (ai@7's ``toUIMessageStream`` order), with the step's own usage, model
    version and finish reason (``tool-calls`` for a step that called tools)."""
    converter = EventConverter(message_id="m1", message_metadata=every_fact, started_at=STARTED)
    chunks = converter.start()
    for event in (FIRST, RESULT, ANSWER):
        chunks += converter.feed(event)
    chunks += converter.finish()
    assert wire(chunks) == [
        {"type": "start", "messageId": "m1", "messageMetadata": {"start": START}},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "get_weather"},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
        },
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"sky": "clear"}},
        {"type": "message-metadata", "messageMetadata": {"finish-step": FIRST_STEP}},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "m1-txt1"},
        {"type": "text-delta", "id": "m1-txt1", "delta": "Clear."},
        {"type": "text-end", "id": "m1-txt1"},
        {"type": "message-metadata", "messageMetadata": {"finish-step": ANSWER_STEP}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "length", "messageMetadata": {"finish": FINISH}},
    ]


def test_every_moment_names_the_model_the_agent_is_configured_with() -> None:
    """The start moment gives the model before it answers (the AI SDK's example sends
    ``model`` at ``start``): the app's agent's, :func:`agent_model`."""
    seen: list[tuple[str, str | None]] = []

    def hook(moment: MessageMoment) -> None:
        seen.append((moment.kind, moment.model))

    converter = EventConverter(message_id="m1", message_metadata=hook, model="gemini-2.5-flash")
    converter.start()
    converter.feed(ANSWER)
    converter.finish()
    assert seen == [
        ("start", "gemini-2.5-flash"),
        ("finish-step", "gemini-2.5-flash"),
        ("finish", "gemini-2.5-flash"),
    ]


def test_the_model_of_an_agent() -> None:
    assert agent_model(LlmAgent(name="a", model="gemini-2.5-flash")) == "gemini-2.5-flash"
    assert agent_model(LlmAgent(name="a", model=ScriptedLlm(turns=[]))) == "scripted"
    assert agent_model(LlmAgent(name="a")) is None  # (it inherits its parent's)
    assert agent_model(object()) is None


def test_send_usage_and_the_hook_are_merged_on_finish() -> None:
    converter = EventConverter(
        message_id="m1", message_metadata=every_fact, started_at=STARTED, send_usage=True
    )
    converter.feed(ANSWER)
    finish = wire(converter.finish())[-1]
    counts = {"inputTokens": 20, "outputTokens": 3, "totalTokens": 23}
    assert finish["messageMetadata"] == {
        "usage": counts,
        "finish": FINISH | {"model_version": "v2", "usage": counts},
    }


def test_usage_counts_reasoning_in_the_output_and_the_cached_input_as_the_ai_sdk_does() -> None:
    """Gemini counts thoughts apart from the answer and says how much of the prompt came from
    its cache; the AI SDK's Google provider reports the output with its reasoning, and the
    cached input (``cachedContentTokenCount`` was dropped, reasoning left out of the output)."""
    converter = EventConverter(message_id="m1", send_usage=True)
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=120,
        cached_content_token_count=100,
        candidates_token_count=7,
        thoughts_token_count=30,
        total_token_count=157,
    )
    converter.feed(Event(author="agent", usage_metadata=usage))
    assert wire(converter.finish())[-1]["messageMetadata"] == {
        "usage": {
            "inputTokens": 120,
            "cachedInputTokens": 100,
            "outputTokens": 37,
            "reasoningTokens": 30,
            "totalTokens": 157,
        }
    }


def test_a_failure_sends_the_finish_moment_before_the_error_the_client_stops_at() -> None:
    converter = EventConverter(
        message_id="m1", message_metadata=lambda m: {"reason": m.finish_reason}, started_at=None
    )
    converter.start()
    chunks = wire(converter.fail("boom"))
    assert chunks == [
        {"type": "data-error", "id": "m1-error", "data": {"errorText": "boom"}},
        {"type": "message-metadata", "messageMetadata": {"reason": "error"}},
        {"type": "error", "errorText": "boom"},
    ]


def test_no_hook_sends_no_metadata() -> None:
    converter = EventConverter(message_id="m1", started_at=STARTED)
    chunks = wire(converter.start() + converter.feed(ANSWER) + converter.finish())
    assert (chunks[0], chunks[-1]) == (
        {"type": "start", "messageId": "m1"},
        {"type": "finish", "finishReason": "length"},
    )
    assert [c for c in chunks if "messageMetadata" in c] == []


def metadata_of_history(events: list[Event]) -> dict[str, Any]:
    """Each message's metadata in the history of ``events``, by message id."""
    messages = rebuild_messages(events, ToolPolicy(), metadata=every_fact)
    return {m.id: m.metadata for m in messages}


def test_history_rebuilds_the_moments_of_each_response_and_merges_them_in_order() -> None:
    """A message continued after a call waited: two responses, merged as the client merges."""
    later = STARTED + 60
    waiting = [tagged(FIRST)]  # the call waits: no result in this response
    going_on = [tagged(RESULT, later), tagged(ANSWER, later)]
    shown = metadata_of_history([*waiting, *going_on])
    first_finish = FIRST_STEP | {"kind": "finish"}
    second_finish = FINISH | {"started_at": later}
    second_finish["usage"] = {"inputTokens": 20, "outputTokens": 3, "totalTokens": 23}
    assert shown == {
        "m1": {
            "start": START | {"started_at": later},
            "finish-step": ANSWER_STEP | {"started_at": later},
            "finish": second_finish,
        }
    }
    assert metadata_of_history(waiting) == {
        "m1": {"start": START, "finish-step": FIRST_STEP, "finish": first_finish}
    }


def test_metadata_merges_as_the_ai_sdk_client_merges_it() -> None:
    current = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    assert merged(current, {"a": {"y": [3]}, "c": None}) == {
        "a": {"x": 1, "y": [3]},
        "b": 1,
        "c": None,
    }
    assert merged(None, {"a": 1}) == {"a": 1}
    assert merged(current, None) is current


def test_a_live_answer_has_no_finish_step_moment() -> None:
    """Gemini Live sends a step's usage apart from its content, stored in another order than
    it streamed: a step's moment would differ between the stream and history."""
    kinds: list[str] = []

    def hook(moment: MessageMoment) -> None:
        kinds.append(moment.kind)

    live = EventConverter(message_id="m1", message_metadata=hook, live=True)
    live.start()
    live.feed(ANSWER)
    live.finish()
    assert kinds == ["start", "finish"]
    kinds.clear()
    metadata_of = rebuild_messages([tagged(ANSWER)], ToolPolicy(), metadata=hook)
    stored_live = bookkeeping.tagged(ANSWER, message_id="m1", started_at=STARTED, live_step="0")
    assert metadata_of and kinds == ["start", "finish-step", "finish"]
    kinds.clear()
    rebuild_messages([stored_live], ToolPolicy(), metadata=hook)
    assert kinds == ["start", "finish"]
