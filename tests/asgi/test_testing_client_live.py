"""``ChatClient(app, transport="live")``: the same chat over the stock ``WebSocketChatTransport``
frames as over SSE — the same chunks, the same messages, the same history — the frames it
sends, a server's close reported in the response and followed by a new connection, the
cookie identity shared with SSE, and the protocol checks on what the server sends."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from adk_asgi import AdkApp, Limits, Messages
from adk_asgi.testing import (
    ChatClient,
    ChatResponse,
    Closed,
    Fail,
    LiveFrameError,
    Text,
    TransportName,
)
from tests.asgi.test_testing_client import closing, demo_app, user
from tests.servers import in_loop_uvicorn
from tests.streams import (
    PAID_ALICE_SAID,
    PAY_ALICE,
    SENT_ALICE,
    approval_asked,
    text_step,
    weather_answer,
)
from tests.support import counter, scripted_agent

TRANSPORTS: list[TransportName] = ["sse", "live"]

Play = Callable[[ChatClient], Awaitable[list[ChatResponse | None]]]


async def text_answer(chat: ChatClient) -> list[ChatResponse | None]:
    return [await chat.send("hello")]


async def server_tool(chat: ChatClient) -> list[ChatResponse | None]:
    return [await chat.send("weather in Paris")]


async def approved(chat: ChatClient) -> list[ChatResponse | None]:
    return [await chat.send("pay 5 to alice"), await chat.approve("process_payment")]


async def denied(chat: ChatClient) -> list[ChatResponse | None]:
    asked = await chat.send("pay 5 to alice")
    return [asked, await chat.deny(asked.chunks[4]["approvalId"])]


async def browser_tool(chat: ChatClient) -> list[ChatResponse | None]:
    return [await chat.send("play track 3"), await chat.tool_result("change_bgm", {"playing": 3})]


async def automatic(chat: ChatClient) -> list[ChatResponse | None]:
    """A browser tool that needs approval: the approval, then the result, each sent by the
    stock ``sendAutomaticallyWhen``."""
    asked = await chat.send("where am i")
    approved = await chat.approve("get_location")
    located = await chat.tool_result("get_location", {"city": "Paris"})
    return [asked, approved, located]


def echoed(call_id: str, output: Any) -> dict[str, Any]:
    """Live shows a browser tool's result as the tool returns it, in the continuation's
    stream; SSE has the client's part already."""
    return {"type": "tool-output-available", "toolCallId": call_id, "output": output}


@dataclass(frozen=True)
class Scenario:
    play: Play
    echoes: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The chunk live adds after ``start``, by response."""


SCENARIOS: dict[str, Scenario] = {
    "a text answer": Scenario(text_answer),
    "a server tool": Scenario(server_tool),
    "an approval approved": Scenario(approved),
    "an approval denied": Scenario(denied),
    "a browser tool's result": Scenario(browser_tool, {1: echoed("call_1", {"playing": 3})}),
    "automatic sending": Scenario(automatic, {2: echoed("call_1", {"city": "Paris"})}),
}


async def played(
    transport: TransportName, play: Play, served: bool = False
) -> tuple[list[Any], list[Any]]:
    """Each response's chunks; each response's status, message, error, finish reason and
    close, and the chat they built. ``served``: the app under uvicorn, over the network."""
    app = demo_app()
    if not served:
        return await played_on(ChatClient(app, transport=transport, **chat_one()), play)
    async with in_loop_uvicorn(app) as base:
        chat = ChatClient(base_url=base, transport=transport, **chat_one())
        return await played_on(chat, play)


def chat_one() -> dict[str, Any]:
    """The chat's id, and counted ids for its messages."""
    return {"chat_id": "chat-1", "id_factory": counter("u")}


async def played_on(chat: ChatClient, play: Play) -> tuple[list[Any], list[Any]]:
    async with chat:
        replies = [r for r in await play(chat) if r is not None]
        assert all(r.followup is None for r in replies)
        shown = [(r.status, r.message, r.error, r.finish_reason, r.closed) for r in replies]
        assert await chat.history() == chat.messages
        chunks, shown = same_approval_ids(([r.chunks for r in replies], [shown, chat.messages]))
        return chunks, shown


