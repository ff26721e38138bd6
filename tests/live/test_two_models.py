"""The same scenarios on both models: the scripted ``BaseLlm`` and ADK's own ``Gemini`` class
through google-genai's HTTP and Live clients against the Gemini stand-in, over SSE and live.

Each scenario asserts the whole chunk sequence, the same for both models and both transports
(ids normalised), and that a reload's history shows what the stream showed. The live cases
pin issue 35's live-mode bugs: an answer streamed twice (usage before the full text), a
session resumption update or a callback's state change that opened a response no request owns.
"""

from __future__ import annotations

import json
import secrets
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.run_config import RunConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.google_llm import Gemini
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.load_artifacts_tool import load_artifacts_tool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import BaseModel
from websockets.exceptions import ConnectionClosedOK

from adk_asgi import AdkApp, Messages, client_tool
from adk_asgi.convert.failures import show_errors
from adk_asgi.convert.safe_history import lost_result
from adk_asgi.hitl.outcomes import APPROVAL_MOVED_ON, MOVED_ON
from adk_asgi.testing import (
    Blocked,
    Call,
    ChatClient,
    Responder,
    ScriptedLlm,
    Source,
    Text,
    Thought,
    Turn,
    read_ui_message,
)
from adk_asgi.testing.gemini_server import GeminiStandIn
from tests.live.live_socket import open_live, serve
from tests.servers import in_loop_uvicorn
from tests.streams import approval_asked
from tests.support import counter, normalize_ids

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

MODELS = ["scripted", "gemini"]
GEMINI = "gemini-2.5-flash"
DELTAS = ("text-delta", "reasoning-delta")


@pytest.fixture(scope="module")
def gemini() -> Iterator[GeminiStandIn]:
    with GeminiStandIn(turns=[]) as stand_in, stand_in.installed():
        yield stand_in


@pytest_asyncio.fixture(params=MODELS, loop_scope="module")
async def agent(
    request: pytest.FixtureRequest, gemini: GeminiStandIn
) -> AsyncIterator[Callable[..., LlmAgent]]:
    """``agent(turns=…)`` / ``agent(responder=…)``, with ``LlmAgent``'s options: an agent on
    the scripted model, or on ``"gemini-2.5-flash"`` (ADK's ``Gemini``) with the stand-in
    answering the same script. ``name=``: an agent of a team, on a model of its own
    (``"gemini-<name>"``, its own script, on the stand-in). The scripted agents of a test
    number their calls together. Gemini's HTTP clients are closed after the test."""
    agents: list[LlmAgent] = []
    ids = counter("call_")

    def make(
        *,
        name: str = "assistant",
        turns: list[Turn] | None = None,
        responder: Any = None,
        **options: Any,
    ) -> LlmAgent:
        script: dict[str, Any] = {"turns": turns} if responder is None else {"responder": responder}
        model: BaseLlm | str
        if request.param == "scripted":
            model = ScriptedLlm(**script, chunk_size=8, id_factory=ids)
        elif name == "assistant":
            gemini.script = ScriptedLlm(**script, chunk_size=8)
            model = GEMINI
        else:
            model = f"gemini-{name}"
            gemini.scripts[model] = ScriptedLlm(**script, chunk_size=8)
        made = LlmAgent(name=name, model=model, **options)
        agents.append(made)
        return made

    yield make
    for made in agents:
        llm = made.canonical_model
        if isinstance(llm, Gemini):  # (its client of this event loop)
            await llm.api_client.aio.aclose()


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny"}


def pay(amount: float, to: str) -> dict[str, Any]:
    """Send money."""
    return {"status": "sent", "amount": amount, "to": to}


def weather(contents: list[types.Content]) -> Turn:
    results = [p.function_response for p in contents[-1].parts or [] if p.function_response]
    if results:
        return [Text(f"It is {results[0].response['forecast']} there.")]  # type: ignore[index]
    return [Text("Let me check. "), Call("get_weather", {"city": "Paris"})]


def paying(contents: list[types.Content]) -> Turn:
    if any(p.function_response for p in contents[-1].parts or []):
        return [Text("Paid.")]
    return [Call("pay", {"amount": 5, "to": "alice"})]


