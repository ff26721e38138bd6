"""Live requests around the edges of a turn: an approval that times out while no request is
open, a response aborted and then cut short by the next message, answers nobody asked for, a
busy chat, and microphone audio faster than the model takes it.

Replays are also checked with the real AI SDK's stream processing (``validate_sse``): from
scratch for a ``resume`` (every client rebuilds a resumed message from its first chunk), on top
of the assistant message for a continuation.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
import pytest
import pytest_asyncio
from google.genai import types
from websockets.asyncio.client import connect

from adk_asgi import AdkApp, Limits
from adk_asgi.hitl.pending import APPROVAL_EXPIRED, chat_state
from adk_asgi.live.microphone import MAX_AUDIO_BACKLOG
from adk_asgi.live.queue import LiveQueue
from adk_asgi.testing import ChatClient, Text
from demo_app import build_agent
from tests.e2e.node_client import drive_chat_async, validate_sse
from tests.live.live_chunks import closing, squash
from tests.live.live_server import answered, chat_users, stored_history
from tests.live.live_socket import Live, open_live, serve
from tests.streams import PAY_ALICE, approval_asked
from tests.support import normalize_ids, scripted_agent

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

TIMEOUT = 0.5
HELLO = (
    'You said: "hello". I can try "weather in Paris", "pay 5 to alice", "play track 3" or'
    ' "where am i" (join them with "and" or "then").'
)
PAUSED = approval_asked("process_payment", PAY_ALICE)
"""The paused payment (``pay 5 to alice``), ids normalised."""
DENIED = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "tool-output-error", "toolCallId": "<call1>", "errorText": APPROVAL_EXPIRED},
    *closing(""),
    {"type": "finish", "finishReason": "stop"},
]
"""What the paused message goes on with once its approval timed out (as ``squash`` folds it):
closed unanswered, not the user's denial; the model read ADK's rejection."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[tuple[AdkApp, str]]:
    app = AdkApp(build_agent(), limits=Limits(approval_timeout=TIMEOUT, busy_timeout=0.2))
    async with serve(app) as url:
        yield app, url


async def sdk_accepts(chunks: list[dict[str, Any]], on_top_of: dict[str, Any] | None) -> None:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    for sdk in (6, 7):
        check = functools.partial(validate_sse, [body], sdk, None, 60, [on_top_of])
        [result] = await anyio.to_thread.run_sync(check)
        assert result["ok"], result


async def resume(live: Live, request_id: str) -> None:
    frame = {"type": "resume", "requestId": request_id, "id": live.chat_id}
    await live.socket.send(json.dumps({**frame, "headers": {}, "body": {}}))


async def next_frame(live: Live) -> dict[str, Any]:
    while True:
        message = await asyncio.wait_for(live.socket.recv(), 10)
        if isinstance(message, str):
            frame: dict[str, Any] = json.loads(message)
            return frame


