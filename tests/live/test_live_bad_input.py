"""``WS /live`` against a real uvicorn: frames the bridge cannot take get an ``error`` frame and
the connection goes on (it used to die with 1006), a frame over ``max_frame_size`` closes it
with 1009 and a reason, what is sent before a session is not kept, and a flood is answered
in full while the client reads, or closed with 1008 and a reason when it does not."""

from __future__ import annotations

import asyncio
import gc
import json
import secrets
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from adk_asgi import AdkApp, Limits
from adk_asgi.live.microphone import EARLY_AUDIO_FRAMES
from adk_asgi.live.outbox import NOT_READING, Outbox
from adk_asgi.live.outputs import OpenSession, Replay, Settle
from adk_asgi.live.protocol import EARLY_SPEECH, QUEUED_SENDS, REPLAYS
from adk_asgi.live.queue import LiveQueue
from adk_asgi.testing import Text
from adk_asgi.wire.decoding import MAX_DEPTH
from tests.servers import in_loop_uvicorn as serve
from tests.support import scripted_agent
from tests.unit.live_machine import Machine

pytestmark = [pytest.mark.e2e]

COOKIE = {"cookie": "adk_asgi_uid=" + "b" * 32}
DEEP = f"the JSON is nested deeper than {MAX_DEPTH} levels"


def echo_app(**options: Any) -> AdkApp:
    return AdkApp(scripted_agent(responder=lambda contents: [Text("ok")]), **options)