def text_block(text: str, block: int = 1, kind: str = "text") -> list[dict[str, Any]]:
    """A text (or reasoning) block whose deltas are folded into one (:func:`folded`)."""
    block_id = f"<block{block}>"
    return [
        {"type": f"{kind}-start", "id": block_id},
        {"type": f"{kind}-delta", "id": block_id, "delta": text},
        {"type": f"{kind}-end", "id": block_id},
    ]


def server_call(tool: str, args: dict[str, Any], call: int = 1) -> list[dict[str, Any]]:
    """The card of a call the server runs, up to its input."""
    ids = {"toolCallId": f"<call{call}>", "toolName": tool}
    return [
        {"type": "tool-input-start", **ids, "providerExecuted": True},
        {"type": "tool-input-available", **ids, "input": args, "providerExecuted": True},
    ]


def folded(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chunks with ids normalised and each text block's deltas joined into one (SSE and live
    coalesce deltas differently), without the ``start``'s id."""
    out: list[dict[str, Any]] = []
    for chunk in normalize_ids(chunks):
        if chunk["type"] in DELTAS and out and out[-1]["type"] == chunk["type"]:
            out[-1] = {**out[-1], "delta": out[-1]["delta"] + chunk["delta"]}
        else:
            out.append(chunk)
    return out


async def history(base: str, chat_id: str, cookie: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=base, headers={"cookie": cookie}) as http:
        response = await http.get(f"/chat/{chat_id}/messages")
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()
    return messages


async def live_turns(app: AdkApp, *texts: str) -> tuple[list[list[dict[str, Any]]], list[Any]]:
    """Send each text on one live connection (``ChatClient`` over uvicorn's socket); each
    response's chunks, and the history after."""
    async with in_loop_uvicorn(app) as base, ChatClient(base_url=base, transport="live") as chat:
        responses = []
        for text in texts:
            reply = await chat.send(text)
            errors = [c["errorText"] for c in reply.chunks if c["type"] == "error"]
            assert (reply.status, reply.error) == (200, errors[0] if errors else None), reply
            responses.append(reply.chunks)
        return responses, await chat.history()


def messages_of(texts: tuple[str, ...], responses: list[list[dict[str, Any]]]) -> list[Any]:
    """What the client shows after ``responses`` to ``texts`` (user parts as sent)."""
    shown: list[Any] = []
    for text, chunks in zip(texts, responses, strict=True):
        shown.append({"role": "user", "parts": [{"type": "text", "text": text}]})
        shown.append(read_ui_message(chunks, {"role": "assistant"}))
    return shown


def same_messages(history: list[Any], shown: list[Any]) -> None:
    """History shows what the stream showed (but ids and per-message metadata)."""

    def plain(messages: list[Any]) -> list[Any]:
        return [{"role": m["role"], "parts": [p for p in m["parts"]]} for m in messages]

    assert json.loads(json.dumps(plain(history))) == json.loads(json.dumps(plain(shown)))


async def converse(app: AdkApp, transport: str, *texts: str) -> list[list[dict[str, Any]]]:
    """Send each text as one browser of the chat (``ChatClient`` over SSE, one connection
    live); each response's chunks. What a reload shows is checked to be what the client shows.
    """
    if transport == "sse":
        async with ChatClient(app) as chat:
            responses = [(await chat.send(text)).chunks for text in texts]
            assert await chat.history() == chat.messages
        return responses
    responses, stored = await live_turns(app, *texts)
    same_messages(stored, messages_of(texts, responses))
    return responses


HELLO = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    *text_block("Hello there, friend!"),
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_an_answer_streams_once(agent: Callable[..., LlmAgent], transport: str) -> None:
    app = AdkApp(agent(turns=[[Text("Hello there, friend!")]] * 2))
    responses = await converse(app, transport, "hi", "hi again")
    assert [folded(chunks) for chunks in responses] == [HELLO, HELLO]


WEATHER = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    *text_block("Let me check. "),
    *server_call("get_weather", {"city": "Paris"}),
    {
        "type": "tool-output-available",
        "toolCallId": "<call1>",
        "output": {"city": "Paris", "forecast": "sunny"},
    },
    {"type": "finish-step"},
    {"type": "start-step"},
    *text_block("It is sunny there.", 2),
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_server_tool_round_trip(agent: Callable[..., LlmAgent], transport: str) -> None:
    app = AdkApp(agent(responder=weather, tools=[get_weather]))
    responses = await converse(app, transport, "weather?", "and again?")
    assert [folded(chunks) for chunks in responses] == [WEATHER, WEATHER]


