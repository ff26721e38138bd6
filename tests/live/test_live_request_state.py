"""``AdkApp(request_state=...)`` in live mode: the ``body`` extras of a ``send`` frame, checked
by the app's hook, written into the session's state with the user's message, before the model
gets it (docs/sse.md#request-extras). A tool of that turn reads the value of that turn; a
refused value is an ``error`` frame, changes nothing, and the connection goes on.

Against a real uvicorn: ``ChatClient`` over its live socket, as the stock
``WebSocketChatTransport`` sends (every chunk asserted), then the real clients: ai@7's
``WebSocketChatTransport`` and ``transport.js`` with ai@6 and ai@7, extras from the
transport's ``body`` and ``sendMessage``'s.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx
import msgspec
import pytest
import pytest_asyncio
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_asgi import AdkApp, client_tool
from adk_asgi.convert.failures import MASKED
from adk_asgi.testing import Call, ChatClient, ChatResponse, ScriptedLlm, Text, Turn
from adk_asgi.testing.live_transport import LiveTransport
from adk_asgi.wire.decoding import OFF_LOOP
from tests.e2e.node_client import drive_chat_async
from tests.live.live_server import chat_users, stored_history, wait_until_closed
from tests.live.live_socket import live_chat, serve
from tests.support import normalize_ids, scripted_agent

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

REFUSED = "Invalid enum value 'loud' - at `$.mode`"
"""The hook's ``msgspec.ValidationError``, as the client reads it."""


class Extras(msgspec.Struct):
    """What the app takes from a request's extras; any other key is ignored."""

    mode: Literal["terse", "chatty"] | None = None


def request_state(extras: dict[str, Any], user_id: str) -> dict[str, Any]:
    """A request that names no mode changes none (the hook writes nothing)."""
    mode = msgspec.convert(extras, Extras).mode  # a ValidationError is a ValueError: refused
    return {} if mode is None else {"mode": mode}


def read_mode(tool_context: ToolContext) -> dict[str, str]:
    """The mode the user asked for, as the session's state holds it now."""
    return {"mode": tool_context.state.get("mode", "unset")}


@client_tool
def change_bgm(track: int) -> None:
    """Change the background music (runs in the browser)."""


def responder(contents: list[types.Content]) -> Turn:
    """Each user message: the model calls ``read_mode``, then says what it read; ``music``:
    it calls the browser's ``change_bgm`` instead."""
    for part in contents[-1].parts or []:
        if part.function_response is not None and part.function_response.name == "read_mode":
            response = part.function_response.response or {}
            return [Text(f"Answering in {response['mode']} mode.")]
        if part.function_response is not None:  # the browser's call: played, or left open
            return [Text("No music then.")]
        if part.text == "music":
            return [Call("change_bgm", {"track": 2})]
    return [Call("read_mode")]


