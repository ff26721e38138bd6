"""The thinnest HTTP server of the agent: ``run_async`` behind a raw ASGI endpoint.

``POST /bare`` with ``{"deltas": N}``: a session created in memory, then one SSE frame per
partial event, ``data: {"text": ...}``, and ``data: [DONE]``. No checks, no lock, no
converter: what any HTTP server of this agent pays over the in-process floor (uvicorn, loopback
TCP, httpx, a process woken for the request), measured in the same rounds as the other rows. The
``adk_asgi`` row over this one is the bridge's own share of the time to first text; this row
over the floor is the transport's, which no server can avoid.
"""

from __future__ import annotations

import json
from typing import Final

from google.adk.agents._streaming_mode import StreamingMode  # run_config re-exports it implicitly
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from starlette.types import ASGIApp, Receive, Scope, Send

from adk_asgi.wire.encoding import SSE_DONE
from bench.agent import APP_NAME, USER_ID, make_agent, user_message

BARE_PATH: Final = "/bare"
BARE_TEXT: Final = b'data: {"text"'
_HEADERS: Final = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


def bare_app() -> ASGIApp:
    sessions = InMemorySessionService()
    runner = Runner(app=App(name=APP_NAME, root_agent=make_agent()), session_service=sessions)
    run_config = RunConfig(streaming_mode=StreamingMode.SSE)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != BARE_PATH:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        deltas = int(json.loads(body)["deltas"])
        session = await sessions.create_session(app_name=APP_NAME, user_id=USER_ID)
        await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
        async for event in runner.run_async(
            user_id=USER_ID,
            session_id=session.id,
            new_message=user_message(deltas),
            run_config=run_config,
        ):
            parts = event.content.parts if event.partial and event.content else None
            if parts and parts[0].text:
                frame = b"data: " + json.dumps({"text": parts[0].text}).encode() + b"\n\n"
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": SSE_DONE, "more_body": False})

    return app