async def test_a_live_session_with_resumption_answers_every_turn(
    agent: Callable[..., LlmAgent],
) -> None:
    """Gemini sends a ``sessionResumptionUpdate`` after each turn; its content-less event came
    before the next message's and opened a response nobody asked for, so the second message
    got ``start`` and never ended."""
    resumption = RunConfig(session_resumption=types.SessionResumptionConfig())
    app = AdkApp(agent(turns=[[Text("Hello there, friend!")]] * 3), live_run_config=resumption)
    responses = await converse(app, "live", "hi", "hi again", "and again")
    assert [folded(chunks) for chunks in responses] == [HELLO] * 3


async def test_a_callback_that_writes_state_loses_no_live_turn(
    agent: Callable[..., LlmAgent],
) -> None:
    """A ``before_agent_callback`` that writes state makes a content-less event before the
    user's message is dispatched: it opened a response no request owned, and the model's
    first turn was drained into it."""

    def remember(callback_context: CallbackContext) -> None:
        callback_context.state["visits"] = callback_context.state.get("visits", 0) + 1

    made = agent(turns=[[Text("Hello there, friend!")]] * 2, before_agent_callback=remember)
    responses = await converse(AdkApp(made), "live", "hi", "hi again")
    assert [folded(chunks) for chunks in responses] == [HELLO, HELLO]


THINKING = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    *text_block("The user greets me.", kind="reasoning"),
    *text_block("Hello there, friend!", 2),
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_thinking_then_the_answer(agent: Callable[..., LlmAgent], transport: str) -> None:
    turn: Turn = [Thought("The user greets me."), Text("Hello there, friend!")]
    app = AdkApp(agent(turns=[turn] * 2))
    responses = await converse(app, transport, "hi", "hi again")
    assert [folded(chunks) for chunks in responses] == [THINKING, THINKING]


PAUSED = approval_asked("pay", {"amount": 5, "to": "alice"})


async def test_an_approval_over_sse(agent: Callable[..., LlmAgent]) -> None:
    tools = [FunctionTool(pay, require_confirmation=True)]
    app = AdkApp(agent(responder=paying, tools=tools))
    async with ChatClient(app) as chat:
        asked = await chat.send("pay alice 5")
        assert folded(asked.chunks) == PAUSED
        paid = await chat.approve("pay")
        assert paid is not None
        assert folded(paid.chunks)[1] == {
            "type": "tool-output-available",
            "toolCallId": "<call1>",
            "output": {"status": "sent", "amount": 5, "to": "alice"},
        }
        assert paid.text == "Paid."
        assert await chat.history() == chat.messages


