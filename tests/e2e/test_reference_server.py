"""Conformance with the AI SDK's own server: the same conversations, chunk for chunk.

Each test runs one conversation of the demo agent twice, with AI SDK ``sdk`` (6 and 7):

* ours: the demo agent (``demo_app.build_agent()``: real ADK runner, the scripted demo model)
  behind ``AdkApp`` (``ai_sdk_version=sdk``), called in process through httpx's ASGI transport;
* the reference: ``tests/e2e/node/reference-server.mjs``, i.e. ``streamText`` +
  ``toUIMessageStreamResponse`` of that very ``ai`` version, with the SDK's own mock model
  following the same demo grammar and the same four tools declared the AI SDK way (get_weather:
  ``execute``; process_payment: ``execute`` + ``needsApproval``; change_bgm: no ``execute``;
  get_location: no ``execute`` + ``needsApproval``). See ``node/lib/reference.mjs``.

Both conversations are driven the way the stock client drives them: every response body is
read back by the SDK's own client code (``readUIMessageStream``, a continuation on top of the
message it continues), and the next request carries that client-built assistant message with
the user's answers applied as ``addToolApprovalResponse`` / ``addToolOutput`` apply them (parts
in state ``approval-responded`` / ``output-available``), ``trigger: "submit-message"`` and
``messageId`` = the last message's id.

Normalisation (`Normalizer`), applied to both sides alike; nothing else is touched:

* ids: ``messageId``, text block ``id``, ``toolCallId`` and ``approvalId`` become ``<msg1>``,
  ``<text1>``, ``<call1>``, ``<approval1>``… in order of first appearance **across the whole
  conversation**, so a continuation that repeats the message id, or a chunk that names a call of
  an earlier response, keeps that link. The servers make their ids differently.
* text: every ``text-delta`` says ``<text>``, and a run of deltas of one block counts as one.
  The two models word their answers differently (and chunk them differently: the demo model
  streams 8-character pieces, the mock one piece).
* ``tool-input-delta`` chunks are dropped. The mock model streams a call's arguments like a
  provider does; ADK hands over finished function calls, so ours announces them whole with
  ``tool-input-available`` (the one exception, get_location's first turn, is
  docs/internals/architecture.md#browser-tools-that-need-approval).
* ``providerMetadata`` / ``callProviderMetadata`` keys are dropped (none occur today; a real
  provider's metadata has no counterpart between Gemini and a mock).
* in the client-built messages (compared too): the same ids, and every text part's text.

Everything else is compared exactly: chunk types and order, which call each chunk names,
inputs, outputs, where outputs and denials land relative to ``start``/``start-step``, the
number of steps, ``finishReason``, the response headers and the SSE framing.

Where we intentionally differ (a client tool that needs approval: we withhold
``tool-input-available`` until it is approved, so the browser never runs it unapproved; the
reference errors on an approval sent without the output;
docs/internals/architecture.md#browser-tools-that-need-approval) the tests assert both sequences and
the difference explicitly. With two approvals in one step, both request each approval right after
its call (`test_parallel_approvals`; ADK asks after all the step's calls, so the converter holds
the later calls' chunks until it knows).
"""

from __future__ import annotations

import asyncio
import copy
import functools
from dataclasses import dataclass
from typing import Any, ClassVar

import anyio.to_thread
import httpx
import pytest

from adk_asgi import AdkApp
from demo_app import build_agent
from tests.e2e.node_client import NodeHarnessError, reference_chat, validate_sse
from tests.support import SSE_HEADERS, answer, parse_sse

pytestmark = pytest.mark.e2e

SDKS = pytest.mark.parametrize("sdk", [6, 7], ids=["v6", "v7"])

Chunk = dict[str, Any]
PARIS = {"city": "Paris", "forecast": "windy", "temperature_c": 19}
PAY_ALICE = {"amount": 5, "recipient": "alice", "currency": "USD"}
PAY_BOB = {"amount": 7, "recipient": "bob", "currency": "USD"}
SENT_ALICE = {"status": "sent", **PAY_ALICE}
SENT_BOB = {"status": "sent", **PAY_BOB}
LOCATION = {"latitude": 48.85, "longitude": 2.35}


@dataclass
class Reply:
    """One response, as sent and as the SDK's client read it."""

    chunks: list[Chunk]
    message: dict[str, Any]
    headers: dict[str, str]
    sse: str


