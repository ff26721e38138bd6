"""Gemini's code execution through the converter alone (convert/code_execution.py): the events
ADK's ``BuiltInCodeExecutor`` makes in, the chunks the AI SDK's Google provider sends out.

The SSE shape is ADK's: one partial event per chunk Gemini streams (the progressive
aggregator), then the executor's content-less event (the images it saved in
``artifact_delta``), then the final event, under a new id, with every part again and ADK's
words in place of the image. History replays the stored events only (no partial): it must
show the same message."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adk_asgi.convert.history import rebuild_messages
from adk_asgi.convert.ui_message import read_ui_message
from adk_asgi.hitl.continuation import Conflict, continuation
from adk_asgi.hitl.pending import chat_state
from adk_asgi.hitl.policy import ToolPolicy
from tests.unit.test_continuation import assistant, bgm, call_event, tool
from tests.unit.test_convert import MID, model_event, run, text

T1, T2 = f"{MID}-txt1", f"{MID}-txt2"
CHAT = "/api/chat/c1"
"""The chat's path, as the transport names it (``files_at``)."""
STOP = types.FinishReason.STOP
RAN = {"toolName": "code_execution", "providerExecuted": True}


def code(source: str, code_id: str | None = None) -> types.Part:
    language = types.Language.PYTHON
    return types.Part(
        executable_code=types.ExecutableCode(code=source, language=language, id=code_id)
    )


def result(output: str | None, result_id: str | None = None) -> types.Part:
    outcome = types.Outcome.OUTCOME_OK
    ran = types.CodeExecutionResult(outcome=outcome, output=output, id=result_id)
    return types.Part(code_execution_result=ran)


def image(data: bytes = b"\x89PNG") -> types.Part:
    return types.Part(inline_data=types.Blob(data=data, mime_type="image/png"))


def saved_words(name: str) -> types.Part:
    """What ADK's executor writes over an image part it saved."""
    return types.Part(text=f"Saved as artifact: {name}. ")


def executor_event(event_id: str, saved: dict[str, int] | None = None) -> Event:
    """The content-less event ADK's executor yields before each final model event."""
    actions = EventActions(artifact_delta=saved or {})
    return Event(id=event_id, invocation_id="inv", author="agent", actions=actions)


def stored(events: list[Event]) -> list[Event]:
    """What the session keeps of a stream: its complete events."""
    return [e for e in events if not e.partial]


CHART = [
    model_event("p", text("Let me "), partial=True),
    model_event("p", text("count. "), partial=True),
    model_event("p", code("print(2 + 2)"), partial=True),
    model_event("p", result("4\n"), partial=True),
    model_event("p", image(), partial=True),
    model_event("p", text("It is 4."), partial=True),
    executor_event("x", {"chart.png": 0}),
    model_event(
        "f",
        text("Let me count. "),
        code("print(2 + 2)"),
        result("4\n"),
        saved_words("chart.png"),
        text("It is 4."),
        finish_reason=STOP,
    ),
]
"""One model call that counts, prints and draws, as ``run_async`` yields it over SSE."""


def code_card(call_id: str, source: str, output: str) -> list[dict[str, Any]]:
    return [
        {"type": "tool-input-start", "toolCallId": call_id, **RAN},
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": "code_execution",
            "input": {"language": "PYTHON", "code": source},
            "providerExecuted": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": call_id,
            "output": {"outcome": "OUTCOME_OK", "output": output},
            "providerExecuted": True,
        },
    ]


CHART_FILE = {
    "type": "file",
    "url": f"{CHAT}/files/chart.png?version=0",
    "mediaType": "image/png",
}


def test_code_its_output_and_its_chart_stream_once_as_the_google_provider_shows_them() -> None:
    assert run(CHART, files_at=CHAT) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Let me "},
        {"type": "text-delta", "id": T1, "delta": "count. "},
        {"type": "text-end", "id": T1},
        *code_card(f"{MID}-code1", "print(2 + 2)", "4\n"),
        {"type": "text-start", "id": T2},
        {"type": "text-delta", "id": T2, "delta": "It is 4."},
        {"type": "text-end", "id": T2},
        CHART_FILE,
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_history_shows_what_the_stream_showed() -> None:
    replayed = run(stored(CHART), files_at=CHAT)
    assert replayed == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "text-start", "id": T1},
        {"type": "text-delta", "id": T1, "delta": "Let me count. "},
        {"type": "text-end", "id": T1},
        *code_card(f"{MID}-code1", "print(2 + 2)", "4\n"),
        {"type": "text-start", "id": T2},
        {"type": "text-delta", "id": T2, "delta": "It is 4."},
        {"type": "text-end", "id": T2},
        CHART_FILE,
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    streamed = run(CHART, files_at=CHAT)
    assert read_ui_message(replayed) == read_ui_message(streamed)


def test_a_final_event_under_the_id_the_executor_made_new_does_not_repeat_the_answer() -> None:
    """ADK mints an id after every complete event: the executor's gives the final event an id
    of its own, and its text was streamed a second time, in a second step."""
    events = [
        model_event("p", text("Hel"), partial=True),
        model_event("p", text("lo!"), partial=True),
        executor_event("x"),
        model_event("f", text("Hello!"), finish_reason=STOP),
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


def test_without_the_chats_path_the_image_keeps_adks_words_in_its_place() -> None:
    """A converter that does not know where the chat's files are served (a back office's
    answer) shows what ADK wrote, once, where the image would be."""
    words = "Saved as artifact: chart.png. "
    streamed, replayed = run(CHART), run(stored(CHART))
    assert streamed[-5:] == [
        {"type": "text-start", "id": f"{MID}-txt3"},
        {"type": "text-delta", "id": f"{MID}-txt3", "delta": words},
        {"type": "text-end", "id": f"{MID}-txt3"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert read_ui_message(streamed) == read_ui_message(replayed)
    assert [p.get("text") for p in read_ui_message(streamed)["parts"]] == [
        None,
        "Let me count. ",
        None,
        "It is 4.",
        words,
    ]


def test_a_partial_read_after_the_executor_rewrote_its_image_shows_nothing_of_it() -> None:
    """ADK's aggregator keeps the partial's own part for the final response, which the executor
    rewrites: a partial event read late carries ADK's words, not the image."""
    late = [
        model_event("p", saved_words("chart.png"), partial=True) if i == 4 else e
        for i, e in enumerate(CHART)
    ]
    assert run(late, files_at=CHAT) == run(CHART, files_at=CHAT)


def test_history_reads_the_images_of_the_executor_event_a_live_connection_left_untagged() -> None:
    """A live connection tags the events of a response with its message, but not the
    executor's content-less event: its images are those the next model event names."""
    tags = {"adk_asgi": {"messageId": MID, "userMessageId": "u1"}}
    asked = types.Content(role="user", parts=[text("draw")])
    drawn = types.Content(role="model", parts=[saved_words("one.png")])
    events = [
        Event(invocation_id="inv", author="user", custom_metadata=tags, content=asked),
        executor_event("x", {"one.png": 0}),
        Event(invocation_id="inv", author="agent", custom_metadata=tags, content=drawn),
    ]
    [_, answer] = msgspec.to_builtins(rebuild_messages(events, ToolPolicy([]), files_at=CHAT))
    assert answer["parts"] == [
        {"type": "step-start"},
        {"type": "file", "mediaType": "image/png", "url": f"{CHAT}/files/one.png?version=0"},
    ]


def test_each_live_message_of_a_code_run_shows_as_it_comes() -> None:
    """Gemini Live sends the code, its result and the image in messages of their own, each a
    complete event (the executor's event before each)."""
    events = [
        executor_event("x1"),
        model_event("a", code("print(1)")),
        executor_event("x2"),
        model_event("b", result("1\n")),
        executor_event("x3", {"one.png": 2}),
        model_event("c", saved_words("one.png")),
    ]
    assert run(events, live=True, files_at=CHAT) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        *code_card(f"{MID}-code1", "print(1)", "1\n"),
        {"type": "file", "url": f"{CHAT}/files/one.png?version=2", "mediaType": "image/png"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_two_images_saved_under_one_name_are_its_two_versions() -> None:
    """ADK names an image by the second it saves it: ``artifact_delta`` holds the last
    version, and the words before name the versions before."""
    events = [
        executor_event("x", {"t.png": 1}),
        model_event("f", saved_words("t.png"), saved_words("t.png")),
    ]
    assert run(events, files_at=CHAT) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "file", "url": f"{CHAT}/files/t.png?version=0", "mediaType": "image/png"},
        {"type": "file", "url": f"{CHAT}/files/t.png?version=1", "mediaType": "image/png"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_gemini_ids_pair_code_and_result_and_new_ids_skip_those_the_message_holds() -> None:
    events = [
        model_event("a", code("print(1)", "gem-1"), code("print(2)"), result("1\n", "gem-1")),
    ]
    chunks = run(events, known_calls={f"{MID}-code1"})
    assert chunks[2:-2] == [
        *code_card("gem-1", "print(1)", "1\n")[:2],
        *code_card(f"{MID}-code2", "print(2)", "")[:2],
        code_card("gem-1", "print(1)", "1\n")[2],
    ]


@pytest.mark.parametrize(
    "parts",
    [
        pytest.param([result("4\n")], id="a result with no code before it"),
        pytest.param([code("")], id="empty code"),
    ],
)
def test_what_the_provider_drops_is_not_shown(parts: list[types.Part]) -> None:
    assert run([model_event("a", *parts)]) == [
        {"type": "start", "messageId": MID},
        {"type": "start-step"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_a_result_without_output_shows_an_empty_one() -> None:
    chunks = run([model_event("a", code("pass"), result(None))])
    assert chunks[4]["output"] == {"outcome": "OUTCOME_OK", "output": ""}


def test_words_like_adks_for_a_file_nobody_saved_are_text() -> None:
    chunks = run([model_event("a", saved_words("chart.png"))], files_at=CHAT)
    assert chunks[3] == {"type": "text-delta", "id": T1, "delta": "Saved as artifact: chart.png. "}


def test_a_continuation_re_sends_code_cards_as_history_and_their_ids_stay_taken() -> None:
    """A message the page continues holds the cards of the code Gemini ran: no call of the
    chat, but no forged answer either."""
    card = tool(
        "code_execution",
        f"{MID}-code1",
        "output-available",
        input={"language": "PYTHON", "code": "print(1)"},
        output={"outcome": "OUTCOME_OK", "output": "1\n"},
        provider_executed=True,
    )
    answer = tool("bgm", "b1", "output-available", output={"playing": True})
    state = chat_state([call_event(("b1", "bgm", {}), long_running={"b1"})], ToolPolicy([bgm]))
    answered = continuation(assistant(card, answer), state)
    assert answered.known_calls == {f"{MID}-code1", "b1"}
    forged = tool("code_execution", "x9", "output-available", output={})
    with pytest.raises(Conflict, match="tool call 'x9' is not part of this chat"):
        continuation(assistant(forged, answer), state)
