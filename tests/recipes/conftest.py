"""The mounting recipes under real uvicorn servers, each started once per test session, the way
a user runs them: from a copy of ``examples/`` (``cd examples && uvicorn starlette_app:app``),
by the python of a venv with the built wheel installed (``wheel_python``, tests/conftest.py), in
an environment with no ``GOOGLE_*`` setting (the examples' agent then runs on the offline
stand-in, ``adk_asgi.testing.offline_gemini``) and no ``PYTHON*`` one: nothing of the checkout
is importable there."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.servers import ROOT, wait_ready

HOSTS = {
    "starlette": "starlette_app:app",
    "fastapi": "fastapi_app:app",
    "django": "django_project.asgi:app",
}
RECIPES = ["starlette_app", "fastapi_app", "cors_app", "auth_app", "django_project.asgi"]
"""Every example's module, as ``uvicorn <module>:app`` names it."""


def user_env(**extra: str) -> dict[str, str]:
    """This environment without ``GOOGLE_*`` (no key: the offline stand-in answers) and without
    ``PYTHON*`` (no ``PYTHONPATH`` to the checkout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTHON"))}
    return {**env, **extra}


@pytest.fixture(scope="session")
def examples_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's copy of the Python examples: the files of ``examples/`` and its Django project,
    nothing else of the checkout."""
    copy = tmp_path_factory.mktemp("user") / "examples"
    copy.mkdir()
    for example in (ROOT / "examples").glob("*.py"):
        shutil.copy2(example, copy / example.name)
    shutil.copytree(
        ROOT / "examples" / "django_project",
        copy / "django_project",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return copy


@contextmanager
def example_server(
    python: Path,
    cwd: Path,
    app: str,
    *,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> Iterator[str]:
    """``python -m uvicorn <app>`` run in ``cwd`` on a fresh loopback port; yield its base URL.

    As tests.servers.uvicorn_server does, the socket is bound here and handed over as a file
    descriptor (TCP_NODELAY set on it), so the port is known before the server starts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    command = [
        str(python),
        "-m",
        "uvicorn",
        app,
        "--fd",
        str(sock.fileno()),
        "--log-level",
        "warning",
        "--no-access-log",
        *args,
    ]
    process = subprocess.Popen(
        command, cwd=cwd, env=user_env(**(env or {})), pass_fds=[sock.fileno()]
    )
    sock.close()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base + "/", process, timeout=60)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def starlette_host(wheel_python: Path, examples_copy: Path) -> Iterator[str]:
    with example_server(wheel_python, examples_copy, HOSTS["starlette"]) as base:
        yield base


@pytest.fixture(scope="session")
def fastapi_host(wheel_python: Path, examples_copy: Path) -> Iterator[str]:
    with example_server(wheel_python, examples_copy, HOSTS["fastapi"]) as base:
        yield base


@pytest.fixture(scope="session")
def django_host(wheel_python: Path, examples_copy: Path) -> Iterator[str]:
    with example_server(wheel_python, examples_copy, HOSTS["django"]) as base:
        yield base


@pytest.fixture(scope="session")
def gated_django_host(
    wheel_python: Path, examples_copy: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The Django recipe's host with the held-open agent of ``gated_host.py``: that file, in a
    directory of its own (``--app-dir``), next to the user's copy of the examples."""
    app_dir = tmp_path_factory.mktemp("gated")
    shutil.copy2(Path(__file__).with_name("gated_host.py"), app_dir / "gated_host.py")
    with example_server(
        wheel_python, examples_copy, "gated_host:app", args=["--app-dir", str(app_dir)]
    ) as base:
        yield base


@pytest.fixture(params=sorted(HOSTS))
def host(request: pytest.FixtureRequest) -> tuple[str, str]:
    """``(name, base URL)`` of each recipe's server."""
    name: str = request.param
    base: str = request.getfixturevalue(f"{name}_host")
    return name, base