class Ours:
    """The demo agent behind AdkApp, in process."""

    def __init__(self, sdk: int, client: httpx.AsyncClient) -> None:
        self.sdk = sdk
        self.client = client

    async def post(self, messages: list[dict[str, Any]]) -> Reply:
        body = {
            "id": "chat-1",
            "messages": messages,
            "trigger": "submit-message",
            "messageId": messages[-1]["id"],
        }
        response = await self.client.post("/chat", json=body)
        assert response.status_code == 200, response.text
        continued = messages[-1] if messages[-1]["role"] == "assistant" else None
        [read] = await anyio.to_thread.run_sync(
            functools.partial(validate_sse, [response.text], self.sdk, messages=[continued])
        )
        assert read["ok"], read
        return Reply(read["chunks"], read["message"], dict(response.headers), response.text)


class Reference:
    """The AI SDK's own server (reference-server.mjs, a kept Node process), one request at a
    time."""

    def __init__(self, sdk: int) -> None:
        self.sdk = sdk

    async def post(self, messages: list[dict[str, Any]]) -> Reply:
        read = await anyio.to_thread.run_sync(reference_chat, messages, self.sdk)
        if read["thrown"] is not None or read["status"] != 200:
            raise NodeHarnessError(f"the reference route failed: {read}")
        assert read["ok"], read
        return Reply(read["chunks"], read["message"], read["headers"], read["sse"])


async def converse(
    server: Ours | Reference, text: str, *rounds: list[dict[str, Any]]
) -> list[Reply]:
    """Send ``text``, then one continuation per round with that round's answers applied (each
    ``{"tool": name, "approved": bool}`` or ``{"tool": name, "output": value}``, see
    `tests.support.answer`) to the assistant message as the client built it."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    replies = [await server.post([user])]
    for answers in rounds:
        message = copy.deepcopy(replies[-1].message)
        for change in answers:
            answer(message, **change)
        replies.append(await server.post([user, message]))
    for reply in replies:  # the same framing: data events, then data: [DONE]
        assert parse_sse(reply.sse) == reply.chunks
    return replies


class Normalizer:
    """The normalisation of the module docstring; one instance per conversation."""

    _ID_KINDS: ClassVar[dict[str, str]] = {
        "messageId": "msg",
        "id": "text",
        "toolCallId": "call",
        "approvalId": "approval",
    }
    _DROPPED = ("providerMetadata", "callProviderMetadata")

    def __init__(self) -> None:
        self.names: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}

    def name(self, kind: str, value: str) -> str:
        if (kind, value) not in self.names:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.names[(kind, value)] = f"<{kind}{self.counts[kind]}>"
        return self.names[(kind, value)]

    def chunks(self, chunks: list[Chunk]) -> list[Chunk]:
        result: list[Chunk] = []
        for chunk in chunks:
            if chunk["type"] == "tool-input-delta":
                continue
            normal = {k: v for k, v in chunk.items() if k not in self._DROPPED}
            for key, kind in self._ID_KINDS.items():
                if isinstance(normal.get(key), str):
                    normal[key] = self.name(kind, normal[key])
            if normal["type"] == "text-delta":
                normal["delta"] = "<text>"
                if result and result[-1] == normal:
                    continue
            result.append(normal)
        return result

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        normal = {**message, "id": self.name("msg", message["id"])}
        parts = []
        for part in message["parts"]:
            part = {k: v for k, v in part.items() if k not in self._DROPPED}
            if part["type"] == "text":
                part["text"] = "<text>"
            if "toolCallId" in part:
                part["toolCallId"] = self.name("call", part["toolCallId"])
            if "approval" in part:
                part["approval"] = {
                    **part["approval"],
                    "id": self.name("approval", part["approval"]["id"]),
                }
            parts.append(part)
        normal["parts"] = parts
        return normal


@dataclass
class Transcript:
    """A conversation, normalised: the chunks of each response, and the client's last message."""

    turns: list[list[Chunk]]
    message: dict[str, Any]
    raw: list[Reply]


def transcript(replies: list[Reply]) -> Transcript:
    normalizer = Normalizer()
    turns = [normalizer.chunks(reply.chunks) for reply in replies]
    return Transcript(turns, normalizer.message(replies[-1].message), replies)


async def both(sdk: int, text: str, *rounds: list[dict[str, Any]]) -> tuple[Transcript, Transcript]:
    """The conversation against ours and against the reference, side by side."""
    app = AdkApp(build_agent(), ai_sdk_version=sdk, identify=lambda _: "conformance")
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            ours, reference = await asyncio.gather(
                converse(Ours(sdk, client), text, *rounds),
                converse(Reference(sdk), text, *rounds),
            )
    finally:
        await app.aclose()
    return transcript(ours), transcript(reference)