AGENT = scripted_agent(
    responder=responder, tools=[read_mode, change_bgm], chunk_size=100, instruction="Be {mode?}."
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[tuple[AdkApp, str]]:
    app = AdkApp(AGENT, request_state=request_state)
    async with serve(app) as url:
        yield app, url


CALL = {"toolCallId": "<call1>", "toolName": "read_mode", "providerExecuted": True}
"""A server tool's call (``providerExecuted``: the client does not run it)."""


def answer(mode: str) -> list[dict[str, Any]]:
    """The whole response to one user message: the tool's call and result, then the text."""
    return [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {**CALL, "type": "tool-input-start"},
        {**CALL, "type": "tool-input-available", "input": {}},
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": {"mode": mode}},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-delta", "id": "<block1>", "delta": f"Answering in {mode} mode."},
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def state_of(app: AdkApp, chat_id: str) -> dict[str, Any]:
    [user_id] = chat_users(app, chat_id)
    session = await app.session_service.get_session(
        app_name=app.app_name, user_id=user_id, session_id=chat_id
    )
    assert session is not None
    return {k: v for k, v in session.state.items() if not k.startswith("adk_asgi:")}


def browser(url: str, **options: Any) -> ChatClient:
    """A chat with the server at ``url`` over its live socket; a new browser unless
    ``headers`` carries a cookie."""
    base = url.replace("ws://", "http://", 1).removesuffix("/live")
    return ChatClient(base_url=base, transport="live", **options)


def streamed(reply: ChatResponse | None) -> list[dict[str, Any]]:
    """The chunks of a response that streamed to its end, ids normalized."""
    assert reply is not None and (reply.status, reply.error, reply.closed) == (200, None, None)
    return normalize_ids(reply.chunks)


def refused_with(reply: ChatResponse) -> tuple[int, list[Any], str | None, Any]:
    return (reply.status, reply.chunks, reply.error, reply.closed)


async def test_each_turn_reads_its_extras_and_a_refused_one_changes_nothing(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    async with browser(url) as chat:
        # an unknown key is ignored
        hello = await chat.send("hello", body={"mode": "terse", "theme": "dark"})
        assert streamed(hello) == answer("terse")
        assert streamed(await chat.send("more", body={"mode": "chatty"})) == answer("chatty")
        refused = await chat.send("shout", body={"mode": "loud"})
        assert refused_with(refused) == (0, [], REFUSED, None)  # an error frame, nothing else
        del chat.messages[-1]  # (the user takes the refused message back)
        assert await state_of(app, chat.id) == {"mode": "chatty"}
        # no mode: the one the session holds
        assert streamed(await chat.send("again")) == answer("chatty")
        assert streamed(await chat.send("short", body={"mode": "terse"})) == answer("terse")
    assert await state_of(app, chat.id) == {"mode": "terse"}
    history = await stored_history(app, chat.id)
    users = [m["parts"][0]["text"] for m in history if m["role"] == "user"]
    assert users == ["hello", "more", "again", "short"]  # the refused message never ran


async def test_a_long_frame_decoded_off_the_loop_is_asked_too(
    server: tuple[AdkApp, str],
) -> None:
    """A frame past ``OFF_LOOP`` is decoded in a thread; its extras go the same way."""
    app, url = server
    long = "x" * (OFF_LOOP + 1)
    async with browser(url) as chat:
        assert streamed(await chat.send(long, body={"mode": "chatty"})) == answer("chatty")
        refused = await chat.send(long + "!", body={"mode": "loud"})
        assert refused_with(refused) == (0, [], REFUSED, None)
    assert await state_of(app, chat.id) == {"mode": "chatty"}


async def test_a_continuation_does_not_ask_the_hook(server: tuple[AdkApp, str]) -> None:
    """The browser's result answers a call the turn waits on: its extras are ignored (not
    refused, not written)."""
    app, url = server
    async with browser(url) as chat:
        await chat.send("music", body={"mode": "terse"})
        played = await chat.tool_result("change_bgm", {"playing": 2}, body={"mode": "loud"})
        went_on = streamed(played)
        assert went_on == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "tool-output-available", "toolCallId": "<call1>", "output": {"playing": 2}},
            {"type": "start-step"},
            {"type": "text-start", "id": "<block1>"},
            {"type": "text-delta", "id": "<block1>", "delta": "No music then."},
            {"type": "text-end", "id": "<block1>"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
    assert await state_of(app, chat.id) == {"mode": "terse"}


def buggy(extras: dict[str, Any], user_id: str) -> Any:
    """Returns what no session can store when asked for ``bug``."""
    return ["mode"] if extras.get("bug") else {"mode": "terse"}


async def test_a_failing_hook_fails_its_request_and_the_connection_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with live_chat(AdkApp(AGENT, request_state=buggy)) as chat:
        failed = await chat.send("hello", body={"bug": True})
        assert refused_with(failed) == (0, [], MASKED, None)
        assert isinstance(chat.transport, LiveTransport)
        connection = chat.transport.socket
        del chat.messages[-1]  # (the user takes the failed message back)
        assert streamed(await chat.send("again")) == answer("terse")
        assert chat.transport.socket is connection  # the same connection went on
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert (record.name, record.message) == (
        "adk_asgi",
        f"adk_asgi: the app's request_state hook raised (chat {chat.id!r}, request "
        f"{failed.body['requestId']!r}): TypeError: request_state returned list, not a mapping",
    )


def instructions() -> list[str]:
    """The system instruction of each live session the model opened, in order."""
    model = AGENT.model
    assert isinstance(model, ScriptedLlm)
    return [str(r.config.system_instruction).split("\n\n")[0] for r in model.requests]


async def test_the_instruction_reads_the_state_as_the_session_opens(
    server: tuple[AdkApp, str],
) -> None:
    """The Live API takes the system instruction once, as the session connects: ``{mode}``
    there reads the extras of the message that opens the session (a connection whose URL
    names no chat), or what the chat holds when the session opens before any message."""
    _, url = server
    cookie = {"cookie": f"adk_asgi_uid={secrets.token_urlsafe(24)}"}
    before = len(instructions())
    async with browser(url, headers=cookie) as first:
        assert streamed(await first.send("hello", body={"mode": "terse"})) == answer("terse")
    # the page reloaded, its connection naming the chat
    page = {"chat_id": first.id, "messages": first.messages, "headers": cookie}
    async with browser(url, params={"chatId": first.id}, **page) as again:
        assert streamed(await again.send("more", body={"mode": "chatty"})) == answer("chatty")
    page["messages"] = again.messages
    async with browser(url, **page) as third:  # (naming none)
        assert streamed(await third.send("and?")) == answer("chatty")  # no mode: kept
    assert instructions()[before:] == ["Be terse.", "Be terse.", "Be chatty."]


async def test_a_message_that_closes_a_call_left_open_opens_the_session_with_its_extras(
    server: tuple[AdkApp, str],
) -> None:
    """A new connection on a chat whose browser call is still open: the session settles the
    stored call with the first message (it moves on), whose extras the instruction reads."""
    app, url = server
    cookie = {"cookie": f"adk_asgi_uid={secrets.token_urlsafe(24)}"}
    async with browser(url, headers=cookie) as first:
        paused = streamed(await first.send("music", body={"mode": "terse"}))
    assert paused[-3:] == [
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "change_bgm",
            "input": {"track": 2},
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    await wait_until_closed(app)
    before = len(instructions())
    page = {"chat_id": first.id, "messages": first.messages, "headers": cookie}
    async with browser(url, params={"chatId": first.id}, **page) as again:
        assert streamed(await again.send("hello", body={"mode": "chatty"})) == answer("chatty")
    assert instructions()[before:] == ["Be chatty."]


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["type"] == "text"]


@pytest.mark.parametrize(("transport", "sdk"), [("ws", 7), ("ws-js", 6), ("ws-js", 7)])
async def test_the_real_clients_body_extras_reach_the_turns_tools(
    server: tuple[AdkApp, str], transport: str, sdk: int
) -> None:
    """The transport's ``body`` and ``sendMessage``'s, merged by the client into the ``send``
    frame's ``body``; the refused message is the chat's error, and the next one is answered."""
    app, url = server
    base = url.replace("ws", "http", 1).removesuffix("/live")
    cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    chat_id = f"chat-{secrets.token_hex(4)}"
    spec = {
        "transport": transport,
        "wsUrl": url,
        "transportJsUrl": f"{base}/transport.js",
        "chatId": chat_id,
        "headers": {"cookie": cookie},
        "body": {"mode": "terse", "theme": "dark"},
        "steps": [
            {"send": "hello"},
            {"send": {"text": "more", "body": {"mode": "chatty"}}},
            {"send": {"text": "shout", "body": {"mode": "loud"}}},
            {"send": {"text": "again", "body": {"mode": "chatty"}}},
            {"send": "short"},
        ],
    }
    report = await drive_chat_async(spec, sdk)
    assert (report["status"], report["error"], report["loop"]) == ("ready", None, False)
    sent = [(r["body"], r["messages"][-1]["parts"][0]["text"]) for r in report["requests"]]
    assert sent == [
        ({"mode": "terse", "theme": "dark"}, "hello"),
        ({"mode": "chatty", "theme": "dark"}, "more"),
        ({"mode": "loud", "theme": "dark"}, "shout"),
        ({"mode": "chatty", "theme": "dark"}, "again"),
        ({"mode": "terse", "theme": "dark"}, "short"),
    ]
    errors = [f["frame"] for f in report["frames"] if f["frame"].get("type") == "error"]
    assert errors == [
        {"type": "error", "requestId": report["requests"][2]["requestId"], "errorText": REFUSED}
    ]
    said = [(m["role"], texts(m)) for m in report["messages"]]
    assert said == [
        ("user", ["hello"]),
        ("assistant", ["Answering in terse mode."]),
        ("user", ["more"]),
        ("assistant", ["Answering in chatty mode."]),
        ("user", ["shout"]),  # refused: no answer
        ("user", ["again"]),
        ("assistant", ["Answering in chatty mode."]),
        ("user", ["short"]),
        ("assistant", ["Answering in terse mode."]),
    ]
    async with httpx.AsyncClient(base_url=base, headers={"cookie": cookie}) as http:
        stored = (await http.get(f"/chat/{chat_id}/messages")).json()
    shown = [m for m in report["messages"] if texts(m) != ["shout"]]
    assert stored == shown
    assert await state_of(app, chat_id) == {"mode": "terse"}