def live_url(url: str, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return url.replace("http://", "ws://") + "/live" + (f"?{query}" if query else "")


def send_frame(request_id: str, chat_id: str, **extra: Any) -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    return {"type": "send", "requestId": request_id, "id": chat_id, "messages": [user], **extra}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


async def pong(socket: ClientConnection, within: float = 5) -> None:
    """The socket still answers: a ``ping`` gets its ``pong`` (after every frame sent before
    it, which the server reads in order) within ``within`` seconds."""
    await socket.send(json.dumps({"type": "ping"}))
    assert json.loads(await asyncio.wait_for(socket.recv(), within)) == {"type": "pong"}


async def test_a_send_frame_the_bridge_cannot_take_gets_an_error_frame_and_stays_open() -> None:
    chat_id = f"chat-{secrets.token_hex(4)}"
    good = json.dumps(send_frame("r0", chat_id))
    cases = [
        # the requestId is read, and named, whenever the frame can be read that far
        (
            good.replace('"id"', '"x": 1e400, "id"', 1),
            "r0",
            "x: a number is out of range: Number out of range",
        ),
        (good.replace('"id"', f'"x": {nested(MAX_DEPTH)}, "id"', 1), "r0", DEEP),
        (good.replace('"id"', f'"x": {nested(1_000)}, "id"', 1), "", DEEP),
        (good.replace('"id"', f'"x": {nested(100_000)}, "id"', 1), "", DEEP),
        (
            good.replace('"hi"', '"h\\u0000i"'),
            "r0",
            "a string holds NUL (\\u0000), which cannot be stored",
        ),
        (
            good.replace('"r0"', '"r0\\n"'),
            "",
            "requestId: an id is 1-256 characters, none of them a control character",
        ),
    ]
    async with serve(echo_app()) as url, connect(live_url(url), additional_headers=COOKIE) as ws:
        for frame, request_id, reason in cases:
            await ws.send(frame)
            reply = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert reply == {"type": "error", "requestId": request_id, "errorText": reason}
            await pong(ws)
        await ws.send(json.dumps(send_frame("r1", chat_id)))
        assert json.loads(await asyncio.wait_for(ws.recv(), 5)) == {
            "type": "start",
            "requestId": "r1",
        }


async def test_a_frame_over_max_frame_size_closes_the_socket_with_1009_and_a_reason() -> None:
    """By default the limit is ``max_body_size``: a 15.5 MB frame used to be decoded and
    handled (SSE refuses the same body with 413)."""
    async with (
        serve(echo_app()) as url,
        connect(live_url(url), additional_headers=COOKIE, max_size=None) as ws,
    ):
        await ws.send(json.dumps(send_frame("r1", "c1", x="y" * (4 * 1024 * 1024))))
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
    assert (ws.close_code, ws.close_reason) == (1009, "a frame is larger than 4194304 bytes")
    async with (
        serve(echo_app(limits=Limits(max_frame_size=1000))) as url,
        connect(live_url(url, audio="1"), additional_headers=COOKIE) as ws,
    ):
        await ws.send(b"\x00" * 1001)
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
    assert (ws.close_code, ws.close_reason) == (1009, "a frame is larger than 1000 bytes")


def live_queues() -> list[LiveQueue]:
    """Every live connection's model queue (its ``LiveRequestQueue``) in the process."""
    return [q for q in gc.get_objects() if isinstance(q, LiveQueue)]


def queued_requests(before: list[LiveQueue]) -> list[int]:
    """What the model queues made since ``before`` (held, so not collected) hold: an earlier
    test's connections in this worker process may not be collected yet."""
    return [q._queue.qsize() for q in live_queues() if not any(q is old for old in before)]


async def test_what_comes_before_a_session_is_not_kept() -> None:
    """100,000 ``activity-start``/``audio-end`` frames before a session opens added 80 MB
    (812 B a frame) for as long as the socket was open; tiny audio frames too."""
    before = live_queues()
    async with (
        serve(echo_app()) as url,
        connect(live_url(url, audio="1"), additional_headers=COOKIE) as ws,
    ):
        for number in range(100_000):
            kind = "activity-start" if number % 2 else "audio-end"
            await ws.send(json.dumps({"type": kind}))
        for _ in range(10_000):
            await ws.send(b"\x00\x00")
        await pong(ws, within=30)  # 110,000 frames to read first: seconds on a loaded machine
        assert queued_requests(before) == [EARLY_SPEECH + EARLY_AUDIO_FRAMES]


async def test_a_client_that_floods_while_reading_gets_every_answer() -> None:
    """It used to be cut after 2,000-4,700 answers, closed with 1000 as if all were well."""
    async with serve(echo_app()) as url, connect(live_url(url), additional_headers=COOKIE) as ws:

        async def flood() -> None:
            for _ in range(5_000):
                await ws.send('{"type": "ping"}')

        sending = asyncio.create_task(flood())
        answers = [json.loads(await asyncio.wait_for(ws.recv(), 10)) for _ in range(5_000)]
        await sending
        assert answers == [{"type": "pong"}] * 5_000
        await pong(ws)


async def test_an_outbox_the_client_does_not_read_closes_with_1008_and_a_reason() -> None:
    """What the model says is paced to the reader, and what the reader answers waits for room
    (above); what is left to overflow — a stored answer replayed to a client that does not
    read — closes the connection with 1008 and why (it was 1000, as if all were well)."""
    outbox = Outbox(size=4)
    for number in range(5):
        outbox.put(f"frame {number}")
    assert (outbox.overflowed, outbox.closed) == (True, True)
    assert [await outbox.get() for _ in range(5)] == [f"frame {n}" for n in range(4)] + [None]
    assert NOT_READING == (1008, "the client did not read what it was sent")


def test_sends_waiting_for_the_chats_stored_calls_are_bounded() -> None:
    """While a chat's stored calls wait for the user, each ``send`` is settled against the
    session one at a time; a flood of them was queued without bound. Past the limit each gets
    an ``error`` frame, and a settled request makes room again."""
    live = Machine()
    live.take(live.protocol.bind("chat-1"))
    live.take(live.protocol.session_waiting())
    for number in range(QUEUED_SENDS + 1):
        live.receive(**send_frame(f"s{number}", "chat-1"))
    live.take(live.protocol.refused("s0", "answers no waiting call"))
    live.receive(**send_frame("s17", "chat-1"))
    assert live.frames == [
        {
            "type": "error",
            "requestId": f"s{QUEUED_SENDS}",
            "errorText": "too many requests wait for the chat's calls",
        },
        {"type": "error", "requestId": "s0", "errorText": "answers no waiting call"},
    ]
    settled = [o.request_id for o in live.others if isinstance(o, Settle)]
    assert settled == [f"s{n}" for n in range(QUEUED_SENDS)] + ["s17"]


def test_what_waits_for_the_session_or_the_store_is_bounded() -> None:
    """``send`` frames waiting for the session to open, and ``resume``s read from the stream
    store, are refused past their limit, each with an ``error`` frame naming it."""
    live = Machine(stored_streams=True)
    live.take(live.protocol.bind("chat-1"))
    for number in range(QUEUED_SENDS + 1):
        live.receive(**send_frame(f"s{number}", "chat-1"))
    for number in range(REPLAYS + 1):
        live.receive(type="resume", requestId=f"r{number}")
    assert live.frames == [
        {
            "type": "error",
            "requestId": f"s{QUEUED_SENDS}",
            "errorText": "too many requests wait for the session to open",
        },
        {
            "type": "error",
            "requestId": f"r{REPLAYS}",
            "errorText": f"more than {REPLAYS} resumes under way on this connection",
        },
    ]
    assert live.others == [OpenSession("chat-1"), *(Replay(f"r{n}") for n in range(REPLAYS))]
