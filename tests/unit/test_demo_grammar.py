"""The demo grammar (docs/testing.md#the-demo-grammar) is a contract the e2e tests and the
benchmark drive, so it is pinned here exactly: the parsing table as a pure test, and every flow
behind the real ADK Runner (tools, approvals, parallel and sequential calls, a client tool
answered later, a failure)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from google.adk.agents import LlmAgent, RunConfig
from google.adk.agents.run_config import StreamingMode  # type: ignore[attr-defined]
from google.adk.events.event import Event
from google.adk.runners import InMemoryRunner
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types

from adk_asgi.testing import (
    Call,
    Fail,
    ScriptedModelError,
    Text,
    Turn,
    demo_model,
    demo_responder,
)
from adk_asgi.testing.demo_grammar import parse_stages, render_result

SSE = RunConfig(streaming_mode=StreamingMode.SSE)
USER = "user-1"
PLACEHOLDER = {"error": "This tool call requires confirmation, please approve or reject."}
REJECTED = {"error": "This tool call is rejected."}
FALLBACK_TAIL = (
    'I can try "weather in Paris", "pay 5 to alice", "play track 3" or "where am i" '
    '(join them with "and" or "then").'
)


# --- parsing ---------------------------------------------------------------------------------


def weather(city: str) -> Call:
    return Call("get_weather", {"city": city})


def pay(amount: int | float, recipient: str) -> Call:
    return Call("process_payment", {"amount": amount, "recipient": recipient, "currency": "USD"})


def bgm(track: int) -> Call:
    return Call("change_bgm", {"track": track})


LOCATION = Call("get_location", {})


def typed(stages: list[list[Call]]) -> list[list[tuple[str, str]]]:
    """Calls with JSON-rendered args, so ``5`` and ``5.0`` differ (they compare equal)."""
    return [[(c.name, json.dumps(c.args, sort_keys=True)) for c in stage] for stage in stages]


@pytest.mark.parametrize(
    ("user_text", "expected"),
    [
        ("What's the weather in Paris?", [[weather("Paris")]]),
        ("WEATHER IN oslo", [[weather("oslo")]]),
        ("weather in Paris, please", [[weather("Paris")]]),
        ("pay 5 to alice", [[pay(5, "alice")]]),
        ("Pay 5.50 to Bob.", [[pay(5.5, "Bob")]]),
        ("pay 5.0 to bob", [[pay(5, "bob")]]),
        ("please PAY $12 to Carol!", [[pay(12, "Carol")]]),
        ("pay five to alice", []),
        ("play track 3", [[bgm(3)]]),
        ("Play Track 12 now", [[bgm(12)]]),
        ("Where am I?", [[LOCATION]]),
        ("weather in Paris and weather in Oslo", [[weather("Paris"), weather("Oslo")]]),
        ("pay 5 to alice then pay 7 to bob", [[pay(5, "alice")], [pay(7, "bob")]]),
        ("pay 5 to alice, then pay 7 to bob", [[pay(5, "alice")], [pay(7, "bob")]]),
        (
            "weather in Paris and play track 3 THEN where am i",
            [[weather("Paris"), bgm(3)], [LOCATION]],
        ),
        ("weather in Paris and tell me a joke", [[weather("Paris")]]),
        ("thenceforth the weather in Rome", [[weather("Rome")]]),
        ("hello there", []),
        ("tell me about the weather", []),
        ("", []),
    ],
)
def test_parse_stages(user_text: str, expected: list[list[Call]]) -> None:
    assert typed(parse_stages(user_text)) == typed(expected)


def test_render_result_is_sorted_json_or_a_denial() -> None:
    assert render_result("get_weather", {"b": 1, "a": "x"}) == 'get_weather: {"a": "x", "b": 1}'
    assert render_result("process_payment", REJECTED) == "process_payment was denied"


# --- the responder as a pure function of contents --------------------------------------------


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def model_calls(*calls: tuple[str, dict[str, Any], str | None]) -> types.Content:
    parts = [
        types.Part(function_call=types.FunctionCall(name=name, args=args, id=call_id))
        for name, args, call_id in calls
    ]
    return types.Content(role="model", parts=parts)


def responses(*items: tuple[str, dict[str, Any], str | None]) -> types.Content:
    parts = [
        types.Part(function_response=types.FunctionResponse(name=name, response=resp, id=call_id))
        for name, resp, call_id in items
    ]
    return types.Content(role="user", parts=parts)


def only_calls(turn: Turn) -> list[Call]:
    calls = [segment for segment in turn if isinstance(segment, Call)]
    assert len(calls) == len(turn)
    return calls


def test_fallback_reply_and_explode() -> None:
    assert demo_responder([user("hello")]) == [Text(f'You said: "hello". {FALLBACK_TAIL}')]
    assert demo_responder([]) == [Text(f"Hello! {FALLBACK_TAIL}")]
    assert demo_responder([user("please EXPLODE now")]) == [
        Text("Something is about to go wrong..."),
        Fail("explode: the scripted demo model failed on purpose"),
    ]


def test_first_stage_is_called_without_text() -> None:
    contents = [user("pay 5 to alice then weather in Oslo")]
    assert typed([only_calls(demo_responder(contents))]) == typed([[pay(5, "alice")]])


def test_placeholders_and_confirmation_bookkeeping_do_not_complete_a_stage() -> None:
    args = {"amount": 5, "recipient": "alice", "currency": "USD"}
    confirm_args = {"originalFunctionCall": {"id": "c1", "name": "process_payment", "args": args}}
    contents = [
        user("pay 5 to alice"),
        model_calls(("process_payment", args, "c1")),
        model_calls(("adk_request_confirmation", confirm_args, "adk-1")),
        responses(("process_payment", PLACEHOLDER, "c1")),
        responses(("adk_request_confirmation", {"confirmed": True}, "adk-1")),
    ]
    assert demo_responder(contents) == [Text("Waiting for process_payment.")]
    contents.append(responses(("process_payment", {"status": "paid"}, "c1")))
    assert demo_responder(contents) == [Text('Here you go: process_payment: {"status": "paid"}.')]


def test_id_less_calls_are_matched_by_name_and_order() -> None:
    contents = [
        user("weather in Paris and weather in Oslo then play track 1"),
        model_calls(
            ("get_weather", {"city": "Paris"}, None), ("get_weather", {"city": "Oslo"}, None)
        ),
        responses(("get_weather", {"city": "Paris"}, None)),
    ]
    assert demo_responder(contents) == [Text("Waiting for get_weather.")]
    contents.append(responses(("get_weather", {"city": "Oslo"}, None)))
    assert demo_responder(contents) == [Text("Done. Next, change_bgm."), bgm(1)]


def test_only_the_last_user_text_counts() -> None:
    contents = [
        user("weather in Paris"),
        model_calls(("get_weather", {"city": "Paris"}, "w1")),
        responses(("get_weather", {"city": "Paris"}, "w1")),
        types.Content(role="model", parts=[types.Part(text="Here you go.")]),
        user("play track 2"),
    ]
    assert typed([only_calls(demo_responder(contents))]) == typed([[bgm(2)]])


# --- behind the real ADK Runner --------------------------------------------------------------


def get_weather(city: str) -> dict[str, Any]:
    """Weather for a city (a server tool)."""
    return {"city": city, "forecast": "sunny", "temperature_c": 21}


def process_payment(amount: float, recipient: str, currency: str = "USD") -> dict[str, Any]:
    """Send money (a server tool that needs approval)."""
    return {"status": "paid", "amount": amount, "recipient": recipient, "currency": currency}


def change_bgm(track: int) -> None:
    """Change the background music (a client tool: the browser answers later)."""
    return None


class Chat:
    """One ADK session driven turn by turn, with events summarised for exact assertions."""

    def __init__(self) -> None:
        numbers = itertools.count(1)
        agent = LlmAgent(
            name="assistant",
            model=demo_model(id_factory=lambda: f"call_{next(numbers)}", chunk_size=8),
            tools=[
                get_weather,
                FunctionTool(process_payment, require_confirmation=True),
                LongRunningFunctionTool(change_bgm),
            ],
        )
        self.runner = InMemoryRunner(agent=agent, app_name="demo")
        self.session_id = ""
        self.confirmations: dict[str, str] = {}  # original call id -> confirmation call id

    async def send(self, message: types.Content) -> list[tuple[Any, ...]]:
        if not self.session_id:
            session = await self.runner.session_service.create_session(
                app_name="demo", user_id=USER
            )
            self.session_id = session.id
        events: list[Event] = []
        async for event in self.runner.run_async(
            user_id=USER, session_id=self.session_id, new_message=message, run_config=SSE
        ):
            events.append(event)
        return self.summarise(events)

    async def say(self, text: str) -> list[tuple[Any, ...]]:
        return await self.send(user(text))

    async def decide(self, **decisions: bool) -> list[tuple[Any, ...]]:
        """Answer approvals by original call id: ``decide(call_1=True, call_2=False)``."""
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    name="adk_request_confirmation",
                    id=self.confirmations[call_id],
                    response={"confirmed": approved},
                )
            )
            for call_id, approved in decisions.items()
        ]
        return await self.send(types.Content(role="user", parts=parts))

    def summarise(self, events: list[Event]) -> list[tuple[Any, ...]]:
        """Non-partial events as tuples; checks that partial deltas add up to each final text."""
        streamed: dict[str, str] = {}
        out: list[tuple[Any, ...]] = []
        for event in events:
            parts = event.content.parts if event.content and event.content.parts else []
            if event.partial:
                streamed[event.id] = streamed.get(event.id, "") + "".join(
                    p.text or "" for p in parts
                )
                continue
            final_text = "".join(p.text or "" for p in parts if not p.thought)
            if event.id in streamed:
                assert streamed.pop(event.id) == final_text
            for part in parts:
                fc, fr = part.function_call, part.function_response
                if part.text:
                    out.append(("text", part.text))
                elif fc and fc.name == "adk_request_confirmation":
                    original = (fc.args or {})["originalFunctionCall"]
                    self.confirmations[original["id"]] = str(fc.id)
                    assert fc.id in (event.long_running_tool_ids or set())
                    out.append(("approval?", original["name"], original["id"]))
                elif fc:
                    long_running = fc.id in (event.long_running_tool_ids or set())
                    out.append(
                        ("call", fc.name, fc.id, fc.args) + (("long-running",) * long_running)
                    )
                elif fr:
                    out.append(("result", fr.name, fr.id, fr.response))
            if event.error_code:
                out.append(("error", event.error_code, event.error_message))
        assert not streamed, "partials without a final event"
        return out


async def test_plain_text() -> None:
    assert await Chat().say("Hi there") == [("text", f'You said: "Hi there". {FALLBACK_TAIL}')]


async def test_weather_runs_the_tool_and_quotes_its_result() -> None:
    paris = {"city": "Paris", "forecast": "sunny", "temperature_c": 21}
    assert await Chat().say("What's the weather in Paris?") == [
        ("call", "get_weather", "call_1", {"city": "Paris"}),
        ("result", "get_weather", "call_1", paris),
        (
            "text",
            'Here you go: get_weather: {"city": "Paris", "forecast": "sunny",'
            ' "temperature_c": 21}.',
        ),
    ]


@pytest.mark.parametrize("approved", [True, False])
async def test_payment_approved_or_denied(approved: bool) -> None:
    chat = Chat()
    args = {"amount": 5, "recipient": "alice", "currency": "USD"}
    assert await chat.say("pay 5 to alice") == [
        ("call", "process_payment", "call_1", args),
        ("approval?", "process_payment", "call_1"),
        ("result", "process_payment", "call_1", PLACEHOLDER),
    ]
    paid = {"status": "paid", **args}
    assert await chat.decide(call_1=approved) == [
        ("result", "process_payment", "call_1", paid if approved else REJECTED),
        (
            "text",
            'Here you go: process_payment: {"amount": 5, "currency": "USD", "recipient": "alice",'
            ' "status": "paid"}.'
            if approved
            else "Here you go: process_payment was denied.",
        ),
    ]


async def test_parallel_weather_calls_in_one_step() -> None:
    paris = {"city": "Paris", "forecast": "sunny", "temperature_c": 21}
    oslo = {"city": "Oslo", "forecast": "sunny", "temperature_c": 21}
    assert await Chat().say("weather in Paris and weather in Oslo") == [
        ("call", "get_weather", "call_1", {"city": "Paris"}),
        ("call", "get_weather", "call_2", {"city": "Oslo"}),
        ("result", "get_weather", "call_1", paris),
        ("result", "get_weather", "call_2", oslo),
        (
            "text",
            'Here you go: get_weather: {"city": "Paris", "forecast": "sunny", "temperature_c": 21};'
            ' get_weather: {"city": "Oslo", "forecast": "sunny", "temperature_c": 21}.',
        ),
    ]


async def test_sequential_payments_with_intermediate_text_and_two_approval_rounds() -> None:
    chat = Chat()
    alice = {"amount": 5, "recipient": "alice", "currency": "USD"}
    bob = {"amount": 7, "recipient": "bob", "currency": "USD"}
    assert await chat.say("pay 5 to alice then pay 7 to bob") == [
        ("call", "process_payment", "call_1", alice),
        ("approval?", "process_payment", "call_1"),
        ("result", "process_payment", "call_1", PLACEHOLDER),
    ]
    assert await chat.decide(call_1=True) == [
        ("result", "process_payment", "call_1", {"status": "paid", **alice}),
        ("text", "Done. Next, process_payment."),
        ("call", "process_payment", "call_2", bob),
        ("approval?", "process_payment", "call_2"),
        ("result", "process_payment", "call_2", PLACEHOLDER),
    ]
    assert await chat.decide(call_2=False) == [
        ("result", "process_payment", "call_2", REJECTED),
        (
            "text",
            'Here you go: process_payment: {"amount": 5, "currency": "USD", "recipient": "alice",'
            ' "status": "paid"}; process_payment was denied.',
        ),
    ]


async def test_two_parallel_payments_are_approved_in_one_answer() -> None:
    chat = Chat()
    alice = {"amount": 5, "recipient": "alice", "currency": "USD"}
    bob = {"amount": 7, "recipient": "bob", "currency": "USD"}
    assert await chat.say("pay 5 to alice and pay 7 to bob") == [
        ("call", "process_payment", "call_1", alice),
        ("call", "process_payment", "call_2", bob),
        ("approval?", "process_payment", "call_1"),
        ("approval?", "process_payment", "call_2"),
        ("result", "process_payment", "call_1", PLACEHOLDER),
        ("result", "process_payment", "call_2", PLACEHOLDER),
    ]
    assert await chat.decide(call_1=False, call_2=True) == [
        ("result", "process_payment", "call_1", REJECTED),
        ("result", "process_payment", "call_2", {"status": "paid", **bob}),
        (
            "text",
            "Here you go: process_payment was denied; process_payment: {"
            '"amount": 7, "currency": "USD", "recipient": "bob", "status": "paid"}.',
        ),
    ]


async def test_client_tool_answered_later() -> None:
    chat = Chat()
    assert await chat.say("play track 3") == [
        ("call", "change_bgm", "call_1", {"track": 3}, "long-running"),
    ]
    answer = types.FunctionResponse(name="change_bgm", id="call_1", response={"playing": 3})
    assert await chat.send(
        types.Content(role="user", parts=[types.Part(function_response=answer)])
    ) == [("text", 'Here you go: change_bgm: {"playing": 3}.')]


async def test_server_and_client_tool_in_one_step_waits_for_the_client() -> None:
    """Without the bridge's plugin, ADK calls the model again before the browser answered
    (docs/internals/architecture.md#long-running-tools); the grammar says it is waiting instead of
    pretending to be done."""
    chat = Chat()
    paris = {"city": "Paris", "forecast": "sunny", "temperature_c": 21}
    assert await chat.say("weather in Paris and play track 3") == [
        ("call", "get_weather", "call_1", {"city": "Paris"}),
        ("call", "change_bgm", "call_2", {"track": 3}, "long-running"),
        ("result", "get_weather", "call_1", paris),
        ("text", "Waiting for change_bgm."),
    ]
    answer = types.FunctionResponse(name="change_bgm", id="call_2", response={"playing": 3})
    assert await chat.send(
        types.Content(role="user", parts=[types.Part(function_response=answer)])
    ) == [
        (
            "text",
            'Here you go: get_weather: {"city": "Paris", "forecast": "sunny", "temperature_c": 21};'
            ' change_bgm: {"playing": 3}.',
        )
    ]


async def test_explode_streams_text_then_fails() -> None:
    chat = Chat()
    session = await chat.runner.session_service.create_session(app_name="demo", user_id=USER)
    events: list[Event] = []
    failure = r"^explode: the scripted demo model failed on purpose$"
    with pytest.raises(ScriptedModelError, match=failure):
        async for event in chat.runner.run_async(
            user_id=USER, session_id=session.id, new_message=user("explode"), run_config=SSE
        ):
            events.append(event)
    streamed = "".join(
        p.text or "" for e in events if e.partial and e.content for p in e.content.parts or ()
    )
    assert streamed == "Something is about to go wrong..."
    assert [bool(e.partial) for e in events] == [True] * 5 + [False]
    last = events[-1]
    assert (last.error_code, last.error_message) == (
        "ScriptedModelError",
        "explode: the scripted demo model failed on purpose",
    )
