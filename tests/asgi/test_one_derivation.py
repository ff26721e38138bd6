"""One derivation: what a reload shows is what the stream showed, for every scenario.

Every scenario of docs/internals/architecture.md#scenarios (the demo agent: a server tool, a server
tool that needs approval, a browser tool, a browser tool that needs approval; each decision), a
tool's confirmation with a hint and a payload, a user message with a file, and every agent
shape of tests/e2e/shapes_app.py runs through the ASGI app as the stock client drives it —
over SSE and, where ADK runs the agent live, over the live WebSocket —
and the chat the client built from the streams must equal ``GET /chat/{id}/messages``,
message for message and part for part; over SSE also after a ``regenerate()`` of the last
answer, and after a reader left mid-answer and ``resume`` read it from the stream store.
The e2e suite compares the two by their shape; this compares them whole.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import httpx
import msgspec
import pytest
from google.adk.agents import BaseAgent, LlmAgent
from google.adk.events.event import Event
from google.adk.tools import ToolContext
from google.adk.tools.function_tool import FunctionTool
from google.adk.workflow import START, Workflow
from google.genai import types

from adk_asgi import AdkApp, Limits, MessageMoment, Messages, Stores
from adk_asgi.convert.tool_answers import (
    add_tool_output,
    continued_message_id,
    respond_to_approval,
)
from adk_asgi.convert.ui_parts import is_tool_part, tool_name
from adk_asgi.stores.resumable import InMemoryStreamStore
from adk_asgi.testing import (
    Call,
    ChatClient,
    ChatResponse,
    ScriptedLlm,
    Text,
    Thought,
    TransportName,
    demo_model,
    read_ui_message,
)
from adk_asgi.testing.auto_send import stock_send_automatically_when
from demo_app import build_agent
from tests.asgi.test_data_parts import get_weather, planning
from tests.asgi.test_server_answers import BackOffice
from tests.e2e import shapes_app as shapes
from tests.support import counter, parse_sse, scripted_agent

pytestmark = [
    pytest.mark.asyncio,
    # ADK 2 deprecates the classic agent trees, which apps still serve (tests/e2e/shapes_app.py)
    pytest.mark.filterwarnings("ignore:(Parallel|Sequential|Loop)Agent is deprecated"),
    # ADK's AgentTool builds its inner Runner with the deprecated ``plugins=`` (the "agent tool"
    # shape). shapes_app's module-level filter holds only while pytest has not reset the filters
    # around a test, so the "agent tool" scenario failed whenever another test imported it first.
    pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning"),
]

LOCATION = {"latitude": 48.85, "longitude": 2.35}
PIXEL = {
    "type": "file",
    "mediaType": "image/png",
    "url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4"
    "DwABBAEAwS2OUAAAAABJRU5ErkJggg==",
}
USER_METADATA = {"sentAt": "2026-11-27T09:00:00Z", "draft": {"edited": False}}
"""What the page puts on each user message (``sendMessage({text, metadata})``): history
returns it with the message."""
BROWSER_OUTPUTS: dict[str, Any] = {
    "change_bgm": {"playing": 2},
    "get_location": LOCATION,
    "locate": {"result": "Paris"},  # (an object of ADK's wrapper shape: shown as sent)
}
"""What the page's ``onToolCall`` answers for each browser tool."""


def demo_agent() -> BaseAgent:
    return build_agent(demo_model(id_factory=counter("call_"), chunk_size=7))


def book_flight(destination: str, tool_context: ToolContext) -> dict[str, Any]:
    """Book a flight; the user confirms the seat (a confirmation with a hint and a payload)."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint="Pick a seat", payload={"seat": "14C"})
        tool_context.actions.skip_summarization = True
        return {"status": "waiting for a seat"}
    if not confirmation.confirmed:
        return {"status": "cancelled"}
    seat = (confirmation.payload or {"seat": "any"})["seat"]  # (none sent: the stock client)
    return {"status": "booked", "destination": destination, "seat": seat}


def listing() -> list[int]:
    """A list (ADK stores it as ``{"result": [1, 2]}``)."""
    return [1, 2]


def own_result() -> dict[str, Any]:
    """An object of the very shape of ADK's wrapper, returned by the tool itself."""
    return {"result": [1, 2]}


