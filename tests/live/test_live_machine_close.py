"""``WS /live`` against a real uvicorn: an input the live protocol machine's phase does not allow
(adk_asgi/live/phases.py) closes the connection with the error's code and reason — before, the
machine took it and went on in a phase nobody designed for."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from google.adk.tools.tool_context import ToolContext
from websockets.exceptions import ConnectionClosed

from adk_asgi import AdkApp
from adk_asgi.live.queue import LiveQueue
from adk_asgi.testing import Call, Text
from tests.live.live_server import wait_until_closed
from tests.live.live_socket import open_live, serve
from tests.support import scripted_agent

pytestmark = [pytest.mark.e2e]


def misstep(tool_context: ToolContext) -> dict[str, Any]:
    """A tool that reaches the connection's machine and makes a move out of turn: the stored
    calls' settling, while the session is open."""
    queue = tool_context.get_invocation_context().live_request_queue
    assert isinstance(queue, LiveQueue) and queue.waits is not None
    queue.waits.protocol.session_waiting()
    return {"done": True}


def respond(contents: list[Any]) -> list[Any]:
    return [Call("misstep", {})] if len(contents) == 1 else [Text("done")]


async def test_an_illegal_move_closes_the_connection_with_1011_and_the_reason() -> None:
    app = AdkApp(scripted_agent(responder=respond, tools=[misstep]))
    async with serve(app) as url:
        live, socket = await open_live(url)
        async with socket:
            request_id = await live.send("go")
            frames: list[dict[str, Any]] = []
            with pytest.raises(ConnectionClosed):
                while True:
                    frames.append(json.loads(await asyncio.wait_for(socket.recv(), 10)))
        await wait_until_closed(app)
    assert (socket.close_code, socket.close_reason) == (
        1011,
        "live protocol: session_waiting is not allowed while open",
    )
    message_id = frames[1]["chunk"]["messageId"]
    call = {"toolCallId": "call_1", "toolName": "misstep", "providerExecuted": True}
    chunks = [
        {"type": "start", "messageId": message_id},
        {"type": "start-step"},
        {"type": "tool-input-start", **call},
        {"type": "tool-input-available", **call, "input": {}},
    ]
    assert frames == [
        {"type": "start", "requestId": request_id},
        *(
            {"type": "chunk", "requestId": request_id, "sequence": n, "chunk": chunk}
            for n, chunk in enumerate(chunks)
        ),
    ]
