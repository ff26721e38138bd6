"""Live mode against a real uvicorn in the test's own event loop (so leaked tasks are visible):
approval timeout, disconnect mid-approval and mid-stream, abort, client-tool timeout, barge-in,
history after human in the loop, 100 concurrent connections (server and browser tools), audio."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from itertools import accumulate
from typing import Any

import httpx
import pytest
import pytest_asyncio
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from adk_asgi import AdkApp, Limits
from adk_asgi.serving import load
from adk_asgi.testing import Call, ChatClient, Text, demo_model, read_ui_message
from adk_asgi.wire.values import CHAT_ID_RULE
from demo_app import build_agent
from tests.live.live_chunks import HELLO, closing, joined, squash
from tests.live.live_server import (
    answered,
    leftover_tasks,
    stored_history,
    until,
    wait_until_closed,
)
from tests.live.live_socket import (
    Live,
    cookie_of,
    http_history,
    live_chat,
    open_live,
    send_resume,
    serve,
    text_frames_until_end,
    unframe,
)
from tests.streams import PAID_ALICE_SAID, WEATHER_SAID, chunked, text_step, weather_answer
from tests.support import CountedSessions, answer, normalize_ids, scripted_agent

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[tuple[AdkApp, str]]:
    app = AdkApp(build_agent(), limits=Limits(approval_timeout=0.5))
    async with serve(app) as url:
        yield app, url


def browser(url: str) -> ChatClient:
    """A new browser's chat with the server at ``url``, over its live socket."""
    base = url.replace("ws://", "http://", 1).removesuffix("/live")
    return ChatClient(base_url=base, transport="live")