def returns() -> BaseAgent:
    def respond(contents: list[types.Content]) -> list[Any]:
        answered = [p for c in contents for p in c.parts or [] if p.function_response]
        return [Text("Done.")] if answered else [Call("listing", {}), Call("own_result", {})]

    return scripted_agent(responder=respond, tools=[listing, own_result], chunk_size=3)


def flight_agent() -> BaseAgent:
    def respond(contents: list[types.Content]) -> list[Any]:
        answered = [p for c in contents for p in c.parts or [] if p.function_response]
        return [Text("Done.")] if answered else [Call("book_flight", {"destination": "Oslo"})]

    return scripted_agent(responder=respond, tools=[book_flight], chunk_size=3)


async def get_forecast(city: str) -> AsyncGenerator[Event | dict[str, Any], None]:
    """The weather in a city, reporting progress while it is fetched (ADK's generator tool:
    each ``Event(message=...)`` is a progress message, the last yield the result)."""
    yield Event(message=f"Fetching the weather in {city}…")
    yield Event(message="Almost there…")
    yield {"city": city, "temperature": 20}


def forecast_agent() -> BaseAgent:
    def respond(contents: list[types.Content]) -> list[Any]:
        answered = [p for c in contents for p in c.parts or [] if p.function_response]
        return [Text("It is 20.")] if answered else [Call("get_forecast", {"city": "Paris"})]

    return scripted_agent(responder=respond, tools=[get_forecast], chunk_size=3)


def pay(amount: int) -> dict[str, Any]:
    """Pay an amount; above 100 the user approves it first."""
    return {"paid": amount}


def over_100(amount: int) -> bool:
    """``require_confirmation`` as a policy: small payments go through unasked."""
    return amount > 100


def policy_agent() -> BaseAgent:
    """Pays each amount the user's message names ("pay 5 and 500"), all in one step."""

    def respond(contents: list[types.Content]) -> list[Any]:
        if any(p.function_response for c in contents[-1:] for p in c.parts or []):
            return [Text("Done.")]
        said = next(p.text for c in reversed(contents) for p in c.parts or [] if p.text)
        return [Call("pay", {"amount": int(w)}) for w in said.split() if w.isdigit()]

    return scripted_agent(
        responder=respond, tools=[FunctionTool(pay, require_confirmation=over_100)], chunk_size=3
    )


def refund(amount: int) -> dict[str, Any]:
    """Refund an amount: the bank refuses it (the tool raises)."""
    raise RuntimeError(f"the bank refused a refund of {amount}")


def refund_agent(*, asks: bool, with_outlook: bool = False) -> BaseAgent:
    """A call whose tool raises (once the user approves it, when it ``asks``), alone or next to
    one whose tool returns: ADK stores no result for it, and the run ends with the exception;
    live mode shows each result at once, and ADK stores a step's results together."""

    def respond(contents: list[types.Content]) -> list[Any]:
        if any(p.function_response for c in contents[-1:] for p in c.parts or []):
            return [Text("Done.")]
        outlook = [Call("get_outlook", {"city": "Paris", "days": 1})] if with_outlook else []
        return [*outlook, Call("refund", {"amount": 5})]

    tool = FunctionTool(refund, require_confirmation=asks)
    return scripted_agent(responder=respond, tools=[get_outlook, tool], chunk_size=3)


def get_outlook(city: str, days: int) -> dict[str, Any]:
    """The outlook for a city, for a number of days."""
    return {"city": city, "forecast": ["sunny"] * days}