# --- building blocks of the expected sequences (normalised) ------------------------------------


def start(message: str = "<msg1>") -> Chunk:
    return {"type": "start", "messageId": message}


def finish(reason: str) -> Chunk:
    return {"type": "finish", "finishReason": reason}


def text_step(block: str = "<text1>") -> list[Chunk]:
    return [
        {"type": "start-step"},
        {"type": "text-start", "id": block},
        {"type": "text-delta", "id": block, "delta": "<text>"},
        {"type": "text-end", "id": block},
        {"type": "finish-step"},
    ]


def call(call_id: str, tool: str, arguments: dict[str, Any]) -> list[Chunk]:
    return [
        {"type": "tool-input-start", "toolCallId": call_id, "toolName": tool},
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": tool,
            "input": arguments,
        },
    ]


def approval_request(number: int) -> Chunk:
    return {
        "type": "tool-approval-request",
        "approvalId": f"<approval{number}>",
        "toolCallId": f"<call{number}>",
    }


PAYMENT_TURN_1 = [
    start(),
    {"type": "start-step"},
    *call("<call1>", "process_payment", PAY_ALICE),
    approval_request(1),
    {"type": "finish-step"},
    finish("tool-calls"),
]


def step_start() -> dict[str, str]:
    return {"type": "step-start"}


def text_part() -> dict[str, str]:
    return {"type": "text", "text": "<text>", "state": "done"}


def tool_part(tool: str, number: int, state: str, **fields: Any) -> dict[str, Any]:
    return {"type": f"tool-{tool}", "toolCallId": f"<call{number}>", "state": state, **fields}