def same_approval_ids(played: tuple[Any, Any]) -> tuple[Any, Any]:
    """Approval ids numbered in order: ADK makes them over SSE (random), the bridge live
    (``approval-<toolCallId>``); all else must be equal."""
    text = json.dumps(played)
    found = re.findall(r'"approvalId": "([^"]+)"', text)
    for number, approval_id in enumerate(dict.fromkeys(found), 1):
        text = text.replace(f'"{approval_id}"', f'"approval-{number}"')
    chunks, shown = json.loads(text)
    return chunks, shown


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_both_transports_show_the_same_chat(scenario: Scenario) -> None:
    """Every response's status, message, error and finish reason, and the chat they build,
    are the same over SSE and over the live socket (and a reload shows that chat); the
    chunks too, but for the browser results live shows in the stream."""
    sse_chunks, sse = await played("sse", scenario.play)
    live_chunks, live = await played("live", scenario.play)
    assert live == sse
    for index, chunk in scenario.echoes.items():
        sse_chunks[index].insert(1, chunk)
    assert live_chunks == sse_chunks


@pytest.mark.e2e
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_running_server_is_driven_over_the_network(transport: TransportName) -> None:
    """``ChatClient(base_url=…)``: the same chat against uvicorn, over real sockets."""
    for scenario in (SCENARIOS["automatic sending"], SCENARIOS["an approval denied"]):
        served = await played(transport, scenario.play, served=True)
        assert served == await played(transport, scenario.play)


async def test_a_text_answer_over_live_and_its_frame() -> None:
    agent = scripted_agent([[Text("Hello there!")]], chunk_size=6)
    app = AdkApp(agent, messages=Messages(message_id_factory=counter("msg")))
    async with ChatClient(
        app, transport="live", chat_id="c", id_factory=counter("u"), headers={"x-tab": "1"}
    ) as chat:
        reply = await chat.send("hi", body={"mode": "short"})
        assert reply.body == {  # WebSocketChatTransport's send frame (no messageId: none named)
            "type": "send",
            "requestId": "r1",
            "id": "c",
            "trigger": "submit-message",
            "messages": [user("hi")],
            "headers": {"x-tab": "1"},
            "body": {"mode": "short"},
        }
        assert reply == ChatResponse(
            200,
            reply.body,
            [
                {"type": "start", "messageId": "msg1"},
                *text_step("msg1-txt1", ["Hello ", "there!"]),
                {"type": "finish", "finishReason": "stop"},
            ],
            {
                "id": "msg1",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "text", "text": "Hello there!", "state": "done"},
                ],
            },
            None,
            "stop",
        )
        assert chat.messages == [user("hi"), reply.message]
        assert await chat.history() == chat.messages


async def test_the_chat_goes_on_over_one_connection() -> None:
    """An approval answers the paused turn on the connection that asked (one live session:
    the model is not started again), its frame naming the message it continues."""
    async with ChatClient(
        demo_app(), transport="live", chat_id="chat-1", id_factory=counter("u")
    ) as chat:
        asked = await chat.send("pay 5 to alice")
        first = chat.transport.socket  # type: ignore[attr-defined]
        approval_id = asked.chunks[4]["approvalId"]
        assert asked.chunks == approval_asked(
            "process_payment", PAY_ALICE, "msg1", "call_1", approval_id
        )
        paid = await chat.approve("process_payment")
        assert paid is not None
        assert chat.transport.socket is first  # type: ignore[attr-defined]
        assert (paid.body["requestId"], paid.body["messageId"]) == ("r2", "msg1")
        assert paid.chunks == [
            {"type": "start", "messageId": "msg1"},
            {"type": "tool-output-available", "toolCallId": "call_1", "output": SENT_ALICE},
            *closing(PAID_ALICE_SAID),
            {"type": "finish", "finishReason": "stop"},
        ]


MASKED = {"errorText": "An error occurred."}


def failing_app() -> AdkApp:
    """A model that fails mid-answer, then answers."""
    agent = scripted_agent([[Text("Let me"), Fail("the model broke")], [Text("Back.")]])
    return AdkApp(agent, messages=Messages(message_id_factory=counter("msg")))