async def save_note(text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Keep a note as a file of the chat."""
    version = await tool_context.save_artifact("note.txt", types.Part(text=text))
    return {"saved": "note.txt", "version": version}


def noting(contents: list[types.Content]) -> Turn:
    if any(p.function_response for p in contents[-1].parts or []):
        return [Text("Noted.")]
    return [Call("save_note", {"text": "milk"})]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_adks_artifact_tools_work_without_an_artifact_service_given(
    agent: Callable[..., LlmAgent], transport: str
) -> None:
    """ADK's own ``load_artifacts`` (it lists the chat's files before every model call) and a
    tool that saves a file raised "Artifact service is not initialized." without one."""
    app = AdkApp(agent(responder=noting, tools=[load_artifacts_tool, save_note]))
    if transport == "sse":
        async with ChatClient(app) as chat:
            reply = await chat.send("remember milk")
            assert reply.text == "Noted."
            [card] = [p for p in reply.message["parts"] if p["type"] == "tool-save_note"]
            assert card["output"] == {"saved": "note.txt", "version": 0}
        return
    [chunks], _ = await live_turns(app, "remember milk")
    message = read_ui_message(chunks, {"role": "assistant"})
    [card] = [p for p in message["parts"] if p["type"] == "tool-save_note"]
    assert card["output"] == {"saved": "note.txt", "version": 0}
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}


async def test_push_to_talk_is_answered(agent: Callable[..., LlmAgent]) -> None:
    """The served transport's microphone signals the user's activity (push to talk): the
    connection's setup turns Gemini's own voice activity detection off, which the Live API
    requires before it takes those signals (it closed the session with 1007)."""
    app = AdkApp(agent(turns=[[Text("Hello there, friend!")]]))
    async with serve(app) as url:
        chat_id = f"voice-{secrets.token_hex(4)}"
        live, socket = await open_live(url, chat_id, chatId=chat_id, audio="1")
        async with socket:
            await socket.send(json.dumps({"type": "activity-start"}))
            await socket.send(b"hello")
            await socket.send(json.dumps({"type": "activity-end"}))
            resume = {"type": "resume", "requestId": "v1", "id": chat_id, "headers": {}, "body": {}}
            await socket.send(json.dumps(resume))
            chunks = await live.response("v1")
    heard = {"role": "user", "text": "hello"}
    assert folded(chunks) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "data-transcript", "data": {**heard, "final": False}, "id": "<block1>"},
        {"type": "data-transcript", "data": {**heard, "final": True}, "id": "<block1>"},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block2>"},
        {"type": "text-delta", "id": "<block2>", "delta": "Hello there, friend!"},
        {"type": "text-end", "id": "<block2>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


class Opaque:
    """A value no JSON encoder knows."""


def get_clock(city: str) -> dict[str, Any]:
    """The time in a city (returns an object no JSON carries)."""
    return {"city": city, "clock": Opaque()}


def clocking(contents: list[types.Content]) -> Turn:
    results = [p.function_response for p in contents[-1].parts or [] if p.function_response]
    if results:
        return [Text("Answered.")]
    if "again" in last_text(contents):
        return [Text("Hello there, friend!")]
    return [Call("get_clock", {"city": "Paris"})]


def last_text(contents: list[types.Content]) -> str:
    for content in reversed(contents):
        texts = [p.text for p in content.parts or [] if p.text]
        if content.role == "user" and texts:
            return " ".join(texts)
    return ""


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_tool_result_that_is_not_json_is_an_output_error_and_the_chat_goes_on(
    agent: Callable[..., LlmAgent], transport: str
) -> None:
    """Live, the result reached the stream as it was: its frame could not be encoded and the
    connection closed with 1011, the call left ``input-available``."""
    app = AdkApp(agent(responder=clocking, tools=[get_clock]))
    responses = await converse(app, transport, "time in Paris", "hi again")
    assert [folded(chunks) for chunks in responses] == [NOT_JSON, HELLO]


NOT_JSON = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    *server_call("get_clock", {"city": "Paris"}),
    {
        "type": "tool-output-error",
        "toolCallId": "<call1>",
        "errorText": lost_result("it is not a JSON value"),
    },
    {"type": "finish-step"},
    {"type": "start-step"},
    *text_block("Answered."),
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


ROME = "https://en.wikipedia.org/wiki/Rome"
ITALY = "https://www.italia.it/en"
GROUNDED = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    *text_block("Rome is the capital of Italy."),
    {"type": "source-url", "sourceId": "<source1>", "url": ROME, "title": "Rome"},
    {"type": "source-url", "sourceId": "<source2>", "url": ITALY, "title": "Italy"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


def sources_named(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``folded`` chunks with each source id as ``<sourceN>``."""
    names: dict[str, str] = {}
    out = []
    for chunk in folded(chunks):
        if chunk["type"] == "source-url":
            chunk = {
                **chunk,
                "sourceId": names.setdefault(chunk["sourceId"], f"<source{len(names) + 1}>"),
            }
        out.append(chunk)
    return out


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_grounded_answer_shows_once_with_each_source_once(
    agent: Callable[..., LlmAgent], transport: str
) -> None:
    """Gemini Live sends grounding in a message of its own and ADK repeats it on the full text:
    its content-less event ended the text block, so the answer showed twice, and every source
    twice; a source the answer cites twice is one source, as the AI SDK's Google provider shows
    it."""
    turn: Turn = [
        Text("Rome is the capital of Italy."),
        Source(ROME, "Rome"),
        Source(ROME, "Rome"),
        Source(ITALY, "Italy"),
    ]
    app = AdkApp(agent(turns=[turn] * 2))
    responses = await converse(app, transport, "capital of Italy?", "and again?")
    assert [sources_named(chunks) for chunks in responses] == [GROUNDED, GROUNDED]