async def test_disconnect_mid_approval_leaves_no_task_and_a_consistent_chat(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    baseline = asyncio.all_tasks()
    async with browser(url) as chat:
        first = (await chat.send("pay 5 to alice")).chunks
        call_id = first[2]["toolCallId"]
        await chat.disconnect()
        await wait_until_closed(app)
        leaked = await leftover_tasks(baseline)
        assert leaked == []
        # the abandoned call was answered (denied), so the chat resumes cleanly
        # (the same browser, on a new connection; another one would open a chat of its own)
        reconnected, text = squash((await chat.send("hello")).chunks)
    # the answer to "hello", all of it, not the model's words on the payment it cut short
    assert reconnected == [
        {"type": "start", "messageId": "<msg1>"},
        *closing(text),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert text == HELLO
    history = await stored_history(app, chat.id)
    payment = history[1]["parts"][1]
    # closed unanswered by the new message, not denied by the user
    assert (payment["toolCallId"], payment["state"], payment["errorText"]) == (
        call_id,
        "output-error",
        "Not run: a new message was sent before the approval was answered.",
    )


async def test_abort_stops_a_response_and_the_connection_goes_on(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    live, socket = await open_live(url)
    async with socket:
        aborted = await live.send("weather in Paris")
        await socket.send(json.dumps({"type": "abort", "requestId": aborted}))
        await answered(app, live.chat_id)  # the aborted turn went on in the model, and ended
        next_id = await live.send("hello")
        chunks, text = squash(await live.response(next_id))
        assert text.startswith('You said: "hello"')
        assert chunks[0]["type"] == "start" and chunks[-1] == {
            "type": "finish",
            "finishReason": "stop",
        }


async def test_a_hundred_concurrent_connections_lose_and_reorder_nothing(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server

    async def one() -> tuple[list[dict[str, Any]], str]:
        # (raw: a hundred ChatClient handshakes at once time out, see live_socket's docstring)
        live, socket = await open_live(url)
        async with socket:
            return squash(await live.turn("weather in Paris"))

    results = await asyncio.gather(*(one() for _ in range(100)))
    expected = weather_answer(deltas=["~"])  # squashed
    for chunks, text in results:
        assert chunks == expected
        assert text == WEATHER_SAID
    await wait_until_closed(app)


async def test_audio_round_trip(server: tuple[AdkApp, str]) -> None:
    app, url = server
    chat_id = f"voice-{secrets.token_hex(4)}"
    live, socket = await open_live(url, chat_id, chatId=chat_id, audio="1")
    async with socket:
        await socket.send(json.dumps({"type": "activity-start"}))
        await socket.send(b"weather in Paris")  # the scripted model "hears" UTF-8 text
        await socket.send(json.dumps({"type": "activity-end"}))
        audio = bytearray()
        while not audio.decode(errors="ignore").endswith("}."):
            message = await asyncio.wait_for(socket.recv(), 10)
            if isinstance(message, bytes):
                audio += message
        assert audio.decode() == WEATHER_SAID
        # the voice turn had no request: once it is over, its transcript and chunks are there
        # for a resume
        await answered(app, chat_id)
        await socket.send(
            json.dumps(
                {"type": "resume", "requestId": "v1", "id": live.chat_id, "headers": {}, "body": {}}
            )
        )
        replay = await live.response("v1")
    heard = [c for c in replay if c["type"] == "data-transcript"]
    assert heard[-1]["data"] == {"role": "user", "text": "weather in Paris", "final": True}
    text = "".join(c["delta"] for c in replay if c["type"] == "text-delta")
    assert text == WEATHER_SAID
    assert [c["type"] for c in replay if c["type"].startswith("tool-")] == [
        "tool-input-start",
        "tool-input-available",
        "tool-output-available",
    ]


async def test_ping_is_answered(server: tuple[AdkApp, str]) -> None:
    _, url = server
    _, socket = await open_live(url)
    async with socket:
        await socket.send(json.dumps({"type": "ping"}))
        assert json.loads(await asyncio.wait_for(socket.recv(), 5)) == {"type": "pong"}


async def test_a_duplicated_approval_runs_the_tool_once(server: tuple[AdkApp, str]) -> None:
    _, url = server
    live, socket = await open_live(url)
    async with socket:
        first = await live.turn("pay 5 to alice")
        approval_id = first[-3]["approvalId"]
        answer(live.assistant, "process_payment", approved=True)
        approved = await live.send()
        again = await live.send()  # the same approval, a double click away
        chunks: list[dict[str, Any]] = []
        refusal: dict[str, Any] | None = None
        ended = False
        while refusal is None or not ended:
            frame = json.loads(await asyncio.wait_for(socket.recv(), 10))
            if frame.get("requestId") == again:
                refusal = frame
            elif frame.get("requestId") == approved and frame["type"] == "chunk":
                chunks.append(frame["chunk"])
            elif frame.get("requestId") == approved and frame["type"] == "end":
                ended = True
    # refused either while the first answer still streams, or after, as no longer open
    assert refusal is not None and refusal["errorText"] in {
        "a response is still streaming on this connection",
        f"approval {approval_id!r} is not open in this chat",
    }
    _, text = squash(chunks)
    assert [c["type"] for c in chunks].count("tool-output-available") == 1
    assert text == PAID_ALICE_SAID


async def test_a_token_can_travel_as_a_subprotocol() -> None:
    seen: list[str] = []

    def identify(conn: Any) -> str | None:
        offered = conn.scope.get("subprotocols") or []
        token = next((p.removeprefix("token.") for p in offered if p.startswith("token.")), None)
        seen.append(token or "")
        return f"token-user-{token}" if token else None

    async with serve(AdkApp(build_agent(), identify=identify)) as url:
        async with connect(url, subprotocols=["token.abc"]) as socket:  # type: ignore[list-item]
            assert socket.subprotocol == "token.abc"
            await socket.send(json.dumps({"type": "ping"}))
            assert json.loads(await asyncio.wait_for(socket.recv(), 5)) == {"type": "pong"}
        with pytest.raises(InvalidStatus, match="HTTP 401"):
            await connect(url)
    assert seen == ["abc", ""]


async def test_a_first_visit_over_live_gets_the_identity_cookie_history_needs(
    server: tuple[AdkApp, str],
) -> None:
    _, url = server
    chat_id = f"chat-{secrets.token_hex(4)}"
    async with connect(f"{url}?chatId={chat_id}") as socket:  # no cookie yet: a first visit
        set_cookie = socket.response.headers["set-cookie"]
        live = Live(socket, chat_id)
        await live.turn("hello")
    cookie = set_cookie.split(";", 1)[0]
    assert cookie.startswith("adk_asgi_uid=") and "HttpOnly" in set_cookie
    base = url.replace("ws://", "http://").removesuffix("/live")
    async with httpx.AsyncClient() as client:
        mine = await client.get(f"{base}/chat/{chat_id}/messages", headers={"cookie": cookie})
        stranger = await client.get(f"{base}/chat/{chat_id}/messages")
    assert [m["role"] for m in mine.json()] == ["user", "assistant"]
    assert (stranger.status_code, stranger.json()) == (404, {"error": "this chat does not exist"})


async def test_a_resume_sent_as_the_user_stops_talking_gets_the_voice_answer(
    server: tuple[AdkApp, str],
) -> None:
    _, url = server
    chat_id = f"voice-{secrets.token_hex(4)}"
    live, socket = await open_live(url, chat_id, chatId=chat_id, audio="1")
    async with socket:
        await socket.send(json.dumps({"type": "activity-start"}))
        await socket.send(b"hello")
        await socket.send(json.dumps({"type": "activity-end"}))
        resume = {"type": "resume", "requestId": "v1", "id": chat_id, "headers": {}, "body": {}}
        await socket.send(json.dumps(resume))  # at once, as the demo page does
        chunks = await live.response("v1")
    assert [c["data"] for c in chunks if c["type"] == "data-transcript"][-1] == {
        "role": "user",
        "text": "hello",
        "final": True,
    }
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}
    assert [c["type"] for c in chunks].count("text-start") == 1


async def test_a_new_message_closes_the_browser_calls_left_open(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    async with browser(url) as chat:
        bgm = (await chat.send("play track 3")).chunks
        hello = (await chat.send("hello")).chunks
    assert [c for c in hello if c["type"].startswith("tool-")] == []  # not this message's
    await wait_until_closed(app)
    history = await stored_history(app, chat.id)
    tools = [p for m in history for p in m["parts"] if p["type"].startswith("tool-")]
    assert [(t["toolCallId"], t["state"], t.get("errorText")) for t in tools] == [
        (bgm[3]["toolCallId"], "output-error", "The user moved on before the browser answered.")
    ]


async def test_a_send_frame_is_checked_like_an_sse_body(server: tuple[AdkApp, str]) -> None:
    _, url = server
    chat_id = f"chat-{secrets.token_hex(4)}"
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    frames = [
        (
            {"id": chat_id, "trigger": "regenerate-message"},
            "regenerating is not supported in live mode: ADK takes back whole invocations, and"
            " a live connection is one",
        ),
        ({"id": "not/a/chat"}, f"id: {CHAT_ID_RULE}"),
        (
            {"id": chat_id, "body": {"confirmationPayloads": "seat 14C"}},
            "confirmationPayloads: expected an object of approval id → payload",
        ),
    ]
    async with connect(url, additional_headers={"cookie": "adk_asgi_uid=" + "a" * 32}) as socket:
        for number, (fields, reason) in enumerate(frames):
            frame = {"type": "send", "requestId": f"r{number}", "messages": [user], **fields}
            await socket.send(json.dumps(frame))
            reply = json.loads(await asyncio.wait_for(socket.recv(), 5))
            assert reply == {"type": "error", "requestId": f"r{number}", "errorText": reason}


async def test_a_malformed_chat_id_in_the_handshake_is_refused(
    server: tuple[AdkApp, str],
) -> None:
    _, url = server
    with pytest.raises(InvalidStatus, match="HTTP 400") as refused:
        await connect(f"{url}?chatId=../etc")
    assert json.loads(refused.value.response.body)["error"].startswith("chatId: ")


def book_flight(destination: str, tool_context: ToolContext) -> dict[str, Any]:
    """Book a flight; the user picks the seat."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(
            hint="Pick a seat", payload={"seat": None, "options": ["1A", "14C"]}
        )
        tool_context.actions.skip_summarization = True
        return {"status": "waiting for a seat"}
    if not confirmation.confirmed:
        return {"status": "cancelled"}
    return {"status": "booked", "destination": destination, "seat": confirmation.payload["seat"]}


@pytest.mark.parametrize("approved", [True, False])
async def test_a_tool_can_ask_for_confirmation_with_a_payload(approved: bool) -> None:
    results: list[Any] = []

    def respond(contents: list[types.Content]) -> list[Any]:
        parts = [p for c in contents for p in c.parts or []]
        results[:] = [p.function_response.response for p in parts if p.function_response]
        return [Text("Done.")] if results else [Call("book_flight", {"destination": "Oslo"})]

    agent = scripted_agent(responder=respond, tools=[book_flight])
    app = AdkApp(agent)
    async with live_chat(app) as chat:
        first = (await chat.send("fly")).chunks
        request = first[-3]
        assert request == {
            "type": "tool-approval-request",
            "approvalId": "approval-call_1",
            "toolCallId": "call_1",
            "approvalDescriptor": {
                "hint": "Pick a seat",
                "payload": {"seat": None, "options": ["1A", "14C"]},
            },
        }
        payloads = {"confirmationPayloads": {"approval-call_1": {"seat": "14C"}}}
        decided = await chat.approve("book_flight", approved, body=payloads)
        assert decided is not None
        second = decided.chunks
        await chat.disconnect()
        await wait_until_closed(app)
        history = await stored_history(app, chat.id)
    outcome = (
        {
            "type": "tool-output-available",
            "toolCallId": "<call1>",
            "output": {"status": "booked", "destination": "Oslo", "seat": "14C"},
        }
        if approved
        else {"type": "tool-output-denied", "toolCallId": "<call1>"}
    )
    assert normalize_ids(second) == [
        {"type": "start", "messageId": "<msg1>"},
        outcome,
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-delta", "id": "<block1>", "delta": "Done."},
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert results == [  # what the model read: the tool's own answer to the user's decision
        {"status": "booked", "destination": "Oslo", "seat": "14C"}
        if approved
        else {"status": "cancelled"}
    ]
    flight = history[1]["parts"][1]
    assert (flight["type"], flight["state"]) == (
        "tool-book_flight",
        "output-available" if approved else "output-denied",
    )


# --- disconnects, timeouts, barge-in and history, each with its own server --------------------


def deltas(block: str, text: str, size: int = 8) -> list[dict[str, Any]]:
    """The text deltas of ``text`` as the scripted model streams them (``chunk_size`` 8)."""
    return [
        {"type": "text-delta", "id": block, "delta": text[i : i + size]}
        for i in range(0, len(text), size)
    ]


def text_block(block: str, text: str) -> list[dict[str, Any]]:
    """One step of model text, exactly as it streams (``chunk_size`` 8)."""
    return text_step(block, chunked(text, 8))


def weather_turn(message: str, call: str, block: str) -> list[dict[str, Any]]:
    """The whole response to "weather in Paris", ids as ``normalize_ids`` names them, its text
    in the deltas the demo model streams (``chunk_size`` 8)."""
    return weather_answer(message, call, block, deltas=chunked(WEATHER_SAID, 8))


async def test_disconnect_mid_stream_leaves_no_task_and_frees_the_chat() -> None:
    app = AdkApp(build_agent(demo_model(delay=0.05)))  # "hello" takes ~1 s to answer
    async with serve(app) as url:
        baseline = asyncio.all_tasks()
        chat_id = f"cut-{secrets.token_hex(4)}"
        live, socket = await open_live(url, chat_id, chatId=chat_id)
        cookie = cookie_of(socket)
        async with socket:
            request_id = await live.send("hello")
            frames = [json.loads(await asyncio.wait_for(socket.recv(), 10)) for _ in range(6)]
            assert load.streams() == 1  # counted: its deltas' pace (serving/load.py)
        # the browser went away two deltas into the answer
        chunks = [frame.pop("chunk") for frame in frames[1:]]
        assert frames == [
            {"type": "start", "requestId": request_id},
            *({"type": "chunk", "requestId": request_id, "sequence": n} for n in range(5)),
        ]
        assert normalize_ids(chunks) == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            {"type": "text-start", "id": "<block1>"},
            *deltas("<block1>", HELLO)[:2],
        ]
        await wait_until_closed(app)
        assert await leftover_tasks(baseline) == []
        assert load.streams() == 0
        # the same browser on the same chat at once: the chat's lock was released, and the
        # model answers the message it was cut off on again, from the start (nobody asked)
        again, socket = await open_live(url, chat_id, cookie=cookie, chatId=chat_id)
        async with socket:

            async def under_way() -> bool:  # its text is recorded: the answer is under way
                return len(await http_history(url, cookie, chat_id)) >= 2

            await until(under_way, "the model answers the history again")
            await send_resume(socket, chat_id, "resume-1")  # as a page coming back does
            resumed = unframe(await text_frames_until_end(socket, "resume-1"), "resume-1")
            turn = await again.turn("weather in Paris")
        await wait_until_closed(app)
        history = await http_history(url, cookie, chat_id)
    assert normalize_ids(resumed + turn) == [
        {"type": "start", "messageId": "<msg1>"},
        *text_block("<block1>", HELLO),
        {"type": "finish", "finishReason": "stop"},
        *weather_turn("<msg2>", "<call1>", "<block2>"),
    ]
    # the cut answer was never finished, so only its second telling is recorded
    answered = read_ui_message(resumed)
    assert history == [live.user, answered, again.user, again.assistant]


PLAY_TRACK_2 = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "change_bgm"},
    {
        "type": "tool-input-available",
        "toolCallId": "<call1>",
        "toolName": "change_bgm",
        "input": {"track": 2},
    },
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "tool-calls"},
]
"""The paused browser call of "play track 2", ids normalised."""


async def test_a_browser_tool_that_never_answers_times_out_and_the_turn_goes_on() -> None:
    app = AdkApp(build_agent(), limits=Limits(client_tool_timeout=0.2))
    async with serve(app) as url:
        live, socket = await open_live(url)
        async with socket:
            first = await live.turn("play track 2")
            assert normalize_ids(first) == PLAY_TRACK_2
            # the browser never answered: past client_tool_timeout, the model was told, and
            # its answer to that is over (stored in the session; no request reads it)
            await answered(app, live.chat_id)
            # nothing reached the client meanwhile: the next frame answers its resume
            await send_resume(socket, live.chat_id, "resume-1")
            replay = unframe(await text_frames_until_end(socket, "resume-1"), "resume-1")
        await wait_until_closed(app)
        history = await http_history(url, cookie_of(socket), live.chat_id)
    said = 'Here you go: change_bgm: {"error": "The browser did not answer in time."}.'
    # a resumed message is rebuilt from its first chunk: the paused part, then the rest,
    # all under the message id the client knows (as for an approval that timed out)
    assert normalize_ids(first + replay) == [
        *PLAY_TRACK_2,
        *PLAY_TRACK_2[:-1],
        {"type": "start", "messageId": "<msg1>"},
        {
            "type": "tool-output-error",
            "toolCallId": "<call1>",
            "errorText": "The browser did not answer in time.",
        },
        *text_block("<block1>", said),
        {"type": "finish", "finishReason": "stop"},
    ]
    resumed = read_ui_message(replay)
    assert history == [live.user, resumed]
    assert resumed["parts"][1] == {
        "type": "tool-change_bgm",
        "toolCallId": first[2]["toolCallId"],
        "state": "output-error",
        "input": {"track": 2},
        "errorText": "The browser did not answer in time.",
    }


def fold_frames(frames: list[str | bytes]) -> tuple[list[Any], dict[str, str], bytes, bytes]:
    """A live audio conversation, comparable exactly: its text frames with chunk ids normalised
    and each run of text deltas folded into one ``~``; the text each request's deltas spelled;
    and the speech (binary frames) before and after the ``interrupted`` frame."""
    texts = [json.loads(f) for f in frames if isinstance(f, str)]
    cut = frames.index('{"type":"interrupted"}')
    before = b"".join(f for f in frames[:cut] if isinstance(f, bytes))
    after = b"".join(f for f in frames[cut:] if isinstance(f, bytes))
    sequences: dict[str, int] = {}
    spelled: dict[str, str] = {}
    chunks = normalize_ids([t["chunk"] for t in texts if t["type"] == "chunk"])
    folded: list[Any] = []
    for frame in texts:
        if frame["type"] != "chunk":
            folded.append(frame)
            continue
        request_id = frame["requestId"]
        assert frame["sequence"] == sequences.get(request_id, 0), frame
        sequences[request_id] = frame["sequence"] + 1
        chunk = chunks.pop(0)
        if chunk["type"] == "text-delta":
            spelled[request_id] = spelled.get(request_id, "") + chunk["delta"]
            if folded[-1].get("chunk", {}).get("type") == "text-delta":
                continue
            chunk = {**chunk, "delta": "~"}
        folded.append({"requestId": request_id, "chunk": chunk})
    return folded, spelled, before, after


@pytest.mark.parametrize(("sdk", "reason"), [("7", "interrupted"), ("6", "other")])
async def test_barge_in_ends_the_spoken_answer_and_the_next_is_a_new_response(
    sdk: str, reason: str
) -> None:
    app = AdkApp(build_agent(demo_model(delay=0.05)))  # "hello" takes ~1 s to say
    async with serve(app) as url:
        live, socket = await open_live(url, audio="1", sdk=sdk)
        async with socket:
            typed = await live.send("hello")
            frames: list[str | bytes] = []
            while not frames or frames[-1] != '{"type":"end","requestId":"voice"}':
                message = await asyncio.wait_for(socket.recv(), 10)
                frames.append(message)
                if isinstance(message, bytes):
                    if sum(isinstance(f, bytes) for f in frames) == 2:
                        # the user talks over the model's second word
                        await socket.send(json.dumps({"type": "activity-start"}))
                        await socket.send(b"weather in Paris")
                        await socket.send(json.dumps({"type": "activity-end"}))
                elif json.loads(message) == {"type": "end", "requestId": typed}:
                    await send_resume(socket, live.chat_id, "voice")  # as the page does
        await wait_until_closed(app)
    folded, spelled, before, after = fold_frames(frames)

    def typed_chunk(chunk: dict[str, Any]) -> dict[str, Any]:
        return {"requestId": typed, "chunk": chunk}

    def voice_chunk(chunk: dict[str, Any]) -> dict[str, Any]:
        return {"requestId": "voice", "chunk": chunk}

    heard = "<block2>"
    assert (
        folded
        == [
            {"type": "start", "requestId": typed},
            *map(
                typed_chunk,
                [
                    {"type": "start", "messageId": "<msg1>"},
                    {"type": "start-step"},
                    {"type": "text-start", "id": "<block1>"},
                    {"type": "text-delta", "id": "<block1>", "delta": "~"},
                    {"type": "text-end", "id": "<block1>"},
                ],
            ),
            {"type": "interrupted"},  # the client stops playing what it has queued
            typed_chunk({"type": "finish-step"}),
            typed_chunk({"type": "finish", "finishReason": reason}),
            {"type": "end", "requestId": typed},
            {"type": "start", "requestId": "voice"},
            *map(
                voice_chunk,
                [
                    {"type": "start", "messageId": "<msg2>"},
                    *(
                        {
                            "type": "data-transcript",
                            "id": heard,
                            "data": {"role": "user", "text": text, "final": final},
                        }
                        for text, final in [
                            ("weather ", False),
                            ("weather in Paris", False),
                            ("weather in Paris", True),
                        ]
                    ),
                    *weather_turn("<msg2>", "<call1>", "<block3>")[1:8],
                    {"type": "text-delta", "id": "<block3>", "delta": "~"},
                    *weather_turn("<msg2>", "<call1>", "<block3>")[-3:],
                ],
            ),
            {"type": "end", "requestId": "voice"},
        ]
    )
    # the answer stopped where the user cut in: what was said is what was shown
    assert 0 < len(spelled[typed]) < len(HELLO)
    assert HELLO.startswith(spelled[typed])
    assert before.decode() == spelled[typed]
    assert spelled["voice"] == WEATHER_SAID
    assert after.decode() == spelled["voice"]


async def test_history_after_live_human_in_the_loop_is_what_the_stream_showed() -> None:
    app = AdkApp(build_agent())
    async with live_chat(app) as chat:
        tool_chunks: list[dict[str, Any]] = []
        for text, tool, answers in [
            ("pay 5 to alice", "process_payment", [{"approved": True}]),
            ("pay 7 to bob", "process_payment", [{"approved": False}]),
            ("play track 2", "change_bgm", [{"output": {"track": 2, "playing": True}}]),
            ("where am i", "get_location", [{"approved": True}, {"output": {"city": "Oslo"}}]),
        ]:
            chunks = (await chat.send(text)).chunks
            for change in answers:
                if "approved" in change:
                    went_on = await chat.approve(tool, change["approved"])
                else:
                    went_on = await chat.tool_result(tool, change["output"])
                assert went_on is not None
                chunks += went_on.chunks
            tool_chunks += [c for c in chunks if c["type"].startswith("tool-")]
        shown = chat.messages  # the chat as the client holds it
        await chat.disconnect()
        await wait_until_closed(app)
        history = await chat.history()
    # the stream, as exactly as the history has to match it
    assert normalize_ids(tool_chunks) == [
        {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "process_payment"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "process_payment",
            "input": {"amount": 5, "recipient": "alice", "currency": "USD"},
        },
        {"type": "tool-approval-request", "approvalId": "<approval1>", "toolCallId": "<call1>"},
        {
            "type": "tool-output-available",
            "toolCallId": "<call1>",
            "output": {"status": "sent", "amount": 5, "recipient": "alice", "currency": "USD"},
        },
        {"type": "tool-input-start", "toolCallId": "<call2>", "toolName": "process_payment"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call2>",
            "toolName": "process_payment",
            "input": {"amount": 7, "recipient": "bob", "currency": "USD"},
        },
        {"type": "tool-approval-request", "approvalId": "<approval2>", "toolCallId": "<call2>"},
        {"type": "tool-output-denied", "toolCallId": "<call2>"},
        {"type": "tool-input-start", "toolCallId": "<call3>", "toolName": "change_bgm"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call3>",
            "toolName": "change_bgm",
            "input": {"track": 2},
        },
        {
            "type": "tool-output-available",
            "toolCallId": "<call3>",
            "output": {"track": 2, "playing": True},
        },
        # a browser tool that needs approval shows its input only once approved
        {"type": "tool-input-start", "toolCallId": "<call4>", "toolName": "get_location"},
        {"type": "tool-input-delta", "toolCallId": "<call4>", "inputTextDelta": "{}"},
        {"type": "tool-approval-request", "approvalId": "<approval3>", "toolCallId": "<call4>"},
        {
            "type": "tool-input-available",
            "toolCallId": "<call4>",
            "toolName": "get_location",
            "input": {},
        },
        {"type": "tool-output-available", "toolCallId": "<call4>", "output": {"city": "Oslo"}},
    ]
    # a reload shows the same messages, ids and tool parts in their true states
    assert history == shown
    calls = [c["toolCallId"] for c in tool_chunks if c["type"] == "tool-input-start"]
    assert [p for m in history for p in m["parts"] if p["type"].startswith("tool-")] == [
        {
            "type": "tool-process_payment",
            "toolCallId": calls[0],
            "state": "output-available",
            "input": {"amount": 5, "recipient": "alice", "currency": "USD"},
            "approval": {"id": f"approval-{calls[0]}", "approved": True},
            "output": {"status": "sent", "amount": 5, "recipient": "alice", "currency": "USD"},
        },
        {
            "type": "tool-process_payment",
            "toolCallId": calls[1],
            "state": "output-denied",
            "input": {"amount": 7, "recipient": "bob", "currency": "USD"},
            "approval": {"id": f"approval-{calls[1]}", "approved": False},
        },
        {
            "type": "tool-change_bgm",
            "toolCallId": calls[2],
            "state": "output-available",
            "input": {"track": 2},
            "output": {"track": 2, "playing": True},
        },
        {
            "type": "tool-get_location",
            "toolCallId": calls[3],
            "state": "output-available",
            "input": {},
            "approval": {"id": f"approval-{calls[3]}", "approved": True},
            "output": {"city": "Oslo"},
        },
    ]


async def test_a_hundred_concurrent_browser_tool_round_trips_lose_and_reorder_nothing(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server

    async def one(track: int) -> None:
        # (raw: a hundred ChatClient handshakes at once time out, see live_socket's docstring)
        live, socket = await open_live(url)
        async with socket:
            paused = await live.turn(f"play track {track}")
            answer(live.assistant, "change_bgm", output={"track": track, "playing": True})
            done = await live.turn()
        said = f'Here you go: change_bgm: {{"playing": true, "track": {track}}}.'
        chunks = normalize_ids(paused + done)
        # Deltas that come within live_write_interval of each other go out as one frame, so
        # how the text is cut depends on timing (and load): compared joined, and each frame
        # must carry whole deltas of the model (8 characters each), none split or lost.
        cuts = list(accumulate(len(c["delta"]) for c in chunks if c["type"] == "text-delta"))
        assert all(cut % 8 == 0 or cut == len(said) for cut in cuts), cuts
        assert joined(chunks) == joined(
            [
                {"type": "start", "messageId": "<msg1>"},
                {"type": "start-step"},
                {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": "change_bgm"},
                {
                    "type": "tool-input-available",
                    "toolCallId": "<call1>",
                    "toolName": "change_bgm",
                    "input": {"track": track},
                },
                {"type": "finish-step"},
                {"type": "finish", "finishReason": "tool-calls"},
                {"type": "start", "messageId": "<msg1>"},
                {
                    "type": "tool-output-available",
                    "toolCallId": "<call1>",
                    "output": {"track": track, "playing": True},
                },
                *text_block("<block1>", said),
                {"type": "finish", "finishReason": "stop"},
            ]
        )

    await asyncio.gather(*(one(track) for track in range(1, 101)))
    await wait_until_closed(app)


async def test_history_after_a_voice_turn_shows_what_the_model_said() -> None:
    """A reload shows the spoken answer as the stream showed it: its transcript as text.

    The user's own words (a ``data-transcript`` part in the stream) are left out of the
    comparison: whether a reload shows them there or as a user message is the app's choice.
    """
    app = AdkApp(build_agent())
    async with serve(app) as url:
        chat_id = f"voice-{secrets.token_hex(4)}"
        live, socket = await open_live(url, chat_id, audio="1", chatId=chat_id)
        async with socket:
            await socket.send(json.dumps({"type": "activity-start"}))
            await socket.send(b"weather in Paris")
            await socket.send(json.dumps({"type": "activity-end"}))
            await send_resume(socket, chat_id, "voice")  # as the page does
            answered = await live.response("voice")
        await wait_until_closed(app)
        history = await http_history(url, cookie_of(socket), chat_id)
    assert normalize_ids(answered) == [
        {"type": "start", "messageId": "<msg1>"},
        *(
            {
                "type": "data-transcript",
                "id": "<block1>",
                "data": {"role": "user", "text": text, "final": final},
            }
            for text, final in [
                ("weather ", False),
                ("weather in Paris", False),
                ("weather in Paris", True),
            ]
        ),
        *weather_turn("<msg1>", "<call1>", "<block2>")[1:],
    ]

    def spoken(message: dict[str, Any]) -> dict[str, Any]:
        return {**message, "parts": [p for p in message["parts"] if p["type"] != "data-transcript"]}

    shown = read_ui_message(answered)
    assert [spoken(m) for m in history if m["role"] == "assistant"] == [spoken(shown)]


async def test_a_chat_whose_last_answer_was_spoken_is_not_answered_again_on_reconnect() -> None:
    """ADK keeps a spoken answer as its transcription alone (no content): the history then
    ends with the model's turn all the same, so a new connection must not wait for the model
    to answer it again — the next typed message gets its own answer, in order."""
    app = AdkApp(build_agent())
    async with serve(app) as url:
        voice, socket = await open_live(url, audio="1")
        async with socket:
            spoken = await voice.turn("hello")  # typed, answered aloud
        cookie = cookie_of(socket)
        await wait_until_closed(app)
        typed, socket = await open_live(url, voice.chat_id, cookie=cookie)
        async with socket:
            folded, text = squash(await typed.turn("hello again"))
        history = await http_history(url, cookie, voice.chat_id)
    assert [c["type"] for c in spoken][-1] == "finish"
    assert folded == [
        {"type": "start", "messageId": "<msg1>"},
        *closing(text),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert text.startswith('You said: "hello again".')
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[2] == typed.user


async def test_a_live_connection_reads_its_session_once() -> None:
    """``run_live`` is handed the session the connection opened (serving/session_handover.py), as an
    SSE request's run is: a database service would read every event of the chat again."""
    sessions = CountedSessions()
    app = AdkApp(build_agent(), session_service=sessions)
    async with serve(app) as url:
        chat_id = f"once-{secrets.token_hex(4)}"
        live, socket = await open_live(url, chat_id, chatId=chat_id)
        async with socket:
            turn = await live.turn("weather in Paris")
        await wait_until_closed(app)
    kinds = [chunk["type"] for chunk in turn]
    assert kinds[-1] == "finish" and "error" not in kinds
    assert sessions.reads[chat_id] == 1