def streaming_agent() -> BaseAgent:
    """A model that streams its calls' arguments (as ADK's Anthropic model does; live, the
    scripted model gives calls whole, as Gemini Live does)."""

    def respond(contents: list[types.Content]) -> list[Any]:
        answered = [p for c in contents for p in c.parts or [] if p.function_response]
        if answered:
            return [Text("Sunny.")]
        return [
            Text("Let me see."),
            Call("get_outlook", {"city": "Paris", "days": 2}, stream_args=True),
        ]

    return scripted_agent(responder=respond, tools=[get_outlook], chunk_size=4)


def clumsy_agent() -> BaseAgent:
    """A model that calls a tool that does not exist and a tool without its mandatory
    argument (ADK refuses both: ``tool-input-error``), then answers."""

    def respond(contents: list[types.Content]) -> list[Any]:
        answered = [p for c in contents for p in c.parts or [] if p.function_response]
        if answered:
            return [Text("Sorry.")]
        return [Call("get_outlok", {"city": "Paris"}), Call("get_outlook", {"city": "Paris"})]

    return scripted_agent(responder=respond, tools=[get_outlook], chunk_size=4)


def data_agent() -> BaseAgent:
    """A tool that sends data parts while it runs (a card updated by id, a transient notice),
    next to a call that waits for approval; a model callback sends parts too."""

    def respond(contents: list[types.Content]) -> list[Any]:
        if any(p.function_response for c in contents for p in c.parts or []):
            return [Text("Done.")]
        return [Call("get_weather", {"city": "Paris"}), Call("pay", {"amount": 5})]

    return scripted_agent(
        responder=respond,
        tools=[get_weather, FunctionTool(pay, require_confirmation=True)],
        before_model_callback=planning,
        chunk_size=3,
    )


def data_after_transfer() -> BaseAgent:
    """The agent a transfer hands over to sends the parts (its tool's)."""

    def front(contents: list[types.Content]) -> list[Any]:
        return [Call("transfer_to_agent", {"agent_name": "forecaster"})]

    def forecaster(contents: list[types.Content]) -> list[Any]:
        if any(p.function_response for c in contents[-1:] for p in c.parts or []):
            return [Text("Sunny.")]
        return [Call("get_weather", {"city": "Paris"})]

    worker = LlmAgent(
        name="forecaster",
        description="Forecasts.",
        model=ScriptedLlm(responder=forecaster, id_factory=counter("forecast_")),
        tools=[get_weather],
    )
    return scripted_agent(responder=front, name="front", sub_agents=[worker])


@dataclass(frozen=True)
class Scenario:
    text: str
    approvals: dict[str, list[bool]] = field(default_factory=dict)
    """The user's decisions on each tool's approvals, in order; a call left waiting when
    there are none left (a page left mid-approval)."""
    agent: Callable[[], BaseAgent] = demo_agent
    outputs: dict[str, Any] = field(default_factory=dict)
    """What the page answers for each of ADK's questions (``adk_request_input``)."""
    live: bool = True
    """Whether the agent can run live (ADK runs no ParallelAgent, LoopAgent or workflow
    live: the handshake is refused)."""
    live_agent: Callable[[], BaseAgent] | None = None
    files: list[dict[str, Any]] = field(default_factory=list)
    """File parts the user's message carries."""
    ai_sdk_version: Literal[6, 7] = 6
    """``AdkApp(ai_sdk_version=)``: what the SSE stream and history may show. (The live
    connection here is a v7 client's: its scenarios that differ by version say 7.)"""
    options: dict[str, Any] = field(default_factory=dict)
    """``AdkApp`` options (``dynamic_tools``)."""
    unanswered: frozenset[str] = frozenset()
    """Browser tools the page leaves without a result (a page left mid-call)."""