def assistant(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": "<msg1>", "role": "assistant", "parts": list(parts)}


# --- where the two servers match ----------------------------------------------------------------


@SDKS
async def test_plain_text(sdk: int) -> None:
    ours, reference = await both(sdk, "hello")
    assert ours.turns == reference.turns == [[start(), *text_step(), finish("stop")]]
    assert ours.message == reference.message == assistant(step_start(), text_part())
    # the same SSE headers; `connection` is hop-by-hop, the HTTP server's business (uvicorn
    # sends it on HTTP/1.1, HTTP/2 forbids it), not the app's; ours also says `no-transform`,
    # so that no proxy compresses or buffers the stream (docs/mounting.md#nextjs-app-router)
    reference_headers = {**SSE_HEADERS, "cache-control": "no-cache", "connection": "keep-alive"}
    assert reference.raw[0].headers == reference_headers
    assert {k: ours.raw[0].headers[k] for k in SSE_HEADERS} == SSE_HEADERS


@SDKS
async def test_server_tool(sdk: int) -> None:
    """The one deliberate difference: ours says the server ran the tool (``providerExecuted``).
    The AI SDK's server goes on with the model in the same stream after its tools; an ADK
    answer can end on a tool's output (``skip_summarization``), which the stock
    lastAssistantMessageIsCompleteWithToolCalls would otherwise send again
    (docs/internals/architecture.md#tool-parts-and-helpers)."""
    ours, reference = await both(sdk, "What's the weather in Paris?")
    turn = [
        start(),
        {"type": "start-step"},
        *call("<call1>", "get_weather", {"city": "Paris"}),
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": PARIS},
        {"type": "finish-step"},
        *text_step(),
        finish("stop"),
    ]
    assert reference.turns == [turn]
    assert ours.turns == [[by_server(chunk) for chunk in turn]]
    weather = tool_part("get_weather", 1, "output-available", input={"city": "Paris"}, output=PARIS)
    message = assistant(step_start(), weather, step_start(), text_part())
    assert reference.message == message
    message["parts"][1]["providerExecuted"] = True
    assert ours.message == message


def by_server(chunk: Chunk) -> Chunk:
    """``chunk`` as ours says it of a tool the server runs unasked."""
    if chunk["type"] in ("tool-input-start", "tool-input-available"):
        return {**chunk, "providerExecuted": True}
    return chunk


@SDKS
@pytest.mark.parametrize("approved", [True, False], ids=["approved", "denied"])
async def test_approval(sdk: int, approved: bool) -> None:
    ours, reference = await both(
        sdk, "pay 5 to alice", [{"tool": "process_payment", "approved": approved}]
    )
    outcome = (
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": SENT_ALICE}
        if approved
        else {"type": "tool-output-denied", "toolCallId": "<call1>"}
    )
    # the outcome comes right after `start`, before the first step, in the same message
    assert (
        ours.turns
        == reference.turns
        == [PAYMENT_TURN_1, [start(), outcome, *text_step(), finish("stop")]]
    )
    approval = {"id": "<approval1>", "approved": approved}
    part = (
        tool_part(
            "process_payment",
            1,
            "output-available",
            input=PAY_ALICE,
            output=SENT_ALICE,
            approval=approval,
        )
        if approved
        else tool_part("process_payment", 1, "output-denied", input=PAY_ALICE, approval=approval)
    )
    assert (
        ours.message
        == reference.message
        == assistant(step_start(), part, step_start(), text_part())
    )


@SDKS
async def test_client_tool(sdk: int) -> None:
    ours, reference = await both(
        sdk, "play track 2", [{"tool": "change_bgm", "output": {"playing": 2}}]
    )
    # turn 1 ends at the call; the browser's output is consumed silently (no output chunk)
    assert (
        ours.turns
        == reference.turns
        == [
            [
                start(),
                {"type": "start-step"},
                *call("<call1>", "change_bgm", {"track": 2}),
                {"type": "finish-step"},
                finish("tool-calls"),
            ],
            [start(), *text_step(), finish("stop")],
        ]
    )
    assert (
        ours.message
        == reference.message
        == assistant(
            step_start(),
            tool_part(
                "change_bgm", 1, "output-available", input={"track": 2}, output={"playing": 2}
            ),
            step_start(),
            text_part(),
        )
    )


# --- where we differ on purpose: a client tool that needs approval -------------------------------
# (docs/internals/architecture.md#browser-tools-that-need-approval)

LOCATION_ANNOUNCED = {
    "type": "tool-input-start",
    "toolCallId": "<call1>",
    "toolName": "get_location",
}
LOCATION_AVAILABLE = {
    "type": "tool-input-available",
    "toolCallId": "<call1>",
    "toolName": "get_location",
    "input": {},
}
LOCATION_TURN_1 = {
    # the reference: the call is complete, then the approval request; the client's onToolCall
    # fires on tool-input-available, i.e. before the user has approved anything
    "reference": [
        start(),
        {"type": "start-step"},
        LOCATION_ANNOUNCED,
        LOCATION_AVAILABLE,
        approval_request(1),
        {"type": "finish-step"},
        finish("tool-calls"),
    ],
    # ours: the same without tool-input-available (the part gets its input from the
    # tool-input-delta, which the normalisation hides), so onToolCall does not fire yet
    "ours": [
        start(),
        {"type": "start-step"},
        LOCATION_ANNOUNCED,
        approval_request(1),
        {"type": "finish-step"},
        finish("tool-calls"),
    ],
}


def assert_location_turn_1(ours: Transcript, reference: Transcript) -> None:
    assert reference.turns[0] == LOCATION_TURN_1["reference"]
    assert ours.turns[0] == LOCATION_TURN_1["ours"]
    # ...and the user sees the same card either way: the call's input, awaiting approval. Ours
    # has it from the delta alone, so the client also keeps the raw text of that input.
    first = [transcript(t.raw[:1]).message for t in (ours, reference)]
    card = tool_part(
        "get_location", 1, "approval-requested", input={}, approval={"id": "<approval1>"}
    )
    assert first[1] == assistant(step_start(), card)
    assert first[0] == assistant(step_start(), {**card, "rawInput": "{}"})


@SDKS
async def test_client_tool_with_approval_denied(sdk: int) -> None:
    ours, reference = await both(sdk, "where am i", [{"tool": "get_location", "approved": False}])
    assert_location_turn_1(ours, reference)
    # the denial: as for a server tool, before the first step
    assert (
        ours.turns[1:]
        == reference.turns[1:]
        == [
            [
                start(),
                {"type": "tool-output-denied", "toolCallId": "<call1>"},
                *text_step(),
                finish("stop"),
            ]
        ]
    )
    approval = {"id": "<approval1>", "approved": False}
    part = tool_part("get_location", 1, "output-denied", input={}, approval=approval)
    assert reference.message == assistant(step_start(), part, step_start(), text_part())
    # the call was never announced whole, so the client still keeps its raw input text
    assert ours.message == assistant(
        step_start(), {**part, "rawInput": "{}"}, step_start(), text_part()
    )


@SDKS
async def test_client_tool_with_approval_pattern_a(sdk: int) -> None:
    """Approval and output in one request (the part is output-available with its approval)."""
    ours, reference = await both(
        sdk,
        "where am i",
        [{"tool": "get_location", "approved": True}, {"tool": "get_location", "output": LOCATION}],
    )
    assert_location_turn_1(ours, reference)
    assert ours.turns[1:] == reference.turns[1:] == [[start(), *text_step(), finish("stop")]]
    approval = {"id": "<approval1>", "approved": True}
    part = tool_part(
        "get_location", 1, "output-available", input={}, output=LOCATION, approval=approval
    )
    assert reference.message == assistant(step_start(), part, step_start(), text_part())
    # the call was never announced whole, so the client still keeps its raw input text
    assert ours.message == assistant(
        step_start(), {**part, "rawInput": "{}"}, step_start(), text_part()
    )


@SDKS
async def test_client_tool_with_approval_then_output(sdk: int) -> None:
    """The approval alone (what the approvals helper sends at once), then the output."""
    ours, reference = await both(
        sdk,
        "where am i",
        [{"tool": "get_location", "approved": True}],
        [{"tool": "get_location", "output": LOCATION}],
    )
    assert_location_turn_1(ours, reference)
    call_id = reference.raw[0].chunks[2]["toolCallId"]
    # the reference refuses the approval without the output (the chat goes to `error`)...
    assert reference.turns[1] == [
        start(),
        {
            "type": "error",
            "errorText": "AI_MissingToolResultsError: Tool result is missing for tool call "
            f"{call_id}.",
        },
    ]
    # ...ours announces the approved call now, so onToolCall runs the tool once, approved
    assert ours.turns[1] == [start(), LOCATION_AVAILABLE, finish("tool-calls")]
    # the output: consumed silently by both, then the answer
    assert ours.turns[2:] == reference.turns[2:] == [[start(), *text_step(), finish("stop")]]
    approval = {"id": "<approval1>", "approved": True}
    assert (
        ours.message
        == reference.message
        == assistant(
            step_start(),
            tool_part(
                "get_location", 1, "output-available", input={}, output=LOCATION, approval=approval
            ),
            step_start(),
            text_part(),
        )
    )


# --- two approvals in one step ------------------------------------------------------------------


@SDKS
@pytest.mark.parametrize(
    "decisions",
    [(True, True), (True, False), (False, True), (False, False)],
    ids=["approve-approve", "approve-deny", "deny-approve", "deny-deny"],
)
async def test_parallel_approvals(sdk: int, decisions: tuple[bool, bool]) -> None:
    ours, reference = await both(
        sdk,
        "pay 5 to alice and pay 7 to bob",
        [
            {"tool": "process_payment", "approved": decisions[0]},
            {"tool": "process_payment", "approved": decisions[1]},
        ],
    )
    alice = call("<call1>", "process_payment", PAY_ALICE)
    bob = call("<call2>", "process_payment", PAY_BOB)
    # each approval requested right after its call, as the reference does
    assert (
        ours.turns[0]
        == reference.turns[0]
        == [
            start(),
            {"type": "start-step"},
            *alice,
            approval_request(1),
            *bob,
            approval_request(2),
            {"type": "finish-step"},
            finish("tool-calls"),
        ]
    )
    # the outcomes: denials first, then the approved calls' outputs, all before the first step
    outcomes = [
        {"type": "tool-output-denied", "toolCallId": f"<call{n}>"}
        for n, ok in ((1, decisions[0]), (2, decisions[1]))
        if not ok
    ] + [
        {"type": "tool-output-available", "toolCallId": f"<call{n}>", "output": sent}
        for n, ok, sent in ((1, decisions[0], SENT_ALICE), (2, decisions[1], SENT_BOB))
        if ok
    ]
    assert (
        ours.turns[1:]
        == reference.turns[1:]
        == [[start(), *outcomes, *text_step(), finish("stop")]]
    )
    parts = [
        tool_part(
            "process_payment",
            n,
            "output-available" if ok else "output-denied",
            input=arguments,
            **({"output": sent} if ok else {}),
            approval={"id": f"<approval{n}>", "approved": ok},
        )
        for n, ok, arguments, sent in (
            (1, decisions[0], PAY_ALICE, SENT_ALICE),
            (2, decisions[1], PAY_BOB, SENT_BOB),
        )
    ]
    assert (
        ours.message
        == reference.message
        == assistant(step_start(), *parts, step_start(), text_part())
    )
