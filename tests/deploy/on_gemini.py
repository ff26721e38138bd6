"""The payment app (tests/deploy/payment_app.py) on ADK's own ``Gemini`` class: the Gemini
stand-in, in the test's process, answering the demo grammar, and the environment that points
the app's workers at it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from adk_asgi.testing import demo_responder
from adk_asgi.testing.gemini_server import GeminiStandIn


@contextmanager
def on_gemini(env: dict[str, str], **pace: Any) -> Iterator[GeminiStandIn]:
    """Run the stand-in (``pace``: its ``chunk_size``, ``delay``) and add to ``env``, in place,
    what a worker started with it needs to reach it (``PAYMENT_MODEL=gemini``)."""
    with GeminiStandIn(responder=demo_responder, **pace) as gemini:
        env |= {**gemini.environ, "PAYMENT_MODEL": "gemini"}
        yield gemini
