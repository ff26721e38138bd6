from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import uvicorn_server


@pytest.fixture(scope="session")
def demo_server() -> Iterator[str]:
    """The demo app (scripted model) under a real uvicorn, shared by the whole session."""
    with uvicorn_server("demo_app:app") as base:
        yield base
