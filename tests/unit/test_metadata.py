"""Message metadata, sans-I/O (adk_asgi/convert/metadata.py): the hook's moments as the
converter streams them, and as history rebuilds them from the same stored events."""

from __future__ import annotations

from typing import Any

import msgspec
from google.adk.events.event import Event
from google.genai import types

from adk_asgi import MessageMoment
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.history import rebuild_messages
from adk_asgi.convert.metadata import merged
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.policy import ToolPolicy
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
START = {"kind": "start", "message_id": "m1", "started_at": STARTED, "finish_reason": None}
START |= {"author": None, "model_version": None, "usage": {}}
FINISH = {"kind": "finish", "message_id": "m1", "started_at": STARTED, "finish_reason": "length"}
FINISH |= {"author": "agent", "model_version": "v2"}
FINISH["usage"] = {"inputTokens": 30, "outputTokens": 5, "totalTokens": 35}


def test_start_and_finish_carry_what_adk_said_of_the_response() -> None:
    converter = EventConverter(message_id="m1", message_metadata=every_fact, started_at=STARTED)
    chunks = converter.start()
    for event in (FIRST, RESULT, ANSWER):
        chunks += converter.feed(event)
    chunks += converter.finish()
    shown = wire(chunks)
    assert shown[0] == {"type": "start", "messageId": "m1", "messageMetadata": {"start": START}}
    assert shown[-1] == {
        "type": "finish",
        "finishReason": "length",
        "messageMetadata": {"finish": FINISH},
    }
    assert [c for c in shown[1:-1] if "messageMetadata" in c] == []


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
    first_finish = FINISH | {"model_version": "v1", "finish_reason": "tool-calls"}
    first_finish["usage"] = {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}
    second_finish = FINISH | {"started_at": later}
    second_finish["usage"] = {"inputTokens": 20, "outputTokens": 3, "totalTokens": 23}
    assert shown == {"m1": {"start": START | {"started_at": later}, "finish": second_finish}}
    assert metadata_of_history(waiting) == {"m1": {"start": START, "finish": first_finish}}


def test_metadata_merges_as_the_ai_sdk_client_merges_it() -> None:
    current = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    assert merged(current, {"a": {"y": [3]}, "c": None}) == {
        "a": {"x": 1, "y": [3]},
        "b": 1,
        "c": None,
    }
    assert merged(None, {"a": 1}) == {"a": 1}
    assert merged(current, None) is current
