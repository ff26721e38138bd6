"""The mounting recipes under real uvicorn servers, each started once per test session, the way
a user runs them: from a copy of ``examples/`` (``cd examples && uvicorn starlette_app:app``),
by the python of a venv with the built wheel installed (``wheel_python``, tests/conftest.py), in
an environment with no ``GOOGLE_*`` setting (the examples' agent then runs on the offline
stand-in, ``adk_asgi.testing.offline_gemini``) and no ``PYTHON*`` one: nothing of the checkout
is importable there."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.servers import ROOT, uvicorn_server

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


def example_server(
    python: Path,
    cwd: Path,
    app: str,
    *,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> AbstractContextManager[str]:
    """``python -m uvicorn <app>`` run in ``cwd`` as a user runs it (:func:`user_env`) on a
    fresh loopback port; its base URL."""
    return uvicorn_server(
        app, python=python, cwd=cwd, environ=user_env(**(env or {})), args=args, timeout=60
    )


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