def summary(chunks: list[dict[str, Any]]) -> list[str]:
    """Each chunk's type (deltas folded), with its call (normalised) or the agent that wrote
    it."""
    out = []
    for chunk in folded(chunks):
        label = chunk["type"]
        if "toolCallId" in chunk:
            label += f":{chunk['toolCallId']}"
        author = chunk.get("providerMetadata", {}).get("adk", {}).get("author")
        out.append(label + (f"@{author}" if author else ""))
    return out


TRANSFERRED = [
    "start",
    "start-step",
    "tool-input-start:<call1>@root",
    "tool-input-available:<call1>",
    "tool-output-available:<call1>",
    "finish-step",
    "start-step",
    "tool-input-start:<call2>@middle",
    "tool-input-available:<call2>",
    "tool-output-available:<call2>",
    "finish-step",
    "start-step",
    "text-start@leaf",
    "text-delta",
    "text-end",
    "finish-step",
    "finish",
]
STAYS = [
    "start",
    "start-step",
    "text-start@leaf",
    "text-delta",
    "text-end",
    "finish-step",
    "finish",
]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_transfer_two_levels_deep(agent: Callable[..., LlmAgent], transport: str) -> None:
    """root hands over to middle, which hands over to leaf; the next message stays with leaf
    (as ADK keeps the agent that answered last). Each agent on a model of its own."""

    def hand_to(agent_name: str) -> Responder:
        return lambda contents: [Call("transfer_to_agent", {"agent_name": agent_name})]

    leaf = agent(name="leaf", responder=lambda _: [Text("Leaf here.")])
    middle = agent(name="middle", responder=hand_to("leaf"), sub_agents=[leaf])
    root = agent(name="root", responder=hand_to("middle"), sub_agents=[middle])
    responses = await converse(AdkApp(root), transport, "go", "again")
    assert [summary(chunks) for chunks in responses] == [TRANSFERRED, STAYS]


def blocked_stream(reason: str) -> list[dict[str, Any]]:
    return [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "data-error", "data": {"errorText": reason}, "id": "<block1>"},
        {"type": "error", "errorText": reason},
        {"type": "finish", "finishReason": "error"},
    ]


@pytest.mark.parametrize("reason", ["SAFETY", "MALFORMED_FUNCTION_CALL"])
async def test_an_answer_gemini_blocks_before_a_word_is_an_error_with_its_reason(
    agent: Callable[..., LlmAgent], reason: str
) -> None:
    """It was an empty assistant message the client kept and history dropped (nothing of it
    is stored but its finish reason): the user read nothing, and a reload showed less."""
    app = AdkApp(agent(turns=[[Blocked(reason)]]), messages=Messages(on_error=show_errors))
    async with ChatClient(app) as chat:
        reply = await chat.send("hi")
        assert folded(reply.chunks) == blocked_stream(reason)
        assert await chat.history() == chat.messages


async def test_an_answer_blocked_after_some_words_keeps_them(
    agent: Callable[..., LlmAgent],
) -> None:
    app = AdkApp(
        agent(turns=[[Text("Some words "), Blocked("SAFETY")]]),
        messages=Messages(on_error=show_errors),
    )
    async with ChatClient(app) as chat:
        reply = await chat.send("hi")
        assert folded(reply.chunks) == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            *text_block("Some words "),
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "content-filter"},
        ]
        assert await chat.history() == chat.messages


def asking_until_moved_on(seen: list[list[str]]) -> Responder:
    """Asks to pay or to locate the user; the answer to a call left unanswered is "Not
    done."; anything else is greeted. Each turn notes what the model read last (``seen``): the
    roles and kinds of its last contents."""

    def respond(contents: list[types.Content]) -> Turn:
        seen.append([_kind(content) for content in contents[-2:]])
        if any(p.function_response for p in contents[-1].parts or []):
            return [Text("Not done.")]
        if last_text(contents).startswith("pay"):
            return [Call("pay", {"amount": 5, "to": "alice"})]
        if last_text(contents).startswith("where"):
            return [Call("where_am_i", {})]
        return [Text("Hello there, friend!")]

    return respond


@client_tool
def where_am_i() -> dict[str, float]:
    """The user's location (the browser's)."""
    raise NotImplementedError  # (the browser runs it)


LOCATING = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "where_am_i"},
    {
        "type": "tool-input-available",
        "toolCallId": "<call1>",
        "toolName": "where_am_i",
        "input": {},
    },
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "tool-calls"},
]
LEFT = {
    "approval": ("pay alice 5", PAUSED, APPROVAL_MOVED_ON),
    "browser": ("where am i", LOCATING, MOVED_ON["error"]),
}
"""What the user asks, its response, and the error its call shows once the user moved on."""


