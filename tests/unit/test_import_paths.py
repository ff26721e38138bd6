"""The public import paths: what the package exports, and every path the docs showed before
the layered layout, still importable and naming the same objects
(docs/internals/architecture.md#layers)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import adk_asgi

KEPT_PATHS = {
    "adk_asgi.resumable": ("adk_asgi.stores.resumable", ["InMemoryStreamStore", "StreamStore"]),
    "adk_asgi.resumable_redis": ("adk_asgi.stores.resumable_redis", ["RedisStreamStore"]),
    "adk_asgi.locks_redis": ("adk_asgi.stores.locks_redis", ["RedisChatLocks"]),
    "adk_asgi.locks_postgres": ("adk_asgi.stores.locks_postgres", ["PostgresChatLocks"]),
    "adk_asgi.claims_sql": ("adk_asgi.stores.claims_sql", ["SqlClaims"]),
    "adk_asgi.failures": (
        "adk_asgi.convert.failures",
        ["AgentError", "ErrorHandler", "mask_errors", "show_errors"],
    ),
}
"""Each import path of the earlier docs → the module that now holds its names."""

APPLICATION = {"app", "errors", "middleware", "server_answers", "__init__"}
"""The top-level modules that are the application layer itself, not kept paths."""


@pytest.mark.parametrize("old", sorted(KEPT_PATHS))
def test_an_import_path_of_the_earlier_docs_names_the_same_objects(old: str) -> None:
    new, names = KEPT_PATHS[old]
    kept, moved = importlib.import_module(old), importlib.import_module(new)
    assert kept.__all__ == names
    assert [getattr(kept, name) for name in names] == [getattr(moved, name) for name in names]


def test_every_exported_name_resolves_and_the_errors_and_stores_are_exported() -> None:
    assert {"AdkAsgiError", "ClientError", "StreamStore", "InMemoryStreamStore"} <= set(
        adk_asgi.__all__
    )
    assert all(hasattr(adk_asgi, name) for name in adk_asgi.__all__)
    assert sorted(adk_asgi.__all__) == sorted(set(adk_asgi.__all__))


def test_internals_are_not_top_level_modules() -> None:
    """The top level holds the application and the kept paths; everything else is in a layer."""
    top = {path.stem for path in Path(adk_asgi.__file__).parent.glob("*.py")}
    assert top == APPLICATION | {old.removeprefix("adk_asgi.") for old in KEPT_PATHS}
