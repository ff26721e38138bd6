"""The mounting recipes under real uvicorn servers, each started once per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import uvicorn_server

HOSTS = {
    "starlette": "examples.starlette_app:app",
    "fastapi": "examples.fastapi_app:app",
    "django": "examples.django_project.asgi:app",
}


@pytest.fixture(scope="session")
def starlette_host() -> Iterator[str]:
    with uvicorn_server(HOSTS["starlette"]) as base:
        yield base


@pytest.fixture(scope="session")
def fastapi_host() -> Iterator[str]:
    with uvicorn_server(HOSTS["fastapi"]) as base:
        yield base


@pytest.fixture(scope="session")
def django_host() -> Iterator[str]:
    with uvicorn_server(HOSTS["django"]) as base:
        yield base


@pytest.fixture(scope="session")
def gated_django_host() -> Iterator[str]:
    """The Django recipe's host with the held-open agent of ``gated_host.py``."""
    with uvicorn_server("tests.recipes.gated_host:app") as base:
        yield base


@pytest.fixture(params=sorted(HOSTS))
def host(request: pytest.FixtureRequest) -> tuple[str, str]:
    """``(name, base URL)`` of each recipe's server."""
    name: str = request.param
    base: str = request.getfixturevalue(f"{name}_host")
    return name, base