SHAPES = {
    "parallel agents": Scenario("go", agent=shapes.parallel, live=False),
    "sequential agents": Scenario("go", agent=shapes.sequential, live_agent=shapes.sequential),
    "loop agent": Scenario("go", agent=shapes.loop, live=False),
    "transfer": Scenario("go", agent=shapes.transfer),
    "agent tool": Scenario("go", agent=shapes.agent_tool),
    "request_input tool": Scenario(
        "book", agent=shapes.booking, outputs={"adk_request_input": "Paris"}
    ),
    "workflow input": Scenario(
        "go",
        agent=lambda: Workflow(name="asking", edges=[(START, shapes.ask_name, shapes.greet)]),
        outputs={"adk_request_input": {"name": "Bob"}},
        live=False,
    ),
    "workflow tool input": Scenario(
        "hi", agent=shapes.workflow_tool, outputs={"adk_request_input": {"name": "Bob"}}
    ),
    "workflow tool input left waiting": Scenario("hi", agent=shapes.workflow_tool),
    **{
        f"workflow node confirmed {a}": Scenario(
            "go",
            {"pay": [a]},
            agent=lambda: Workflow(name="paying", edges=[(START, shapes.plan, shapes.pay)]),
            live=False,
        )
        for a in (True, False)
    },
}
"""The agent shapes of tests/e2e/shapes_app.py."""


SCENARIOS = {
    "text": Scenario("hello"),
    "weather": Scenario("What's the weather in Paris?"),
    "model error": Scenario("explode"),
    "payment approved": Scenario("pay 5 to alice", {"process_payment": [True]}),
    "payment denied": Scenario("pay 5 to alice", {"process_payment": [False]}),
    "payment left waiting": Scenario("pay 5 to alice"),
    "bgm": Scenario("play track 2"),
    "location approved": Scenario("where am i", {"get_location": [True]}),
    "location denied": Scenario("where am i", {"get_location": [False]}),
    "location left waiting": Scenario("where am i"),
    **{
        f"two payments {a} {b}": Scenario(
            "pay 5 to alice and pay 7 to bob", {"process_payment": [a, b]}
        )
        for a in (True, False)
        for b in (True, False)
    },
    "payment, text, payment": Scenario(
        "pay 5 to alice then pay 7 to bob", {"process_payment": [True, False]}
    ),
    "server and browser tool in one step": Scenario("weather in Paris and play track 1"),
    # a server tool's result next to a call left waiting: what ran is shown, and stored
    "server tool next to a browser tool left unanswered": Scenario(
        "weather in Paris and play track 1", unanswered=frozenset({"change_bgm"})
    ),
    "server tool next to a location left waiting": Scenario("weather in Paris and where am i"),
    "server tool next to a payment left waiting": Scenario("weather in Paris and pay 5 to alice"),
    **{
        f"payment {p} and location {loc}": Scenario(
            "pay 5 to alice and where am i", {"process_payment": [p], "get_location": [loc]}
        )
        for p in (True, False)
        for loc in (True, False)
    },
    **{
        f"a confirmation with a hint and a payload {a}": Scenario(
            "fly", {"book_flight": [a]}, flight_agent
        )
        for a in (True, False)
    },
    "a confirmation with a hint and a payload left waiting": Scenario("fly", {}, flight_agent),
    "a user message with a file": Scenario("hello", files=[PIXEL]),
    "a tool reporting progress": Scenario("weather", agent=forecast_agent),
    **{
        f"a payment the policy lets through, v{v}": Scenario(
            "pay 5", agent=policy_agent, ai_sdk_version=v, live=v == 7
        )
        for v in (6, 7)
    },
    **{
        f"a payment let through next to one approved {a}, v{v}": Scenario(
            "pay 5 and 500", {"pay": [a]}, agent=policy_agent, ai_sdk_version=v, live=v == 7
        )
        for a in (True, False)
        for v in (6, 7)
    },
    **{
        f"an approved call whose tool raises, v{v}": Scenario(
            "refund 5", {"refund": [True]}, lambda: refund_agent(asks=True), ai_sdk_version=v
        )
        for v in (6, 7)
    },
    "an approved call whose tool raises next to one that returns": Scenario(
        "refund 5", {"refund": [True]}, lambda: refund_agent(asks=True, with_outlook=True)
    ),
    "streamed tool input": Scenario("weather", agent=streaming_agent),
    "reasoning then text": Scenario(
        "hi", agent=lambda: scripted_agent([[Thought("Let me think."), Text("Bonjour")]])
    ),
    "calls ADK refuses": Scenario("weather", agent=clumsy_agent),
    **{
        f"data parts next to an approval {a}": Scenario(
            "weather and pay", {"pay": [a]}, data_agent, live_agent=data_agent
        )
        for a in (True, False)
    },
    "data parts after a transfer": Scenario("weather", agent=data_after_transfer),
    "data parts next to an approval left waiting": Scenario(
        "weather and pay", {}, data_agent, live_agent=data_agent
    ),
    "streamed tool input, dynamic": Scenario(
        "weather",
        agent=streaming_agent,
        options={"messages": Messages(dynamic_tools=lambda name: True)},
    ),
    **{
        f"calls ADK refuses, dynamic, v{v}": Scenario(
            "weather",
            agent=clumsy_agent,
            ai_sdk_version=v,
            live=v == 7,
            options={"messages": Messages(dynamic_tools=lambda name: True)},
        )
        for v in (6, 7)
    },
    "tools returning a list and their own result object": Scenario("go", agent=lambda: returns()),
    **{
        f"a toolset's tools, dynamic, order {a}": Scenario(
            "shop", {"order_item": [a]}, agent=shapes.shop
        )
        for a in (True, False)
    },
    "a toolset's order left waiting": Scenario("shop", agent=shapes.shop),
    "a dynamic browser tool": Scenario(
        "shop",
        {"order_item": [True]},
        agent=shapes.shop,
        options={"messages": Messages(dynamic_tools={"search_catalog", "order_item", "locate"})},
    ),
    "dynamic tools by a predicate": Scenario(
        "pay 5 to alice and where am i",
        {"process_payment": [True], "get_location": [True]},
        options={"messages": Messages(dynamic_tools=lambda name: name != "process_payment")},
    ),
    **SHAPES,
}
LIVE_SCENARIOS = {name: scenario for name, scenario in SCENARIOS.items() if scenario.live}


