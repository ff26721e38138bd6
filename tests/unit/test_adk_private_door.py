"""ADK's internals have one door, adk_asgi/adk/private.py
(docs/internals/architecture.md#adks-internals): no other module of the package,
adk_asgi/testing/ included, uses a private module, name or attribute of ``google-adk``. Checked
on the source with ``ast`` (comments and docstrings that explain ADK's behaviour by its private
names are fine), each breach named ``file:line``.

What counts as a use:

* an import from a ``google.adk`` module path with a ``_``-prefixed segment, or of a
  ``_``-prefixed name from any ``google.adk`` module (an import inside a function or under
  ``TYPE_CHECKING`` too), or such a path in a string (``importlib.import_module``);
* ``x._name`` on a name imported from ``google.adk`` (a module or a class);
* ``x._name`` (or ``getattr(x, "_name")``) whose ``_name`` the door itself reads from ADK;
* ``x._name`` (or ``getattr``) on anything but ``self`` / ``cls`` whose ``_name`` the package
  does not define itself (as ``self._name = …``, a class attribute or a method), nor the
  standard library's named tuples (``_replace``, ``_asdict``…): a private attribute of an
  object that is not the package's is someone else's, most likely ADK's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import adk_asgi

PACKAGE = Path(adk_asgi.__file__).parent
DOOR = PACKAGE / "adk" / "private.py"
STDLIB_PRIVATE = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
"""Documented API of the standard library with a leading underscore (named tuples)."""


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


TREES = {path: _parse(path) for path in sorted(PACKAGE.rglob("*.py"))}
"""Parsed once as the tests are collected (tests/unit/test_architecture.py says why)."""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[:2] == ["google", "adk"] and any(_private(part) for part in parts)


def _adk(module: str) -> bool:
    return module == "google.adk" or module.startswith("google.adk.")


def own_private_names(trees: list[ast.Module]) -> frozenset[str]:
    """The ``_names`` the package defines itself: attributes set on ``self`` / ``cls``, class
    attributes (slots included) and methods."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        names.add(item.name)
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        names.add(item.target.id)
                    elif isinstance(item, ast.Assign):
                        targets = [t.id for t in item.targets if isinstance(t, ast.Name)]
                        names.update(targets)
                        if "__slots__" in targets and isinstance(item.value, ast.Tuple | ast.List):
                            names.update(
                                e.value
                                for e in item.value.elts
                                if isinstance(e, ast.Constant) and isinstance(e.value, str)
                            )
    return frozenset(name for name in names if _private(name))


def _attribute_reads(tree: ast.Module) -> list[tuple[int, str, str]]:
    """Every ``x._name`` and ``getattr(x, "_name", …)`` (and ``hasattr``, ``setattr``) but on
    ``self`` / ``cls``: ``(line, the object's text, _name)``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append((node.lineno, ast.unparse(node.value), node.attr))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append((node.lineno, ast.unparse(node.args[0]), node.args[1].value))
    return found


def door_names(door: ast.Module) -> frozenset[str]:
    """The private ADK names the door uses: those it imports and the attributes it reads."""
    names = {
        alias.name
        for node in ast.walk(door)
        if isinstance(node, ast.ImportFrom) and _adk(node.module or "")
        for alias in node.names
        if _private(alias.name)
    }
    return frozenset(names | {name for _, _, name in _attribute_reads(door)})


def breaches(
    label: str, tree: ast.Module, own: frozenset[str], adk_names: frozenset[str]
) -> list[str]:
    """Each use of ADK's internals in one module, as ``label:line: what``."""
    found: list[str] = []
    from_adk: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _adk(node.module or ""):
            module = node.module or ""
            names = [alias.name for alias in node.names]
            if _private_module(module):
                found.append(f"{label}:{node.lineno}: imports from ADK's private {module}")
            found.extend(
                f"{label}:{node.lineno}: imports ADK's private {module}.{name}"
                for name in names
                if _private(name)
            )
            from_adk.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _private_module(alias.name):
                    found.append(f"{label}:{node.lineno}: imports ADK's private {alias.name}")
                if _adk(alias.name):
                    from_adk.add(alias.asname or alias.name.partition(".")[0])
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _private_module(node.value)
            and " " not in node.value
        ):
            found.append(f"{label}:{node.lineno}: names ADK's private module {node.value}")
    for line, owner, name in _attribute_reads(tree):
        root = owner.partition(".")[0].partition("(")[0]
        if root in from_adk:
            found.append(f"{label}:{line}: reads ADK's private {owner}.{name}")
        elif name in adk_names:
            found.append(f"{label}:{line}: reads {owner}.{name}, an ADK internal of the door")
        elif name not in own and name not in STDLIB_PRIVATE:
            found.append(f"{label}:{line}: reads {owner}.{name}, a private attribute not ours")
    return sorted(found, key=lambda breach: int(breach.split(":")[1]))


