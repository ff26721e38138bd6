from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import uvicorn_server


@pytest.fixture(scope="session")
def demo_server() -> Iterator[str]:
    """The demo app (scripted model) under a real uvicorn, shared by the whole session.

    Served through ``tests/e2e/demo_under_test.py``: demo_app's agent and page, with its server
    tools counting their runs per chat (``GET /test/tool-runs/{chat_id}``) and a model that
    answers texts saying "slowly" at a readable pace."""
    with uvicorn_server("tests.e2e.demo_under_test:app") as base:
        yield base