async def test_a_close_after_a_failure_is_reported_and_the_next_message_reconnects() -> None:
    async with ChatClient(
        failing_app(), transport="live", chat_id="c", id_factory=counter("u")
    ) as chat:
        failed = await chat.send("hi")
        assert failed.chunks == [
            {"type": "start", "messageId": "msg1"},
            {"type": "start-step"},
            {"type": "text-start", "id": "msg1-txt1"},
            {"type": "text-delta", "id": "msg1-txt1", "delta": "Let m"},
            {"type": "text-delta", "id": "msg1-txt1", "delta": "e"},
            {"type": "text-end", "id": "msg1-txt1"},
            {"type": "data-error", "data": MASKED, "id": "msg1-error"},
            {"type": "error", **MASKED},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "error"},
        ]
        assert (failed.status, failed.error, failed.closed) == (
            200,
            "An error occurred.",
            Closed(1011, "the live session ended after an error"),
        )
        assert chat.transport.socket is None  # type: ignore[attr-defined]
        again = await chat.send("again")
        assert (again.status, again.error, again.closed) == (200, None, None)
        assert again.chunks == [
            {"type": "start", "messageId": "msg2"},
            *text_step("msg2-txt1", ["Back."]),
            {"type": "finish", "finishReason": "stop"},
        ]


async def test_a_busy_chat_is_an_error_frame_and_a_close() -> None:
    app = demo_app(limits=Limits(busy_timeout=0))
    async with ChatClient(app, transport="live", chat_id="chat-1") as holder:
        await holder.send("hello")  # its connection holds the chat while open
        async with ChatClient(
            app, transport="live", http=holder.http, chat_id="chat-1", id_factory=counter("v")
        ) as other:
            refused = await other.send("hello again")
            reason = "this chat is busy in another request or connection"
            assert refused == ChatResponse(
                0, refused.body, [], None, reason, None, closed=Closed(1013, reason)
            )
            assert other.messages == [user("hello again", "v1")]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_refused_handshake_is_its_http_status(transport: TransportName) -> None:
    """The app refuses a stranger as it refuses the POST: its status and reason."""
    app = demo_app(identify=lambda connection: None)
    async with ChatClient(app, transport=transport, chat_id="c") as chat:
        refused = await chat.send("hi")
        assert refused == ChatResponse(401, refused.body, [], None, "authentication required", None)


async def test_the_live_handshake_carries_the_browser_cookie() -> None:
    """One browser over both transports: the cookie SSE got goes with the handshake, and a
    cookie the handshake set goes with the next HTTP request."""
    app = demo_app()
    async with ChatClient(app, chat_id="chat-1", id_factory=counter("u")) as sse:
        await sse.send("hello")
        async with ChatClient(
            app, transport="live", http=sse.http, chat_id="chat-1", messages=sse.messages
        ) as live:
            assert (await live.send("weather in Paris")).status == 200
            assert await sse.history() == live.messages  # the same user's chat
    async with ChatClient(app, transport="live", chat_id="chat-2") as first:
        await first.send("hello")  # the handshake was this browser's first request
        assert [c.name for c in first.http.cookies.jar] == ["adk_asgi_uid"]
        assert await first.history() == first.messages


async def test_a_frame_out_of_sequence_raises() -> None:
    """A server that breaks the protocol fails the test, as it would drop the stock
    transport's connection."""

    async def server(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send({"type": "websocket.accept"})
        frame = json.loads((await receive())["text"])
        request_id = frame["requestId"]
        for out in (
            {"type": "start", "requestId": request_id},
            {"type": "chunk", "requestId": request_id, "sequence": 1, "chunk": {}},
        ):
            await send({"type": "websocket.send", "text": json.dumps(out)})
        message: Message = await receive()
        assert message["type"] == "websocket.disconnect"

    async with ChatClient(server, transport="live") as chat:
        bad = {"type": "chunk", "requestId": "r1", "sequence": 1, "chunk": {}}
        with pytest.raises(LiveFrameError, match=f"^{re.escape(f'after 0 chunks: {bad!r}')}$"):
            await chat.send("hi")


def test_transport_names_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^transport: 'sse' or 'live', not 'ws'$"):
        ChatClient(demo_app(), transport="ws")  # type: ignore[arg-type]
    needs = r"^pass an ASGI app, http=<httpx.AsyncClient> or a server's base_url$"
    with pytest.raises(TypeError, match=needs):
        ChatClient(transport="live")


async def test_a_server_tool_over_live() -> None:
    async with ChatClient(
        demo_app(), transport="live", chat_id="chat-1", id_factory=counter("u")
    ) as chat:
        reply = await chat.send("weather in Paris")
        assert reply.chunks == weather_answer("msg1", "call_1", "msg1-txt1")
