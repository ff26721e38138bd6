from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.backing_services import Postgres, postgres_server, redis_server
from tests.packaging.wheel import Built, build, install_wheel, wheel_venv
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


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The sdist, and the wheel built from that sdist, of the working tree
    (tests/packaging/wheel.py): built once for the whole run, xdist workers included."""
    work = _run_directory(tmp_path_factory) / "distribution"
    record = work / "built.json"
    with _locked(work):
        if not record.exists():
            shutil.rmtree(work, ignore_errors=True)  # a build that failed in another worker
            work.mkdir()
            made = build(work)
            saved = {"sdist": str(made.sdist), "wheel": str(made.wheel), "output": made.output}
            record.write_text(json.dumps(saved))
        saved = json.loads(record.read_text())
    return Built(sdist=Path(saved["sdist"]), wheel=Path(saved["wheel"]), output=saved["output"])


@pytest.fixture(scope="session")
def wheel_python(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a throwaway venv with the wheel installed, as a user's after ``pip install
    adk-asgi`` (its dependencies, fastapi, django and uvicorn included, come from this venv:
    ``wheel_venv``). Nothing of the checkout is on its path as long as it runs outside the
    checkout without ``PYTHONPATH``. Made once for the whole run, like ``built``."""
    root = _run_directory(tmp_path_factory) / "wheel-venv"
    python = root / "venv" / "bin" / "python"
    installed = root / "installed"
    with _locked(root):
        if not installed.exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            made, _ = wheel_venv(root)
            assert made == python, made
            install_wheel(built, python)
            installed.touch()
    return python


def _run_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temp directory: the session's own, or under xdist the one its workers share
    (each worker's own is inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold ``<path>.lock``: one process of the run at a time makes ``path``."""
    with path.with_name(path.name + ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield
