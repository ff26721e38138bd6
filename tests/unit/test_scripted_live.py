"""ScriptedLlm's live connection behind the REAL ``Runner.run_live``: it must yield what Gemini
Live yields, in ``GeminiLlmConnection.receive()``'s order (delta partials, usage before the
turn's last full text or its calls, ``turn_complete``, transcriptions, audio), answer what ADK
sends it (text, function responses, audio + activity signals), and end when the queue closes."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from google.adk.agents import LlmAgent, RunConfig
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from adk_asgi.testing import (
    OUTPUT_AUDIO_MIME_TYPE,
    Call,
    Fail,
    ScriptedLiveConnection,
    ScriptedLlm,
    ScriptedModelError,
    Text,
    Thought,
    Turn,
    demo_model,
    transcribe_utf8,
)
from adk_asgi.testing.demo_grammar import closing_sentence, intermediate_sentence
from tests.support import on_virtual_clock

USER = "user-1"
Input = str | Callable[[LiveRequestQueue], None]
Shape = tuple[Any, ...]


def counter_ids() -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"call_{next(numbers)}"


def get_weather(city: str) -> dict[str, str]:
    """Weather for a city."""
    return {"city": city, "forecast": "sunny"}


def parts(content: types.Content | None) -> list[Any]:
    out: list[Any] = []
    for part in content.parts or [] if content else []:
        if part.text is not None:
            out += ["thought" if part.thought else "text", part.text]
        if part.function_call:
            call = part.function_call
            out += ["call", call.name, call.args, call.id]
        if part.function_response:
            response = part.function_response
            out += ["response", response.name, response.response, response.id]
        if part.inline_data:
            out += ["audio", part.inline_data.mime_type, part.inline_data.data]
    return out


def shape(event: Event | LlmResponse) -> Shape:
    """One event as a compact tuple: what it carries, in a fixed order."""
    out: list[Any] = ["partial"] if event.partial else []
    out += parts(event.content)
    for kind, tx in (("in", event.input_transcription), ("out", event.output_transcription)):
        if tx:
            out += [kind, tx.text, tx.finished]
    if event.usage_metadata:
        usage = event.usage_metadata
        out += ["usage", usage.prompt_token_count, usage.candidates_token_count]
    if event.turn_complete:
        out.append("turn_complete")
    if event.interrupted:
        out.append("interrupted")
    return tuple(out)


def said(role: str, text: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def user_text(text: str) -> Callable[[LiveRequestQueue], None]:
    return lambda queue: queue.send_content(said("user", text))


def speak(text: str, end: Literal["activity", "stream"] = "activity") -> Input:
    """Client-side VAD speech under the test convention: the PCM payload is the UTF-8 text."""

    def send(queue: LiveRequestQueue) -> None:
        if end == "activity":
            queue.send_activity_start()
        data = text.encode()
        for start in range(0, len(data), 5):
            queue.send_realtime(types.Blob(data=data[start : start + 5], mime_type="audio/pcm"))
        if end == "activity":
            queue.send_activity_end()
        else:
            queue.send_audio_stream_end()

    return send


@dataclass
class Recorder:
    """A responder wrapper keeping the conversation the model saw on each turn."""

    respond: Callable[[list[types.Content]], Turn]
    seen: list[list[types.Content]] = field(default_factory=list)

    def __call__(self, contents: list[types.Content]) -> Turn:
        self.seen.append(contents)
        return self.respond(contents)


@dataclass
class LiveChat:
    """One ADK session driven through ``run_live``, one input per exchange."""

    llm: ScriptedLlm
    runner: InMemoryRunner = field(init=False)
    session_id: str = ""
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        agent = LlmAgent(name="agent", model=self.llm, tools=[get_weather])
        self.runner = InMemoryRunner(agent=agent, app_name="app")

    async def start(self) -> None:
        session = await self.runner.session_service.create_session(app_name="app", user_id=USER)
        self.session_id = session.id

    async def converse(
        self,
        *inputs: Input,
        modality: str = "TEXT",
        react: Callable[[Event, LiveRequestQueue], None] | None = None,
    ) -> list[Shape]:
        """Send each input once the previous exchange is over (a ``turn_complete`` with no
        function call pending), then close the queue; the shapes of this run's events.
        ``react`` sees every event first (to send something mid-turn)."""
        if not self.session_id:
            await self.start()
        queue = LiveRequestQueue()
        pending = list(inputs)
        first = len(self.events)

        def send_next() -> None:
            if not pending:
                queue.close()
                return
            item = pending.pop(0)
            (user_text(item) if isinstance(item, str) else item)(queue)

        send_next()
        calls_pending = cut = False
        # (push to talk: the client signals activity, so the model's own detection is off)
        detection = types.AutomaticActivityDetection(disabled=True)
        run_config = RunConfig(
            response_modalities=[modality],
            realtime_input_config=types.RealtimeInputConfig(automatic_activity_detection=detection),
        )
        async with asyncio.timeout(5):
            async for event in self.runner.run_live(
                user_id=USER, session_id=self.session_id, live_request_queue=queue,
                run_config=run_config,
            ):  # fmt: skip
                self.events.append(event)
                if react is not None:
                    react(event, queue)
                calls_pending = calls_pending or bool(event.get_function_calls())
                if event.turn_complete and not cut:  # (the end of a cut turn: the input is due)
                    if not calls_pending:
                        send_next()
                    calls_pending = False
                cut = bool(event.interrupted)
        return [shape(event) for event in self.events[first:]]

    async def persisted(self) -> list[Shape]:
        session = await self.runner.session_service.get_session(
            app_name="app", user_id=USER, session_id=self.session_id
        )
        assert session is not None
        return [shape(event) for event in session.events]


async def no_task_left() -> None:
    assert asyncio.all_tasks() == {asyncio.current_task()}


# --- text turns -----------------------------------------------------------------------------


async def test_text_turn_streams_deltas_then_usage_full_text_and_turn_complete() -> None:
    chat = LiveChat(ScriptedLlm(turns=[[Text("Hello there, friend!")]], chunk_size=8))
    # Gemini sends the usage with turnComplete; ADK yields it before the buffered full text.
    assert await chat.converse("hi") == [
        ("partial", "text", "Hello th"),
        ("partial", "text", "ere, fri"),
        ("partial", "text", "end!"),
        ("usage", 1, 5),
        ("text", "Hello there, friend!"),
        ("turn_complete",),
    ]
    # Every live message is its own event (unlike SSE partials sharing the final's id).
    assert len({event.id for event in chat.events}) == len(chat.events)
    assert {event.author for event in chat.events} == {"agent"}
    assert await chat.persisted() == [
        ("text", "hi"),
        ("usage", 1, 5),
        ("text", "Hello there, friend!"),
        ("turn_complete",),
    ]
    await no_task_left()


async def test_tool_round_trip_sends_the_function_response_back_and_the_model_answers() -> None:
    recorder = Recorder(
        lambda contents: (
            [Call("get_weather", {"city": "Paris"})]
            if len(contents) == 1
            else [Text("Sunny in Paris.")]
        )
    )
    chat = LiveChat(ScriptedLlm(responder=recorder, id_factory=counter_ids(), chunk_size=8))
    forecast = {"city": "Paris", "forecast": "sunny"}
    assert await chat.converse("weather please") == [
        ("usage", 4, 8),
        ("call", "get_weather", {"city": "Paris"}, "call_1"),
        ("response", "get_weather", forecast, "call_1"),
        ("turn_complete",),
        ("partial", "text", "Sunny in"),
        ("partial", "text", " Paris."),
        ("usage", 20, 4),
        ("text", "Sunny in Paris."),
        ("turn_complete",),
    ]
    # What the model saw on its second turn: the user text, its call, ADK's function response.
    assert [[tuple(parts(c)) for c in contents] for contents in recorder.seen] == [
        [("text", "weather please")],
        [
            ("text", "weather please"),
            ("call", "get_weather", {"city": "Paris"}, "call_1"),
            ("response", "get_weather", forecast, "call_1"),
        ],
    ]
    await no_task_left()


async def test_two_turns_on_one_connection_and_history_on_the_next() -> None:
    recorder = Recorder(lambda contents: [Text(f"answer {len(contents) // 2 + 1}")])
    chat = LiveChat(ScriptedLlm(responder=recorder, chunk_size=100))
    shapes = await chat.converse("first", "second")
    assert [s for s in shapes if s[0] == "text"] == [("text", "answer 1"), ("text", "answer 2")]
    assert shapes.count(("turn_complete",)) == 2
    assert recorder.seen[-1] == [
        said("user", "first"),
        said("model", "answer 1"),
        said("user", "second"),
    ]

    # A new run_live on the same session: ADK replays the history through send_history; it ends
    # with a model turn, so the model waits for the next input, then sees everything.
    shapes = await chat.converse("third")
    assert [s for s in shapes if s[0] == "text"] == [("text", "answer 3")]
    assert [tuple(parts(c)) for c in recorder.seen[-1]] == [
        ("text", "first"),
        ("text", "answer 1"),
        ("text", "second"),
        ("text", "answer 2"),
        ("text", "third"),
    ]
    await no_task_left()


async def test_history_ending_with_a_user_turn_is_answered_at_once() -> None:
    chat = LiveChat(ScriptedLlm(turns=[[Text("Welcome back")]], chunk_size=100))
    await chat.start()
    session = await chat.runner.session_service.get_session(
        app_name="app", user_id=USER, session_id=chat.session_id
    )
    assert session is not None
    await chat.runner.session_service.append_event(
        session, Event(author="user", content=said("user", "are you there?"))
    )
    # No input at all: the answer comes from send_history alone, then the queue is closed.
    assert await chat.converse() == [
        ("partial", "text", "Welcome back"),
        ("usage", 4, 3),
        ("text", "Welcome back"),
        ("turn_complete",),
    ]


async def test_fail_raises_from_run_live_after_the_text_before_it() -> None:
    chat = LiveChat(ScriptedLlm(turns=[[Text("Partial answer"), Fail("backend broke")]]))
    with pytest.raises(ScriptedModelError, match=r"^backend broke$"):
        await chat.converse("hi")
    assert [shape(e) for e in chat.events] == [
        ("partial", "text", "Partial "),
        ("partial", "text", "answer"),
    ]
    await no_task_left()


# --- the demo grammar over live -------------------------------------------------------------


async def test_demo_explode_streams_text_then_fails() -> None:
    chat = LiveChat(demo_model(chunk_size=100))
    with pytest.raises(ScriptedModelError, match=r"^explode: "):
        await chat.converse("please explode")
    assert [shape(e) for e in chat.events] == [
        ("partial", "text", "Something is about to go wrong..."),
    ]
    await no_task_left()


async def test_demo_weather() -> None:
    chat = LiveChat(demo_model(chunk_size=1000))
    shapes = await chat.converse("What's the weather in Paris?")
    call_id = chat.events[1].get_function_calls()[0].id  # after the usage
    forecast = {"city": "Paris", "forecast": "sunny"}
    closing = closing_sentence([("get_weather", forecast)])
    assert [s for s in shapes if s[0] != "usage"] == [
        ("call", "get_weather", {"city": "Paris"}, call_id),
        ("response", "get_weather", forecast, call_id),
        ("turn_complete",),
        ("partial", "text", closing),
        ("text", closing),
        ("turn_complete",),
    ]


async def test_demo_parallel_and_sequential_weather() -> None:
    chat = LiveChat(demo_model(chunk_size=1000))
    shapes = await chat.converse(
        "weather in Paris and weather in Oslo", "weather in Rome then weather in Lima"
    )
    cities = [
        [call.args for call in event.get_function_calls()]
        for event in chat.events
        if event.get_function_calls()
    ]
    assert cities == [
        [{"city": "Paris"}, {"city": "Oslo"}],
        [{"city": "Rome"}],
        [{"city": "Lima"}],
    ]
    texts = [s[1] for s in shapes if s[0] == "text"]
    assert texts == [
        closing_sentence(
            [("get_weather", get_weather("Paris")), ("get_weather", get_weather("Oslo"))]
        ),
        intermediate_sentence([Call("get_weather")]),
        closing_sentence(
            [("get_weather", get_weather("Rome")), ("get_weather", get_weather("Lima"))]
        ),
    ]
    # Intermediate text and the next call share one model turn: the toolCall flushes the full
    # text first, then turnComplete brings the usage and the calls.
    middle = next(i for i, s in enumerate(shapes) if s[:2] == ("text", texts[1]))
    assert [s[0] for s in shapes[middle : middle + 3]] == ["text", "usage", "call"]
    assert shapes[middle + 2][:2] == ("call", "get_weather")


# --- audio ----------------------------------------------------------------------------------


@pytest.mark.parametrize("end", ["activity", "stream"])
async def test_audio_in_is_transcribed_then_answered(end: Literal["activity", "stream"]) -> None:
    chat = LiveChat(demo_model(chunk_size=8))
    shapes = await chat.converse(speak("weather in Paris", end))
    assert shapes[:5] == [
        ("partial", "in", "weather ", False),
        ("partial", "in", "in Paris", False),
        ("in", "weather in Paris", True),
        ("usage", 4, 8),
        ("call", "get_weather", {"city": "Paris"}, chat.events[4].get_function_calls()[0].id),
    ]
    assert [e.author for e in chat.events[:3]] == ["user"] * 3
    assert shapes[-3][0] == "usage"
    assert shapes[-2:] == [
        ("text", closing_sentence([("get_weather", get_weather("Paris"))])),
        ("turn_complete",),
    ]
    # ADK persists the finished transcription as the user's turn.
    assert (await chat.persisted())[0] == ("in", "weather in Paris", True)


async def test_audio_out_is_transcribed_audio_chunks_that_decode_to_the_answer() -> None:
    answer = "Bonjour, ça va?"
    chat = LiveChat(ScriptedLlm(turns=[[Thought("hmm"), Text(answer)]], chunk_size=6))
    shapes = await chat.converse("hi", modality="AUDIO")
    audio = [(e.content.parts or [])[0].inline_data for e in chat.events if e.content]
    mime = OUTPUT_AUDIO_MIME_TYPE
    assert shapes == [
        ("partial", "thought", "hmm"),
        ("audio", mime, b"Bonjou"),
        ("partial", "out", "Bonjou", False),
        ("audio", mime, "r, ça ".encode()),
        ("partial", "out", "r, ça ", False),
        ("audio", mime, b"va?"),
        ("partial", "out", "va?", False),
        ("out", answer, True),  # flushed by generationComplete
        ("usage", 1, 4),
        ("thought", "hmm"),  # audio does not end the thought run; turnComplete does
        ("turn_complete",),
    ]
    chunks = [blob.data for blob in audio if blob is not None and blob.data]
    assert b"".join(chunks).decode() == answer
    assert ("audio",) not in {s[:1] for s in await chat.persisted()}  # audio is not persisted


# --- closing and barge-in -------------------------------------------------------------------


@on_virtual_clock
async def test_closing_the_queue_ends_an_idle_run_live_promptly() -> None:
    """On a virtual clock: "an idle connection waits" means that nothing is left to run and
    100 ms pass; "promptly" means without waiting out a timer, however busy the machine."""
    loop = asyncio.get_running_loop()
    chat = LiveChat(ScriptedLlm(turns=[]))
    await chat.start()
    queue = LiveRequestQueue()
    events: list[Event] = []

    async def consume() -> None:
        async for event in chat.runner.run_live(
            user_id=USER, session_id=chat.session_id, live_request_queue=queue,
            run_config=RunConfig(response_modalities=["TEXT"]),
        ):  # fmt: skip
            events.append(event)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.1)  # virtual: every task has run as far as it can
    assert not task.done()  # an idle connection waits instead of ending the session
    started = loop.time()
    queue.close()
    await asyncio.wait_for(task, 1.0)
    assert loop.time() - started < 0.5
    assert events == []
    await no_task_left()


@on_virtual_clock
async def test_closing_mid_turn_stops_the_stream() -> None:
    """On a virtual clock: the queue closes 50 ms into a turn paced at 10 ms a delta, exactly,
    however busy the machine."""
    loop = asyncio.get_running_loop()
    chat = LiveChat(ScriptedLlm(turns=[[Text("x" * 100)]], chunk_size=1, delay=0.01))

    def close_soon(queue: LiveRequestQueue) -> None:
        user_text("go")(queue)
        asyncio.get_running_loop().call_later(0.05, queue.close)

    started = loop.time()
    shapes = await chat.converse(close_soon)
    assert loop.time() - started < 0.5
    assert 0 < len(shapes) < 100
    assert all(s[0] == "partial" for s in shapes)
    await no_task_left()


async def test_user_text_during_a_turn_interrupts_it() -> None:
    recorder = Recorder(
        lambda contents: (
            [Text("one two three four five six")] if len(contents) == 1 else [Text("ok")]
        )
    )
    chat = LiveChat(ScriptedLlm(responder=recorder, chunk_size=4, delay=0.02))

    def barge_in_after_first_delta(event: Event, queue: LiveRequestQueue) -> None:
        if len(chat.events) == 1:
            user_text("stop")(queue)

    shapes = await chat.converse("first", react=barge_in_after_first_delta)
    assert shapes[0] == ("partial", "text", "one ")
    interrupted = shapes.index(next(s for s in shapes if "interrupted" in s))
    spoken = "".join(s[2] for s in shapes[:interrupted])
    assert shapes[interrupted] == ("text", spoken, "interrupted")
    assert 0 < len(spoken) < len("one two three four five six")
    assert shapes[interrupted + 1 :] == [
        ("turn_complete",),  # (Gemini ends the turn it cut)
        ("partial", "text", "ok"),
        ("usage", 4, 1),
        ("text", "ok"),
        ("turn_complete",),
    ]
    # The conversation keeps only what was said before the barge-in.
    assert recorder.seen[1] == [said("user", "first"), said("model", spoken), said("user", "stop")]


# --- the connection on its own --------------------------------------------------------------


async def test_connection_renders_thoughts_text_and_calls_like_gemini_live() -> None:
    llm = ScriptedLlm(
        turns=[[Thought("plan"), Text("Checking."), Call("get_weather", {"city": "Oslo"})]],
        id_factory=counter_ids(),
        chunk_size=5,
    )
    request = LlmRequest()
    async with llm.connect(request) as connection:
        assert isinstance(connection, ScriptedLiveConnection)
        await connection.send_content(said("user", "hi"))
        shapes = [shape(r) async for r in connection.receive()]
        assert connection.conversation[-1].parts == [
            types.Part(text="plan", thought=True),
            types.Part(text="Checking."),
            types.Part(
                function_call=types.FunctionCall(
                    id="call_1", name="get_weather", args={"city": "Oslo"}
                )
            ),
        ]
    assert connection.closed
    assert [shape(r) async for r in connection.receive()] == []  # closed: returns at once
    assert llm.requests == [request]
    assert shapes == [
        ("partial", "thought", "plan"),
        ("thought", "plan"),  # flushed when the answer text starts
        ("partial", "text", "Check"),
        ("partial", "text", "ing."),
        ("text", "Checking."),  # flushed by the toolCall
        ("usage", 1, 3 + 8),
        ("call", "get_weather", {"city": "Oslo"}, "call_1"),
        ("turn_complete",),
    ]


async def test_custom_speech_hooks_and_partial_content() -> None:
    llm = ScriptedLlm(
        responder=lambda contents: [Text(f"{len(contents)} heard")],
        transcribe=lambda audio: f"{len(audio)} bytes",
        synthesize=lambda text: text.upper().encode(),
        chunk_size=100,
    )
    detection = types.AutomaticActivityDetection(disabled=True)
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO],
        input_audio_transcription=types.AudioTranscriptionConfig(),
        realtime_input_config=types.RealtimeInputConfig(automatic_activity_detection=detection),
    )
    async with llm.connect(LlmRequest(live_connect_config=config)) as connection:
        await connection._send_content(said("user", "not a turn yet"), partial=True)
        await connection.send_realtime(types.Blob(data=b"\x00\x01\x02", mime_type="audio/pcm"))
        await connection.send_realtime(types.Blob(data=b"ignored", mime_type="image/png"))
        await connection.send_realtime(types.ActivityEnd())
        # Without output transcription configured, audio only (as Gemini).
        assert [shape(r) async for r in connection.receive()] == [
            ("partial", "in", "3 bytes", False),
            ("in", "3 bytes", True),
            ("audio", OUTPUT_AUDIO_MIME_TYPE, b"2 HEARD"),
            ("usage", 6, 2),
            ("turn_complete",),
        ]


def test_default_transcription_reads_utf8_and_describes_real_audio() -> None:
    assert transcribe_utf8(b" weather in Paris \n") == "weather in Paris"
    assert transcribe_utf8(b"\x00\x00" * 16_000) == "[1.0 s of audio]"
    assert transcribe_utf8(b"\xff\xfe" * 8_000) == "[0.5 s of audio]"


async def test_activity_signals_are_refused_while_the_models_own_detection_is_on() -> None:
    """As Gemini Live, which closes the session with 1007 on an activity signal unless the
    setup turned its automatic activity detection off."""
    llm = ScriptedLlm(turns=[[Text("hi")]])
    config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
    async with llm.connect(LlmRequest(live_connect_config=config)) as connection:
        with pytest.raises(ScriptedModelError, match="Explicit activity control is not enabled"):
            await connection.send_realtime(types.ActivityStart())
        await connection.send_realtime(types.LiveClientRealtimeInput(audio_stream_end=True))
