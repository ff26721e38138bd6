"""The connection's ``LiveRequestQueue``: a new message that closed waiting calls reaches the
model after their results (adk_asgi/live/queue.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from google.adk.agents.live_request_queue import LiveRequest
from google.genai import types

from adk_asgi.live import queue as live_queue
from adk_asgi.live.queue import LiveQueue

pytestmark = pytest.mark.asyncio


def text(said: str) -> LiveRequest:
    return LiveRequest(content=types.Content(role="user", parts=[types.Part(text=said)]))


def results(call_id: str) -> types.Content:
    answer = types.FunctionResponse(id=call_id, name="pay", response={"error": "not run"})
    return types.Content(role="user", parts=[types.Part(function_response=answer)])


async def drained(queue: LiveQueue) -> list[str]:
    """What the model reads, in order: ``text:…``, ``results:…`` or ``audio:…``."""
    read = []
    while not queue._queue.empty():
        request = await queue.get()
        if request.blob is not None:
            read.append(f"audio:{(request.blob.data or b'').decode()}")
        elif request.content is not None:
            part = (request.content.parts or [])[0]
            if part.function_response is not None:
                read.append(f"results:{part.function_response.id}")
            else:
                read.append(f"text:{part.text}")
    return read


async def test_a_message_that_closed_calls_waits_for_their_results_and_so_does_what_follows() -> (
    None
):
    queue = LiveQueue()
    queue.send(text("never mind"), after_results=True)
    queue.send(text("and hi"))
    queue.send_realtime(types.Blob(mime_type="audio/pcm;rate=16000", data=b"speech"))
    assert await drained(queue) == []
    assert queue.audio_backlog == len(b"speech")
    queue.send_content(results("c1"))  # ADK sends the closed calls' results
    assert await drained(queue) == [
        "results:c1",
        "text:never mind",
        "text:and hi",
        "audio:speech",
    ]
    assert queue.audio_backlog == 0
    queue.send(text("later"))  # nothing held any more
    assert await drained(queue) == ["text:later"]


async def test_a_message_that_closed_nothing_goes_at_once() -> None:
    queue = LiveQueue()
    queue.send(text("hi"))
    queue.send_content(results("c1"))
    assert await drained(queue) == ["text:hi", "results:c1"]


async def test_results_that_never_come_hold_the_message_for_a_bounded_time(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(live_queue, "RESULTS_WAIT", 0.01)
    queue = LiveQueue()
    queue.send(text("never mind"), after_results=True)
    with caplog.at_level(logging.WARNING, logger="adk_asgi"):
        await asyncio.sleep(0.05)
    assert await drained(queue) == ["text:never mind"]
    assert "no tool results came" in caplog.text
