"""The peer the benches compare against: ``ag-ui-adk``, the AG-UI protocol's ADK middleware.

``pip install -e '.[bench]'`` installs it (it is not a dependency of the package). Its server
(``python -m bench.harness.serve ag_ui_adk FD``) is what its README shows: FastAPI, ``ADKAgent`` on
in-memory services and ``add_adk_fastapi_endpoint``, which answers with sse-starlette's
``EventSourceResponse``; the agent is the one every row runs (``bench.harness.agent``).

Each stream is checked as adk_asgi's are: exactly N ``TEXT_MESSAGE_CONTENT`` events whose text
is the agent's answer, no ``RUN_ERROR``, and ``RUN_FINISHED`` last.

``ADKAgent`` refuses a run beyond ``max_concurrent_executions`` (10 by default) with a
``RUN_ERROR``; the concurrency benches raise it (``BENCH_AGUI_CONCURRENCY``) so that it can take
the same bursts as adk_asgi, which has no such cap.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from bench.harness.agent import APP_NAME, USER_ID, answer_text, make_agent

AGUI_PATH: Final = "/ag-ui"
CONTENT: Final = b'"type":"TEXT_MESSAGE_CONTENT"'
"""The marker of a text delta in its stream (what the time to first text waits for)."""
DEFAULT_CONCURRENCY: Final = 10
"""``ADKAgent``'s own ``max_concurrent_executions``."""
_JSON = msgspec.json.Decoder(dict[str, Any])


def agui_app() -> Any:
    """The ag-ui-adk server (FastAPI), ``max_concurrent_executions`` from
    ``BENCH_AGUI_CONCURRENCY`` (default: its own 10)."""
    from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint
    from fastapi import FastAPI

    limit = int(os.environ.get("BENCH_AGUI_CONCURRENCY", DEFAULT_CONCURRENCY))
    agent = ADKAgent(
        adk_agent=make_agent(),
        app_name=APP_NAME,
        user_id=USER_ID,
        use_in_memory_services=True,
        max_concurrent_executions=limit,
    )
    app = FastAPI()
    add_adk_fastapi_endpoint(app, agent, path=AGUI_PATH)
    return app


def agui_body(deltas: int) -> dict[str, Any]:
    """A ``RunAgentInput`` as ``@ag-ui/client``'s ``HttpAgent`` posts it: a new thread."""
    return {
        "threadId": uuid.uuid4().hex,
        "runId": uuid.uuid4().hex,
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": str(deltas)}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


HEADERS: Final = {"accept": "text/event-stream"}


def agui_problem(payloads: Sequence[str], deltas: int) -> str:
    """Why a stream is not a whole answer of ``deltas`` deltas (``""``: it is)."""
    events = [_JSON.decode(payload) for payload in payloads]
    kinds = [event.get("type") for event in events]
    if "RUN_ERROR" in kinds:
        return f"RUN_ERROR: {events[kinds.index('RUN_ERROR')].get('message')}"
    texts = [event["delta"] for event in events if event.get("type") == "TEXT_MESSAGE_CONTENT"]
    if len(texts) != deltas:
        return f"{len(texts)} TEXT_MESSAGE_CONTENT events, expected {deltas}"
    if "".join(texts) != answer_text(deltas):
        return "the text is not the agent's answer"
    if not kinds or kinds[-1] != "RUN_FINISHED":
        return f"ends with {kinds[-1:]}, not RUN_FINISHED"
    return ""


def agui_canonical(payloads: Sequence[str]) -> list[str]:
    """The payloads with the ids that differ per run (thread, run, message) replaced, so
    streams of the same answer compare equal event for event."""
    if not payloads:
        return []
    ids: dict[str, str] = {}
    for payload in payloads[:2]:
        event = _JSON.decode(payload)
        for key, name in (("threadId", "THREAD"), ("runId", "RUN"), ("messageId", "MSG")):
            if isinstance(event.get(key), str):
                ids[event[key]] = name
    out = []
    for payload in payloads:
        for found, name in ids.items():
            payload = payload.replace(found, name)
        out.append(payload)
    return out


def agui_complete(payloads: Sequence[str]) -> bool:
    return (
        bool(payloads)
        and '"RUN_FINISHED"' in payloads[-1]
        and not any('"RUN_ERROR"' in payload for payload in payloads)
    )