def _kind(content: types.Content) -> str:
    parts = content.parts or []
    if any(p.function_response for p in parts):
        return "results"
    if any(p.function_call for p in parts):
        return "calls"
    return f"{content.role}:{' '.join(p.text or '' for p in parts)}"


@pytest.mark.parametrize("left", ["approval", "browser"])
@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_new_message_reaches_the_model_after_the_results_of_the_calls_it_leaves(
    agent: Callable[..., LlmAgent], transport: str, left: str
) -> None:
    """A message typed while an approval (or a browser tool) waits closes the call, and the
    model reads that result before the message, in both modes; the message's answer is all
    its response shows. Live, the message was queued before ADK sent the result: Gemini,
    which pairs every call with its response, closed the session (1007) and the user read
    "An error occurred."."""
    seen: list[list[str]] = []
    asked_for, asked_stream, error = LEFT[left]
    tools = [FunctionTool(pay, require_confirmation=True), where_am_i]
    app = AdkApp(agent(responder=asking_until_moved_on(seen), tools=tools))
    if transport == "sse":
        async with ChatClient(app) as chat:
            asked, hello = (await chat.send(asked_for)).chunks, (await chat.send("hi")).chunks
            stored = await chat.history()
    else:
        [asked, hello], stored = await live_turns(app, asked_for, "hi")
    assert folded(asked) == asked_stream
    assert folded(hello) == HELLO
    assert seen[-1] == ["results", "user:hi"]
    [card] = [p for p in stored[1]["parts"] if p["type"].startswith("tool-")]
    assert (card["state"], card["errorText"]) == ("output-error", error)
    assert [(m["role"], m["parts"]) for m in stored[2:]] == [
        ("user", [{"type": "text", "text": "hi"}]),
        ("assistant", read_ui_message(hello, {"role": "assistant"})["parts"]),
    ]


def finishing(name: str) -> Responder:
    """A sub-agent of a live sequence: it answers, then says it is done."""
    return lambda contents: [Text(f"{name} here. "), Call("task_completed", {})]


SEQUENCE = [
    "start",
    "start-step",
    "text-start@first",
    "text-delta",
    "text-end",
    "tool-input-start:<call1>@first",
    "tool-input-available:<call1>",
    "tool-output-available:<call1>",
    "finish-step",
    "start-step",
    "text-start@second",
    "text-delta",
    "text-end",
    "tool-input-start:<call2>@second",
    "tool-input-available:<call2>",
    "tool-output-available:<call2>",
    "finish-step",
    "finish",
]


async def test_a_live_sequence_runs_again_for_each_message_and_never_unasked(
    agent: Callable[..., LlmAgent],
) -> None:
    """A live ``SequentialAgent`` ends its session after its last sub-agent's
    ``task_completed``, whose result ends the history: Gemini answers such a history as a
    session opens, so the next connection ran the first sub-agent again before the user
    said anything (a page that only opened the chat did too), and its call left open made
    Gemini refuse the user's message. The session now waits for the message and gives it to
    the model with the history. Each message comes on a connection of its own, opened on
    the chat, as the stock transport reconnects after the 1000 close."""
    steps = [agent(name=name, responder=finishing(name)) for name in ("first", "second")]
    with warnings.catch_warnings():  # (ADK 2.13 deprecates the class, not its live use)
        warnings.simplefilter("ignore", DeprecationWarning)
        sequence = SequentialAgent(name="sequence", sub_agents=steps)
    texts = ("one", "two")
    responses = []
    async with serve(AdkApp(sequence)) as url:
        cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
        chat_id = f"chat-{secrets.token_hex(4)}"
        for number, text in enumerate(texts):
            live, socket = await open_live(url, chat_id, cookie=cookie, chatId=chat_id)
            live.count = number
            async with socket:
                responses.append(await live.turn(text))
                with pytest.raises(ConnectionClosedOK):  # the agent ended its session
                    await socket.recv()
            assert socket.close_code == 1000
        base = url.replace("ws://", "http://", 1).removesuffix("/live")
        stored = await history(base, chat_id, cookie)
    assert [summary(chunks) for chunks in responses] == [SEQUENCE, SEQUENCE]
    same_messages(stored, messages_of(texts, responses))


