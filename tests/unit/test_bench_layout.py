"""The layout of ``bench/``: a shared harness (``bench.harness``) and one package per benchmark
(``bench.<name>``, run as ``python -m bench.<name>``), with no import cycle anywhere and no
benchmark importing another (what two share is in the harness).

The import graph is read from the source with ``ast``, every ``import`` counted wherever it is
(in a function, under ``TYPE_CHECKING``): a cycle hidden in a lazy import is still a cycle. Every
module must also be safe to import (no work at import): this test imports them all.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
HARNESS = "bench.harness"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(BENCH.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in sorted(BENCH.rglob("*.py"))}
BENCHMARKS = sorted(
    name
    for name in MODULES
    if name.count(".") == 1 and name != HARNESS and (BENCH / name.split(".")[1]).is_dir()
)


def _imports(name: str, path: Path) -> set[str]:
    """The bench modules ``name`` imports (a ``from package import submodule`` counts as the
    submodule)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                for alias in node.names
            ]
        else:
            continue
        found.update(target for target in targets if target in MODULES and target != name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, and modules that import
    themselves (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in sorted(graph[node]):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _owner(module: str) -> str:
    """The top package of a bench module below ``bench``: ``bench.harness`` or a benchmark."""
    return ".".join(module.split(".")[:2])


def test_the_benchmarks_are_packages_next_to_the_harness() -> None:
    flat = [path.name for path in BENCH.glob("*.py") if path.name != "__init__.py"]
    assert flat == [], "every benchmark is a package bench/<name>/, shared code is in the harness"
    assert HARNESS in MODULES
    assert len(BENCHMARKS) >= 9, BENCHMARKS
    for benchmark in BENCHMARKS:
        folder = BENCH / benchmark.split(".")[1]
        assert (folder / "__main__.py").is_file(), f"python -m {benchmark} needs a __main__.py"
        assert (folder / "run.py").is_file(), f"{benchmark}: what runs is in run.py"


def test_no_import_cycle_in_bench() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above would pass on a graph it cannot read: it must see a circle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["e"]]


def test_the_graph_sees_lazy_and_package_imports() -> None:
    """``from bench.harness import cli`` is an edge to ``bench.harness.cli``."""
    assert "bench.harness.cli" in GRAPH["bench.concurrency.run"]
    assert "bench.harness.agent" in GRAPH["bench.harness.serve"]


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_benchmark_imports_only_the_harness_and_itself(benchmark: str) -> None:
    others = {
        f"{module} -> {imported}"
        for module, imports in GRAPH.items()
        if _owner(module) == benchmark
        for imported in imports
        if _owner(imported) not in (benchmark, HARNESS)
    }
    assert others == set()


def test_the_harness_imports_no_benchmark() -> None:
    found = {
        f"{module} -> {imported}"
        for module, imports in GRAPH.items()
        if _owner(module) == HARNESS
        for imported in imports
        if _owner(imported) != HARNESS
    }
    assert found == set()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_bench_module_imports_without_running(module: str) -> None:
    """Importing a module does no work: ``__main__`` runs its benchmark only as ``__main__``."""
    imported = importlib.import_module(module)
    assert imported.__name__ == module


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_benchmark_has_a_main_and_a_description(benchmark: str) -> None:
    run = importlib.import_module(f"{benchmark}.run")
    assert callable(run.main)
    assert importlib.import_module(benchmark).__doc__, f"{benchmark}: its --help description"
