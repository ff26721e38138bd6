"""The public import paths: what the package exports, and the application at the top level with
everything else in its layer (docs/internals/architecture.md#layers)."""

from __future__ import annotations

from pathlib import Path

import adk_asgi

APPLICATION = {"app", "bridge", "errors", "middleware", "server_answers", "__init__"}
"""The top-level modules: the application layer itself."""


def test_every_exported_name_resolves_and_the_errors_and_stores_are_exported() -> None:
    assert {"AdkAsgiError", "ClientError", "StreamStore", "InMemoryStreamStore"} <= set(
        adk_asgi.__all__
    )
    assert all(hasattr(adk_asgi, name) for name in adk_asgi.__all__)
    assert sorted(adk_asgi.__all__) == sorted(set(adk_asgi.__all__))


def test_internals_are_not_top_level_modules() -> None:
    """The top level holds the application; everything else is in a layer."""
    top = {path.stem for path in Path(adk_asgi.__file__).parent.glob("*.py")}
    assert top == APPLICATION
