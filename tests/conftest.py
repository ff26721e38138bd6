from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.backing_services import Postgres, postgres_server, redis_server
from tests.servers import uvicorn_server


@pytest.fixture(scope="session")
def demo_server() -> Iterator[str]:
    """The demo app (scripted model) under a real uvicorn, shared by the whole session.

    Served through ``tests/e2e/demo_under_test.py``: demo_app's agent and page, with its server
    tools counting their runs per chat (``GET /test/tool-runs/{chat_id}``) and a model that
    answers texts saying "slowly" at a readable pace."""
    with uvicorn_server("tests.e2e.demo_under_test:app") as base:
        yield base


@pytest.fixture(scope="session")
def gemini_demo_server() -> Iterator[str]:
    """The same demo app as ``demo_server``, on ADK's own ``Gemini`` class: google-genai's HTTP
    and Live clients reach a Gemini stand-in (in this process) answering the demo grammar."""
    from adk_asgi.testing import demo_responder
    from adk_asgi.testing.gemini_server import GeminiStandIn
    from tests.e2e.demo_under_test import demo_pace

    with (
        GeminiStandIn(responder=demo_responder, delay=demo_pace) as gemini,
        uvicorn_server("tests.e2e.demo_under_test:gemini_app", env=gemini.environ) as base,
    ):
        yield base


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throw-away PostgreSQL cluster on loopback (Debian's package, run by
    ``tests/backing_services.py``), started on first use and removed at the end of the session:
    ``.url`` is the SQLAlchemy asyncpg URL of its test database, ``.dsn`` the plain DSN. Tests
    share the database, so each keeps to its own names (or calls ``postgres.create_database``)."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """``redis://127.0.0.1:<port>/0`` of a Redis server without persistence (Debian's package),
    started on first use and stopped at the end of the session. Tests share it, so each keeps
    to its own keys."""
    with redis_server() as url:
        yield url