def every_fact(moment: MessageMoment) -> dict[str, Any]:
    """A message metadata hook that shows all a moment says (docs/metadata.md), keyed by
    its kind: the stream and a reload must agree on every fact of every response."""
    return {moment.kind: msgspec.to_builtins(moment)}


def scenario_app(scenario: Scenario, **options: Any) -> AdkApp:
    if scenario.live_agent is not None:
        options["live_agent"] = scenario.live_agent()
    options = {**scenario.options, **options}
    messages = options.pop("messages", Messages())
    return AdkApp(
        scenario.agent(),
        identify=lambda _: "alice",
        limits=Limits(approval_timeout=5),
        messages=dataclasses.replace(messages, message_metadata=every_fact, send_usage=True),
        ai_sdk_version=scenario.ai_sdk_version,
        **options,
    )


class Chat(Protocol):
    """A page: its messages, ``sendMessage`` and ``sendMessage()`` — :class:`ChatClient` over
    either transport, or :class:`ResumingChat`."""

    messages: list[dict[str, Any]]

    async def send(
        self, text: str, *, files: Sequence[Mapping[str, Any]], metadata: Any
    ) -> ChatResponse | None: ...

    async def submit(self) -> ChatResponse | None: ...


def client(app: AdkApp, transport: TransportName = "sse") -> ChatClient:
    """The stock client over ``transport``, answering tool calls only when told
    (:func:`next_answer`)."""
    return ChatClient(
        app,
        transport=transport,
        chat_id="chat-1",
        id_factory=counter("u"),
        send_automatically_when=None,
    )


