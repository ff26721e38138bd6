"""An app with a message metadata hook, as docs/metadata.md shows it: the demo's agent, and
each assistant message's ``createdAt``, ``model``, ``totalTokens`` and ``finishReason``.

Run with ``uvicorn tests.e2e.metadata_app:app`` (tests/e2e/test_metadata_clients.py).
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp, MessageMoment, Messages
from adk_asgi.testing import demo_model
from demo_app import build_agent


def message_metadata(moment: MessageMoment) -> dict[str, Any] | None:
    if moment.kind == "start":
        return {"createdAt": round((moment.started_at or 0) * 1000)}
    if moment.kind == "finish":
        return {
            "model": moment.model_version,
            "totalTokens": moment.usage.get("totalTokens"),
            "finishReason": moment.finish_reason,
        }
    return None  # (each "finish-step")


app = Starlette(
    routes=[
        Mount(
            "/agent",
            app=AdkApp(
                build_agent(demo_model()),
                live_agent=build_agent(demo_model()),
                messages=Messages(message_metadata=message_metadata),
            ),
        )
    ],
)
