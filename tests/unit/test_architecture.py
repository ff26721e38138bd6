"""The package's shape, checked on its source (docs/internals/architecture.md#layers): no import
cycle, not even through an import inside a function or under ``TYPE_CHECKING``, and a sans-I/O core
that imports no I/O, neither itself nor through any package module it imports."""

from __future__ import annotations

import ast
from pathlib import Path

import adk_asgi

PACKAGE = Path(adk_asgi.__file__).parent
SANS_IO_LAYERS = ["adk", "errors", "wire", "hitl", "convert"]
"""The layers that do no I/O at all, every module of them: they take values (events, frames,
messages, the time) and return values."""
SANS_IO_ELSEWHERE = [
    "live.calls",
    "live.coalesce",
    "live.context",
    "live.durable",
    "live.events",
    "live.extras",
    "live.outputs",
    "live.phases",
    "live.protocol",
    "live.replay",
    "live.stored_replay",
    "live.streams",
    "live.turns",
    "live.waits",
    "serving.checks",
    "serving.file_urls",
    "serving.load",
    "serving.request_state",
]
"""The sans-I/O modules of the I/O layers: the live protocol machine and its jobs, and the
checks of a request."""
LAYERS = [
    ["adk"],
    ["errors"],
    ["wire"],
    ["hitl"],
    ["convert"],
    ["stores"],
    ["serving"],
    ["sse", "live"],
    ["routes"],
    ["*"],
    ["testing"],
    ["web"],
]
"""The layers, lowest first (docs/internals/architecture.md#layers): a module imports only from its
own layer and those below. Subpackages that share a layer (the two transports) do not import each
other. ``*`` is the application: the package's top-level modules (``app``, ``middleware``, the
import paths kept from before the layout). ``web`` (the ``adk-asgi web`` command) is the top: it
serves an agent offline on the stand-in of ``testing``. ``adk`` (the one door to ADK's internals,
:mod:`adk_asgi.adk.private`) is the bottom: every layer may use it, and it imports none."""
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


def sans_io_modules(modules: set[str]) -> list[str]:
    layers = tuple(f"adk_asgi.{layer}" for layer in SANS_IO_LAYERS)
    core = {m for m in modules if m in layers or m.startswith(tuple(f"{x}." for x in layers))}
    return sorted(core | {f"adk_asgi.{name}" for name in SANS_IO_ELSEWHERE})


def test_the_sans_io_core_imports_no_io() -> None:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    edges = {name: imports_of(path, modules) for name, path in paths.items()}
    core = sans_io_modules(modules)
    assert set(core) <= modules, set(core) - modules
    assert len(core) > 40
    for name in core:
        found = io_imports(name, edges, modules)
        assert found == {}, f"{name} reaches I/O: {sorted(found.values())}"


def layer_of(module: str) -> tuple[int, str]:
    """The layer a package module belongs to (its index in :data:`LAYERS`) and its subpackage."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "*"
    group = top if any(top in layer for layer in LAYERS) else "*"
    if group == "*" and len(parts) > 2:
        raise AssertionError(f"{module} is in a subpackage that LAYERS does not place")
    return next(i for i, layer in enumerate(LAYERS) if group in layer), group


def layering_breaches(edges: dict[str, set[str]]) -> list[str]:
    """Each import of a higher layer, or of a sibling of the same layer, as ``a -> b``."""
    breaches = []
    for source, targets in sorted(edges.items()):
        level, group = layer_of(source)
        for target in sorted(targets):
            target_level, target_group = layer_of(target)
            if target_level > level or (target_level == level and target_group != group):
                breaches.append(f"{source} -> {target}")
    return breaches


def test_no_layer_imports_a_layer_above_it() -> None:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    edges = {name: imports_of(path, modules) & modules - {name} for name, path in paths.items()}
    assert layering_breaches(edges) == []


def test_the_layer_check_finds_an_upward_and_a_sideways_import() -> None:
    edges = {
        "adk_asgi.wire.chunks": {"adk_asgi.convert.events"},
        "adk_asgi.sse.chat": {"adk_asgi.live.session", "adk_asgi.serving.services"},
        "adk_asgi.app": {"adk_asgi.sse.chat"},
    }
    assert layering_breaches(edges) == [
        "adk_asgi.sse.chat -> adk_asgi.live.session",
        "adk_asgi.wire.chunks -> adk_asgi.convert.events",
    ]


def test_the_io_check_follows_imports_through_package_modules() -> None:
    edges = {"p.core": {"p.helper", "msgspec"}, "p.helper": {"starlette.responses"}}
    assert io_imports("p.core", edges, {"p.core", "p.helper"}) == {
        "starlette.responses": ["p.core", "p.helper", "starlette.responses"]
    }
    assert io_imports("p.helper", {"p.helper": set()}, {"p.helper"}) == {}