def streamed(reply: ChatResponse | None) -> None:
    """The request was answered with a stream: not refused, no ``error`` frame, no connection
    lost mid-answer (an ``error`` chunk of the stream is the response's error)."""
    if reply is not None:
        assert reply.status == 200, reply.error
        errors = [c["errorText"] for c in reply.chunks if c["type"] == "error"]
        assert reply.error == (errors[0] if errors else None), reply.error


def next_answer(
    messages: list[dict[str, Any]],
    decisions: dict[str, list[bool]],
    outputs: dict[str, Any] | None = None,
    unanswered: frozenset[str] = frozenset(),
) -> bool:
    """What the user and the page do next with the last answer: decide an approval, or run a
    browser tool; whether anything was done."""
    if not messages or messages[-1]["role"] != "assistant":
        return False
    for part in messages[-1]["parts"]:
        if not is_tool_part(part):
            continue
        name = tool_name(part)
        if part["state"] == "approval-requested" and decisions.get(name):
            respond_to_approval(messages, part["toolCallId"], decisions[name].pop(0), None)
            return True
        answers = {**BROWSER_OUTPUTS, **(outputs or {})}
        if part["state"] == "input-available" and name in answers and name not in unanswered:
            add_tool_output(messages, part["toolCallId"], "output-available", answers[name], None)
            return True
    return False


async def play(chat: Chat, scenario: Scenario) -> None:
    """Send the scenario's message, then answer as the user and the page do, sending the chat
    whenever the stock ``sendAutomaticallyWhen`` helpers would."""
    decisions = copy.deepcopy(scenario.approvals)
    streamed(await chat.send(scenario.text, files=scenario.files, metadata=USER_METADATA))
    await answer_all(chat, decisions, scenario.outputs, scenario.unanswered)


async def answer_all(
    chat: Chat,
    decisions: dict[str, list[bool]],
    outputs: dict[str, Any] | None = None,
    unanswered: frozenset[str] = frozenset(),
) -> None:
    while next_answer(chat.messages, decisions, outputs, unanswered):
        if stock_send_automatically_when(chat.messages):
            streamed(await chat.submit())


async def history_of(app: AdkApp) -> list[dict[str, Any]]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        response = await http.get("/chat/chat-1/messages")
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()
    return messages


