"""The package's shape, checked on its source (docs/architecture.md#layers): no import cycle,
not even through an import inside a function or under ``TYPE_CHECKING``, and a sans-I/O core
that imports no I/O, neither itself nor through any package module it imports."""

from __future__ import annotations

import ast
from pathlib import Path

import adk_asgi

PACKAGE = Path(adk_asgi.__file__).parent
SANS_IO = [
    "bookkeeping",
    "chunks",
    "coalesce",
    "continuation",
    "credentials",
    "convert",
    "decoding",
    "durable",
    "encoding",
    "errors",
    "failures",
    "file_urls",
    "history",
    "interrupts",
    "live_calls",
    "live_context",
    "live_events",
    "live_outputs",
    "live_phases",
    "live_protocol",
    "live_replay",
    "live_streams",
    "live_turns",
    "live_waits",
    "load",
    "messages",
    "outcomes",
    "parallel_calls",
    "pending",
    "policy",
    "safe_history",
    "sse_frames",
    "stored_replay",
    "tool_cards",
    "tool_looks",
    "translate",
]
"""Modules that must not do I/O: they take events, frames and the time, and return chunks."""
IO = {
    "anyio",
    "asyncio",
    "asyncpg",
    "httpx",
    "redis",
    "socket",
    "sqlalchemy",
    "starlette",
    "threading",
    "time",
    "uvicorn",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


TREES = {path: _parse(path) for path in PACKAGE.rglob("*.py")}
"""Every module of the package, parsed once as the tests are collected. CPython 3.11's ``ast``
keeps its recursion depth per interpreter, not per thread (gh-106905), and 3.11's
``traceback`` parses source to place its carets: a parse here while another thread formats a
traceback (pytest's hook for an exception in a thread left by an earlier test of this worker)
fails with "AST constructor recursion depth mismatch". At collection no other test has run."""


def imports_of(path: Path, modules: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """Every module this one imports, wherever the import statement stands (a name imported
    ``from`` a package counts as its submodule when it is one)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = TREES.get(path) or _parse(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            submodules = {f"{base}.{alias.name}" for alias in node.names} & modules
            found |= submodules or {base}
    return found


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph (its modules, the first repeated at the end), or ``None``."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(edges.get(node, ())):
            cycle = visit(target, [*path, node])
            if cycle is not None:
                return cycle
        done.add(node)
        return None

    for node in sorted(edges):
        cycle = visit(node, [])
        if cycle is not None:
            return cycle
    return None


def test_the_package_has_no_import_cycle() -> None:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    edges = {name: imports_of(path, modules) & modules - {name} for name, path in paths.items()}
    assert find_cycle(edges) is None


def test_the_cycle_finder_finds_a_cycle_through_any_import() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def io_imports(start: str, edges: dict[str, set[str]], modules: set[str]) -> dict[str, list[str]]:
    """The I/O modules ``start`` reaches, directly or through package modules, each with the
    import chain that reaches it (``start`` first, the I/O module last): a sans-I/O module
    that imports a package module that imports Starlette is not sans-I/O."""
    chains: dict[str, list[str]] = {start: [start]}
    found: dict[str, list[str]] = {}
    todo = [start]
    while todo:
        module = todo.pop(0)
        for target in sorted(edges[module]):
            if target in modules:
                if target not in chains:
                    chains[target] = [*chains[module], target]
                    todo.append(target)
            elif target.partition(".")[0] in IO and target not in found:
                found[target] = [*chains[module], target]
    return found


def test_the_sans_io_core_imports_no_io() -> None:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    edges = {name: imports_of(path, modules) for name, path in paths.items()}
    for name in SANS_IO:
        found = io_imports(f"adk_asgi.{name}", edges, modules)
        assert found == {}, f"adk_asgi.{name} reaches I/O: {sorted(found.values())}"


def test_the_io_check_follows_imports_through_package_modules() -> None:
    edges = {"p.core": {"p.helper", "msgspec"}, "p.helper": {"starlette.responses"}}
    assert io_imports("p.core", edges, {"p.core", "p.helper"}) == {
        "starlette.responses": ["p.core", "p.helper", "starlette.responses"]
    }
    assert io_imports("p.helper", {"p.helper": set()}, {"p.helper"}) == {}
