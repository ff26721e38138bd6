"""The public import paths are the ones docs/reference.md lists ("Import paths"); every other
module says in its docstring (or its package's) that it is internal; and what a user reads —
README, docs/, examples/, demo_app.py — imports only from the public paths."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import adk_asgi

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"


def public_modules(reference: str) -> set[str]:
    """The modules listed under ``## Import paths``."""
    section = reference.split("## Import paths\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `(adk_asgi[\w.]*)`", section, re.M))


PACKAGE = Path(adk_asgi.__file__).parent


def every_module() -> list[str]:
    """Every module of the package, by name, from its files (none is imported)."""
    names = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def docstring(name: str) -> str:
    """A module's docstring, read from its file."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    # (a module, else a package: web/page.py sits beside web/page/, the page's files)
    source = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
    return ast.get_docstring(ast.parse(source.read_text())) or ""


def declared_internal(name: str) -> bool:
    """Whether ``name``'s docstring, or that of a package above it, marks it internal (a
    package that is public itself says its modules are internal)."""
    if re.search(r"^Internal: ", docstring(name), re.M):
        return True
    parent = name.rpartition(".")[0]
    while parent:
        doc = docstring(parent)
        if re.search(r"^Internal: |^Public: .*modules (are|named)", doc, re.M | re.S):
            return True
        parent = parent.rpartition(".")[0]
    return False


def adk_asgi_imports(source: str) -> list[str]:
    """The ``adk_asgi`` modules a piece of Python source imports."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return [name for name in found if name == "adk_asgi" or name.startswith("adk_asgi.")]


def what_users_read() -> dict[str, list[str]]:
    """Each user-facing file → the ``adk_asgi`` modules its Python imports."""
    found: dict[str, list[str]] = {}
    pages = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").rglob("*.md")]
    for page in pages:
        if "node_modules" in page.parts:
            continue
        blocks = re.findall(r"```(?:python|py)\n(.*?)```", page.read_text(), re.S)
        imports = [
            line.strip()
            for block in blocks
            for line in block.splitlines()
            if re.match(r"\s*(from|import) adk_asgi", line)
        ]
        found[str(page.relative_to(ROOT))] = [
            module for line in imports for module in adk_asgi_imports(line.strip())
        ]
    sources = [ROOT / "demo_app.py", *(ROOT / "examples").rglob("*.py")]
    for path in sources:
        if "node_modules" not in path.parts:
            found[str(path.relative_to(ROOT))] = adk_asgi_imports(path.read_text())
    return found


PUBLIC = public_modules(REFERENCE.read_text())


def test_the_listed_modules_exist_and_say_what_they_export() -> None:
    assert "adk_asgi" in PUBLIC and "adk_asgi.testing" in PUBLIC
    for name in sorted(PUBLIC):
        module = importlib.import_module(name)
        if name == "adk_asgi.web":
            continue  # (a command, not names)
        exported = getattr(module, "__all__", None)
        assert exported, f"{name} lists no __all__"
        assert all(hasattr(module, n) for n in exported), name


def test_every_other_module_is_marked_internal() -> None:
    unmarked = [n for n in every_module() if n not in PUBLIC and not declared_internal(n)]
    assert unmarked == []


def test_no_public_module_is_marked_internal() -> None:
    marked = [n for n in sorted(PUBLIC) if re.search(r"^Internal: ", docstring(n), re.M)]
    assert marked == []


def test_what_users_read_imports_only_public_paths() -> None:
    private = {
        path: sorted({m for m in modules if m not in PUBLIC})
        for path, modules in what_users_read().items()
    }
    assert {path: modules for path, modules in private.items() if modules} == {}


# --- the checks can fail ----------------------------------------------------------------------


def test_an_internal_import_in_a_sample_is_found() -> None:
    sample = "from adk_asgi.convert.events import EventConverter\nimport adk_asgi.testing\n"
    assert [m for m in adk_asgi_imports(sample) if m not in PUBLIC] == ["adk_asgi.convert.events"]


def test_a_module_without_its_mark_is_found() -> None:
    assert declared_internal("adk_asgi.convert.events")
    assert declared_internal("adk_asgi.testing.client")
    assert not declared_internal("adk_asgi")
    assert "adk_asgi.stores.locks_redis" in PUBLIC
    listed = public_modules("## Import paths\n\n- `adk_asgi`: x\n- `adk_asgi.testing`: y\n")
    assert listed == {"adk_asgi", "adk_asgi.testing"}