def as_json(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As the client would send them back (what JSON keeps)."""
    result: list[dict[str, Any]] = json.loads(json.dumps(messages))
    return result


class ResumingChat:
    """A page that sends each request and leaves after the first piece of the answer, then
    reads the answer whole from the stream store (``GET /chat/{id}/stream``), and builds the
    message from what it resumed."""

    def __init__(self, app: AdkApp) -> None:
        self.app = app
        self.messages: list[dict[str, Any]] = []
        self._ids = counter("u")

    async def send(self, text: str, *, files: Sequence[Mapping[str, Any]], metadata: Any) -> None:
        parts = [*files, {"type": "text", "text": text}]
        message = {"id": self._ids(), "role": "user", "parts": parts, "metadata": metadata}
        self.messages.append(message)
        await self._request(None)

    async def submit(self) -> None:
        await self._request(continued_message_id(self.messages))

    async def _request(self, message_id: str | None) -> None:
        body: dict[str, Any] = {
            "id": "chat-1",
            "messages": copy.deepcopy(self.messages),
            "trigger": "submit-message",
        }
        if message_id is not None:
            body["messageId"] = message_id
        resumed: asyncio.Task[tuple[int, bytes]] | None = None
        reading = asyncio.Event()

        async def resume() -> None:
            nonlocal resumed
            resumed = asyncio.create_task(call(self.app, "GET", "/chat/chat-1/stream", reading))
            await reading.wait()  # its 200 is out: it follows the answer from its start

        status, _ = await call(self.app, "POST", "/chat", None, json.dumps(body).encode(), resume)
        assert status == 200 and resumed is not None
        status, whole = await resumed
        assert status == 200, whole
        chunks = parse_sse(whole)
        last = self.messages[-1]
        if last["role"] == "assistant":
            self.messages[-1] = read_ui_message(chunks, last)
        else:
            self.messages.append(read_ui_message(chunks))


async def call(
    app: AdkApp,
    method: str,
    path: str,
    started: asyncio.Event | None = None,
    body: bytes = b"",
    on_first_piece: Callable[[], Awaitable[None]] | None = None,
) -> tuple[int, bytes]:
    """One HTTP request straight over ASGI: the status and the body. ``started`` is set once
    the response has begun; ``on_first_piece`` runs when the first piece of the body comes,
    and then the reader leaves (``http.disconnect``)."""
    left = asyncio.Event()
    status = 0
    pieces: list[bytes] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"t"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 50000),
        "server": ("t", 80),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            if started is not None:
                started.set()
        elif message["type"] == "http.response.body" and not left.is_set():
            pieces.append(message.get("body", b""))
            if on_first_piece is not None and pieces[-1]:
                await on_first_piece()
                left.set()

    await app(scope, receive, send)
    return status, b"".join(pieces)


@asynccontextmanager
async def sse_chat(scenario: Scenario) -> AsyncIterator[ChatClient]:
    app = scenario_app(scenario)
    try:
        async with client(app) as chat:
            yield chat
    finally:
        await app.aclose()


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_sse_stream_and_history_show_the_same_chat(scenario: Scenario) -> None:
    async with sse_chat(scenario) as sse:
        await play(sse, scenario)
        assert await sse.history() == as_json(sse.messages)


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_a_regenerated_answer_shows_the_same_chat(scenario: Scenario) -> None:
    """The first answer regenerated at once (a payment waiting for approval included), then
    played out."""
    async with sse_chat(scenario) as sse:
        streamed(await sse.send(scenario.text, files=scenario.files, metadata=USER_METADATA))
        last = sse.messages[-1]
        assert last["role"] == "assistant", last
        regenerated = await sse.regenerate(last["id"])  # it goes, its user message is sent again
        streamed(regenerated)
        decisions = copy.deepcopy(scenario.approvals)
        await answer_all(sse, decisions, scenario.outputs, scenario.unanswered)
        assert await sse.history() == as_json(sse.messages)


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_a_resumed_stream_shows_the_same_chat(scenario: Scenario) -> None:
    app = scenario_app(scenario, stores=Stores(streams=InMemoryStreamStore()))
    try:
        chat = ResumingChat(app)
        await play(chat, scenario)
        assert await history_of(app) == as_json(chat.messages)
    finally:
        await app.aclose()


@pytest.mark.parametrize("scenario", LIVE_SCENARIOS.values(), ids=LIVE_SCENARIOS.keys())
async def test_live_stream_and_history_show_the_same_chat(scenario: Scenario) -> None:
    app = scenario_app(scenario)
    try:
        async with client(app, "live") as live:
            await play(live, scenario)
            assert await history_of(app) == as_json(live.messages)
    finally:
        await app.aclose()


async def test_a_server_answer_that_is_no_object_is_shown_in_history_as_it_streamed() -> None:
    """The app's answer to a long-running call (``answer_call``) reaches ADK as
    ``{"result": value}`` when it is not an object, as a tool's return value does; the stream
    shows the value, as the app gave it, and so does history."""
    office = BackOffice(stores=Stores(streams=InMemoryStreamStore()), delay=0.05)
    asked = await office.ask()
    answer = office.app.answer_call("alice", "chat-1", "call_1", "approved")
    answering = asyncio.create_task(answer)
    followed: httpx.Response | None = None
    while followed is None or followed.status_code == 204:
        await asyncio.sleep(0.005)
        followed = await office.page.http.get("/chat/chat-1/stream")
    await answering
    page = read_ui_message(parse_sse(followed.content), asked)
    assert page["parts"][2]["output"] == "approved"
    assert await office.history() == [office.user, page]
    await office.page.aclose()
    await office.app.aclose()