def request_refund(order: str, amount: float) -> None:
    """Ask the back office to approve a refund; a clerk answers later, from the server."""


def refunding(contents: list[types.Content]) -> Turn:
    results = [p.function_response for p in contents[-1].parts or [] if p.function_response]
    if results:
        return [Text(f"It is {results[0].response['forecast']} there.")]  # type: ignore[index]
    if "weather" in last_text(contents):
        return [Text("Let me check. "), Call("get_weather", {"city": "Paris"})]
    return [Text("Asking the back office."), Call("request_refund", {"order": "A7", "amount": 20})]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_turn_after_a_call_the_back_office_holds_shows_its_own_tools(
    agent: Callable[..., LlmAgent], transport: str
) -> None:
    """While a long-running call waits for the app (nothing was returned: the call stays open
    for the back office), the next message's tool call, on the same live connection, was
    missing from its stream and filed above the question that asked for it."""
    tools = [LongRunningFunctionTool(request_refund), get_weather]
    app = AdkApp(agent(responder=refunding, tools=tools))
    held, weather = await converse(app, transport, "refund order A7", "weather?")
    assert folded(held) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        *text_block("Asking the back office."),
        *server_call("request_refund", {"order": "A7", "amount": 20}),
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    assert folded(weather) == WEATHER


@pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning")
@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_agent_tools_two_levels_deep(agent: Callable[..., LlmAgent], transport: str) -> None:
    """root calls the agent ``middle`` as a tool, which calls ``leaf`` as a tool: each runs on
    a model of its own; the root's answer reads what came back up."""

    def asking(tool: str, then: str) -> Responder:
        def respond(contents: list[types.Content]) -> Turn:
            results = [p.function_response for p in contents[-1].parts or [] if p.function_response]
            if results:
                return [Text(f"{then}: {results[0].response['result']}")]  # type: ignore[index]
            return [Call(tool, {"request": "go"})]

        return respond

    leaf = agent(name="leaf", description="Leaf.", responder=lambda _: [Text("Leaf here.")])
    middle = agent(
        name="middle",
        description="Middle.",
        responder=asking("leaf", "Middle heard"),
        tools=[AgentTool(agent=leaf)],
    )
    root = agent(
        name="root", responder=asking("middle", "Root heard"), tools=[AgentTool(agent=middle)]
    )
    [chunks] = await converse(AdkApp(root), transport, "go")
    assert folded(chunks) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        *server_call("middle", {"request": "go"}),
        {
            "type": "tool-output-available",
            "toolCallId": "<call1>",
            "output": "Middle heard: Leaf here.",
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        *text_block("Root heard: Middle heard: Leaf here."),
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


class Plan(BaseModel):
    steps: list[str]


PLAN = {"steps": ["pack", "go"]}
PLANNER_ASKED = {"role": "user", "parts": [{"text": "plan a trip"}]}


@pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning")
@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_an_agent_with_an_output_schema_as_a_tool(
    agent: Callable[..., LlmAgent], gemini: GeminiStandIn, transport: str
) -> None:
    """The planner answers in its ``output_schema`` (Gemini's JSON mode): the tool's result is
    the object, which the root reads."""

    def root_says(contents: list[types.Content]) -> Turn:
        results = [p.function_response for p in contents[-1].parts or [] if p.function_response]
        if results:
            return [Text(f"{len(results[0].response['steps'])} steps.")]  # type: ignore[index]
        return [Call("planner", {"request": "plan a trip"})]

    planner = agent(
        name="planner",
        description="Plans.",
        responder=lambda _: [Text(json.dumps(PLAN))],
        output_schema=Plan,
    )
    root = agent(name="root", responder=root_says, tools=[AgentTool(agent=planner)])
    gemini.requests.clear()
    [chunks] = await converse(AdkApp(root), transport, "plan")
    assert folded(chunks) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        *server_call("planner", {"request": "plan a trip"}),
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": PLAN},
        {"type": "finish-step"},
        {"type": "start-step"},
        *text_block("2 steps."),
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    if isinstance(root.canonical_model, Gemini):  # (the schema reached Gemini as its JSON mode)
        [asked] = [r for r in gemini.requests if r.get("contents", [{}])[0] == PLANNER_ASKED]
        assert asked["generationConfig"]["responseMimeType"] == "application/json"
