"""A client that goes away mid-stream: the run is aborted, nothing leaks, the chat is free.

On a virtual clock (``VirtualClockLoop`` in ``tests/support.py``): the model's pace is virtual
time, which passes only when no task can run, so the disconnect is always handled long before
the answer could end, however busy the machine."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import Text
from tests.support import counter, on_virtual_clock, scripted_agent, user_body


def http_scope() -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/chat",
        "raw_path": b"/chat",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"host", b"testserver")],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }


@on_virtual_clock
async def test_disconnect_mid_stream_aborts_the_run_and_leaves_no_task() -> None:
    long_answer = "word " * 400
    agent = scripted_agent([[Text(long_answer)]], chunk_size=5, delay=0.005)
    app = AdkApp(
        agent, identify=lambda conn: "u", messages=Messages(message_id_factory=counter("msg"))
    )
    body = json.dumps(user_body("hi")).encode()
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    gone = asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if gone.is_set():
            raise AssertionError(f"sent after the client left: {message}")
        sent.append(message)
        if len(sent) == 4:  # response start + three body frames
            gone.set()

    before = asyncio.all_tasks()
    await asyncio.wait_for(app(http_scope(), receive, send), timeout=10)
    assert asyncio.all_tasks() <= before
    assert len(app.locks) == 0
    assert sent[0]["status"] == 200
    assert all(m.get("more_body") for m in sent[1:])  # the body was never "finished"

    session = await app.session_service.get_session(
        app_name=app.app_name, user_id="u", session_id="chat-1"
    )
    assert session is not None
    recorded = [(e.author, e.error_code) for e in session.events]
    # ADK's record of the abort, then the text the client was shown (ADK keeps no partials)
    assert recorded == [
        ("user", None),
        ("test_agent", "INVOCATION_ABORTED"),
        ("test_agent", None),
    ]