def _all_breaches() -> list[str]:
    own = own_private_names(list(TREES.values()))
    adk_names = door_names(TREES[DOOR])
    found = []
    for path, tree in TREES.items():
        if path != DOOR:
            label = str(path.relative_to(PACKAGE.parent))
            found.extend(breaches(label, tree, own, adk_names))
    return found


def test_only_the_door_uses_adks_internals() -> None:
    assert _all_breaches() == [], (
        "ADK's internals are used outside adk_asgi/adk/private.py: move each use there, as a"
        " function with what it relies on and a test in tests/unit/test_adk_private.py"
    )


def test_the_door_uses_what_it_documents() -> None:
    """The door's own uses are what the check forbids elsewhere (so the check has teeth)."""
    names = door_names(TREES[DOOR])
    assert {"_apply_rewinds", "_event_queue", "_invocation_context", "_db_path"} <= names
    assert "_defers_response" in names and "_require_confirmation" in names


SAMPLES = {
    "from google.adk.tools._node_tool import NodeTool": "imports from ADK's private",
    "import google.adk.events._rewind_events as rewinds": "imports ADK's private",
    "from google.adk.auth.auth_credential import _CREDENTIAL_SECRET_KEYS": "imports ADK's",
    "def f():\n    from google.adk.utils._callback_pipeline import _run_callbacks": "private",
    "from google.adk.utils import streaming_utils\nstreaming_utils._parse_json_path('$')": "reads",
    "from google.adk.tools.function_tool import FunctionTool\nFunctionTool._get_mandatory_args": (
        "reads ADK's private FunctionTool._get_mandatory_args"
    ),
    "def f(tool):\n    return tool._defers_response": "an ADK internal of the door",
    "def f(tool):\n    return getattr(tool, '_require_confirmation', False)": "of the door",
    "def f(context):\n    return context._some_new_adk_attribute": "a private attribute not ours",
    "import importlib\nimportlib.import_module('google.adk.tools._node_tool')": "names ADK's",
}
"""Sources the check must refuse, each with (part of) what it says."""

FINE = [
    "from google.adk.errors import StaleSessionError",
    "from google.adk.agents.run_config import RunConfig",
    "class A:\n    def __init__(self):\n        self._mine = 1\n    def f(self, other):\n"
    "        return other._mine",
    "def f(parts):\n    return parts._replace(fragment='')",
    '"""See ``google.adk.events._rewind_events._apply_rewinds`` for the rule."""',
    "# from google.adk.tools._node_tool import NodeTool",
]
"""Sources the check must let through: public ADK, the package's own private attributes,
named tuples, ADK's private names in prose."""


def test_the_check_finds_each_kind_of_use_with_its_line() -> None:
    adk_names = door_names(TREES[DOOR])
    for source, says in SAMPLES.items():
        tree = ast.parse(source)
        found = breaches("adk_asgi/x.py", tree, own_private_names([tree]), adk_names)
        line = source.count("\n") + 1
        assert found, source
        assert any(f"adk_asgi/x.py:{line}: " in f and says in f for f in found), (source, found)


def test_the_check_lets_public_adk_and_the_packages_own_names_through() -> None:
    adk_names = door_names(TREES[DOOR])
    for source in FINE:
        tree = ast.parse(source)
        assert breaches("adk_asgi/x.py", tree, own_private_names([tree]), adk_names) == [], source


def test_a_new_private_import_elsewhere_fails_the_check() -> None:
    """The whole check, on the package's modules plus one more that imports an internal."""
    module = PACKAGE / "hitl" / "new_module.py"
    trees = {**TREES, module: ast.parse("from google.adk.workflow._errors import X\n")}
    own = own_private_names(list(trees.values()))
    adk_names = door_names(trees[DOOR])
    found = [
        breach
        for path, tree in trees.items()
        if path != DOOR
        for breach in breaches(str(path.relative_to(PACKAGE.parent)), tree, own, adk_names)
    ]
    assert found == [
        "adk_asgi/hitl/new_module.py:1: imports from ADK's private google.adk.workflow._errors"
    ]