async def test_a_timed_out_approval_is_resumed_as_the_whole_message(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    live, socket = await open_live(url)
    async with socket:
        first = await live.turn("pay 5 to alice")
        assert normalize_ids(first) == PAUSED
        # the approval times out: the model is told the call was rejected, and answers that
        # with no request open (its answer, stored in the session, is the observable end)
        await answered(app, live.chat_id)
        await resume(live, "resume-1")
        replay = await live.response("resume-1")
        folded, text = squash(replay)
        # the paused part without its finish, then the rest: ids as the client knows them
        assert folded == PAUSED[:-1] + DENIED
        assert (replay[6]["messageId"], replay[7]["toolCallId"]) == (
            first[0]["messageId"],
            first[2]["toolCallId"],
        )
        assert text == "Here you go: process_payment was denied."
        await sdk_accepts(replay, on_top_of=None)
        await resume(live, "resume-2")  # it was claimed: nothing is left to replay
        assert await next_frame(live) == {"type": "no-active", "requestId": "resume-2"}
    # stored as a timeout, not as the user's denial
    [user_id] = chat_users(app, live.chat_id)
    session = await app.session_service.get_session(
        app_name=app.app_name, user_id=user_id, session_id=live.chat_id
    )
    assert session is not None
    expired = chat_state(session.events, app.services.tools).expired
    assert expired == {f"approval-{first[2]['toolCallId']}"}


@pytest.mark.parametrize(("transport", "sdk"), [("ws", 7), ("ws-js", 6), ("ws-js", 7)])
async def test_an_abandoned_approval_reaches_the_real_client_as_closed_unanswered(
    server: tuple[AdkApp, str], transport: str, sdk: int
) -> None:
    """The "payment abandoned" scenario (docs/internals/architecture.md#timeouts-and-leaving) in
    live mode: the user never answers, the approval times out, and the stock client's
    ``resumeStream()`` shows the approval closed unanswered (an error saying so, not the
    user's denial) and the model's answer in the same message, ending ``ready``."""
    _, url = server
    chat_id = f"chat-{secrets.token_hex(4)}"
    base = url.replace("ws", "http", 1).removesuffix("/live")
    spec = {
        "transport": transport,
        "wsUrl": url,
        "transportJsUrl": url.replace("ws", "http", 1).removesuffix("/live") + "/transport.js",
        "chatId": chat_id,
        "headers": {"cookie": f"adk_asgi_uid={secrets.token_urlsafe(24)}"},
        "steps": [
            {"send": "pay 5 to alice"},
            # the approval timed out and the model answered the denial (stored: the history
            # shows it), with no request open
            {"until": {"url": f"{base}/chat/{chat_id}/messages", "contains": "was denied"}},
            {"resume": True},
        ],
    }
    report = await drive_chat_async(spec, sdk)
    assert (report["status"], report["error"], len(report["requests"])) == ("ready", None, 1)
    [user, assistant] = report["messages"]
    parts = assistant["parts"]
    assert [(p["type"], p.get("state"), p.get("text")) for p in parts] == [
        ("step-start", None, None),
        ("tool-process_payment", "output-error", None),
        ("step-start", None, None),
        ("text", "done", "Here you go: process_payment was denied."),
    ]
    assert parts[1]["errorText"] == APPROVAL_EXPIRED
    assert assistant["id"].startswith("msg_") and user["role"] == "user"


async def test_a_late_answer_to_a_timed_out_approval_gets_what_happened_instead(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    base = url.replace("ws://", "http://", 1).removesuffix("/live")
    async with ChatClient(base_url=base, transport="live") as chat:
        first = (await chat.send("pay 5 to alice")).chunks
        await answered(app, chat.id)  # the approval timed out; the model answered that
        reply = await chat.approve("process_payment")  # the user clicks, too late
        assert reply is not None
        continued = reply.body["messages"][-1]  # (the message the continuation carried)
        late = reply.chunks
        folded, text = squash(late)
        assert folded == DENIED
        assert (late[0]["messageId"], late[1]["toolCallId"]) == (
            first[0]["messageId"],
            first[2]["toolCallId"],
        )
        assert text == "Here you go: process_payment was denied."
        await sdk_accepts(late, on_top_of=continued)
        # the late approval ran nothing: the same answer again is refused
        refused = await chat.submit()
        assert (refused.status, refused.chunks, refused.error, refused.closed) == (
            0,
            [],
            "this request answers no open tool call of the chat",
            None,
        )


def _last_user_text(contents: list[types.Content]) -> str:
    for content in reversed(contents):
        texts = [p.text for p in content.parts or [] if p.text]
        if content.role == "user" and texts:
            return " ".join(texts)
    return ""


def _long_answer(contents: list[types.Content]) -> list[Text]:
    said = _last_user_text(contents)
    return [Text(f"About {said}: " + "and so on " * 30)]


async def test_an_aborted_answer_cut_short_by_the_next_message_stays_out_of_its_response() -> None:
    """The aborted turn goes on in the model until the next message interrupts it; that
    interruption ends the old turn, not the new message's response."""
    app = AdkApp(scripted_agent(responder=_long_answer, chunk_size=5, delay=0.01))
    async with serve(app) as url:
        live, socket = await open_live(url)
        async with socket:
            aborted = await live.send("the first thing")
            while (frame := await next_frame(live))["type"] != "chunk" or frame["chunk"][
                "type"
            ] != "text-delta":
                pass
            await socket.send(json.dumps({"type": "abort", "requestId": aborted}))
            second = await live.send("the second thing")
            frames: list[dict[str, Any]] = []
            while (frame := await next_frame(live)) != {"type": "end", "requestId": second}:
                frames.append(frame)
        started = frames.index({"type": "start", "requestId": second})
        assert [f for f in frames[started:] if f.get("requestId") != second] == []
        chunks = [f["chunk"] for f in frames[started:] if f["type"] == "chunk"]
        folded, text = squash(chunks)
        assert folded == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            {"type": "text-start", "id": "<block1>"},
            {"type": "text-delta", "id": "<block1>", "delta": "~"},
            {"type": "text-end", "id": "<block1>"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert text == "About the second thing: " + "and so on " * 30
        # history keeps the cut answer in its place, before the next message (ADK stores its
        # end after that message: the model finished or was interrupted after it arrived)
        history = await stored_history(app, live.chat_id)
    assert [(m["role"], m["id"] == chunks[0]["messageId"]) for m in history] == [
        ("user", False),
        ("assistant", False),
        ("user", False),
        ("assistant", True),
    ]
    cut = "".join(p["text"] for p in history[1]["parts"] if p["type"] == "text")
    # what the model said before the interruption (how much depends on when it came)
    assert cut and ("About the first thing: " + "and so on " * 30).startswith(cut)
    assert [p["text"] for p in history[2]["parts"]] == ["the second thing"]


async def speak(live: Live, words: str) -> None:
    await live.socket.send(json.dumps({"type": "activity-start"}))
    await live.socket.send(words.encode())
    await live.socket.send(json.dumps({"type": "activity-end"}))


async def test_two_answers_nobody_asked_for_are_both_kept_for_resume(
    server: tuple[AdkApp, str],
) -> None:
    app, url = server
    chat_id = f"chat-{secrets.token_hex(4)}"
    live, socket = await open_live(url, chat_id, chatId=chat_id, audio="1")
    async with socket:
        await speak(live, "hello")
        await answered(app, chat_id, turns=1)  # answered, with no request open
        await speak(live, "weather in Paris")
        await answered(app, chat_id, turns=2)
        replays = []
        for request_id in ("resume-1", "resume-2"):
            await resume(live, request_id)
            replays.append(squash(await live.response(request_id))[1])
        await resume(live, "resume-3")
        assert await next_frame(live) == {"type": "no-active", "requestId": "resume-3"}
    assert replays[0] == HELLO
    assert replays[1].startswith("Here you go: get_weather:")


async def test_a_busy_chat_refuses_the_request_with_an_error_frame(
    server: tuple[AdkApp, str],
) -> None:
    _, url = server
    chat_id = f"chat-{secrets.token_hex(4)}"
    browser = {"cookie": f"adk_asgi_uid={secrets.token_urlsafe(24)}"}
    async with connect(f"{url}?chatId={chat_id}", additional_headers=browser) as held:
        await Live(held, chat_id).turn("hello")  # this connection holds the chat while open
        async with connect(f"{url}?chatId={chat_id}", additional_headers=browser) as ws:
            other = Live(ws, chat_id)
            request_id = await other.send("hello again")
            assert await next_frame(other) == {
                "type": "error",
                "requestId": request_id,
                "errorText": "this chat is busy in another request or connection",
            }
            await ws.wait_closed()
            assert ws.close_code == 1013


async def test_the_audio_backlog_waits_for_the_model() -> None:
    queue = LiveQueue()
    second = b"\x00" * 32_000
    for _ in range(12):
        queue.send_realtime(types.Blob(mime_type="audio/pcm;rate=16000", data=second))
    assert queue.audio_backlog == 12 * 32_000 > MAX_AUDIO_BACKLOG
    waiting = asyncio.create_task(queue.room(MAX_AUDIO_BACKLOG // 2))
    for taken in range(1, 8):
        await queue.get()
        await asyncio.sleep(0)
        assert waiting.done() == ((12 - taken) * 32_000 <= MAX_AUDIO_BACKLOG // 2), taken
    await waiting


async def test_audio_before_any_session_is_capped_and_the_first_send_still_gets_through(
    server: tuple[AdkApp, str],
) -> None:
    """No session takes audio before the first ``send``: waiting for room there could never
    end (the ``send`` is behind the audio), so what is past the limit is dropped instead."""
    _, url = server
    live, socket = await open_live(url, audio="1")
    async with socket:
        frame = b"\x00" * 3_200  # 100 ms
        for _ in range(150):  # 15 s: past the 10 s limit
            await socket.send(frame)
        request_id = await live.send("hello")
        chunks = await live.response(request_id)
        assert squash(chunks)[1] == HELLO
