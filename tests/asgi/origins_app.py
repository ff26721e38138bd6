"""The app ``tests/asgi/test_origins.py`` runs under a real uvicorn (``tests.servers``): the
scripted agent at the root, with the default origin rule (the request's own origin only)."""

from __future__ import annotations

from adk_asgi import AdkApp
from adk_asgi.testing import Text
from tests.support import scripted_agent

app = AdkApp(scripted_agent(responder=lambda contents: [Text("ok")]))
