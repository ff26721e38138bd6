"""The sdist and the wheel, built from the working tree (tests/packaging/wheel.py, once per
session): what they ship, how they build, and the wheel installed on its own."""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from tests.packaging.wheel import Built, install_wheel, wheel_venv

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "adk_asgi"
TRANSPORT_JS = f"{PACKAGE}/static/transport.js"
PY_TYPED = f"{PACKAGE}/py.typed"
PAGE = f"{PACKAGE}/web/page"


def source_files() -> set[str]:
    """What the package is made of in the tree: every module (subpackages included), the
    ``py.typed`` marker and the static files, as paths relative to the root."""
    package = ROOT / PACKAGE
    modules = {p for p in package.rglob("*.py") if "__pycache__" not in p.parts}
    static = {p for p in (package / "static").rglob("*") if p.is_file()}
    page = {p for p in (ROOT / PAGE).rglob("*") if p.is_file()}
    return {p.relative_to(ROOT).as_posix() for p in modules | static | page} | {PY_TYPED}


def test_the_tree_has_what_the_distributions_must_ship() -> None:
    """The lists the other tests compare against are not vacuous."""
    files = source_files()
    assert {f"{PACKAGE}/__init__.py", f"{PACKAGE}/app.py", TRANSPORT_JS, PY_TYPED} <= files
    assert f"{PAGE}/index.html" in files
    assert (ROOT / TRANSPORT_JS).is_file() and (ROOT / PY_TYPED).is_file()


def test_the_build_warns_of_no_deprecation(built: Built) -> None:
    """setuptools announces removals (a ``project.license`` table, say) as deprecations."""
    found = [
        line for line in built.output.splitlines() if re.search(r"deprecat", line, re.IGNORECASE)
    ]
    assert not found, built.output
    assert "SetuptoolsDeprecationWarning" not in built.output


def test_the_wheel_ships_every_module_the_transport_and_py_typed(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = HeaderParser().parsestr(wheel.read(f"{dist_info}/METADATA").decode())
        assert wheel.read(TRANSPORT_JS) == (ROOT / TRANSPORT_JS).read_bytes()
    missing = source_files() - names
    assert not missing, f"not in the wheel: {sorted(missing)}"
    # Nothing but the package: no tests, demo or benchmarks installed next to it.
    assert {name.split("/")[0] for name in names} == {PACKAGE, dist_info}
    assert f"{dist_info}/licenses/LICENSE" in names
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]


def test_the_sdist_ships_the_package_readme_and_license(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        members = sdist.getnames()
        top = members[0].split("/")[0]
        names = {m[len(top) + 1 :] for m in members if m.startswith(f"{top}/")}
        pkg_info = sdist.extractfile(f"{top}/PKG-INFO")
        assert pkg_info is not None
        metadata = HeaderParser().parsestr(pkg_info.read().decode())
    missing = (source_files() | {"README.md", "LICENSE", "pyproject.toml"}) - names
    assert not missing, f"not in the sdist: {sorted(missing)}"
    assert metadata["License-Expression"] == "Apache-2.0"


IMPORT_CHECK = """
import importlib, importlib.metadata, importlib.resources, pkgutil, sys
import adk_asgi
print(adk_asgi.__file__)
print(importlib.metadata.version("adk-asgi"))
transport = importlib.resources.files("adk_asgi") / "static" / "transport.js"
sys.stdout.flush()
sys.stdout.buffer.write(transport.read_bytes())
for module in pkgutil.walk_packages(adk_asgi.__path__, "adk_asgi."):
    importlib.import_module(module.name)
"""


def test_the_wheel_installs_and_runs_on_its_own(built: Built, tmp_path: Path) -> None:
    """Installed with ``--no-deps`` into a throwaway venv whose dependencies come from this
    venv (:func:`wheel_venv`), the wheel is what ``import adk_asgi`` finds, and its
    ``transport.js`` is readable as a package resource."""
    python, site_packages = wheel_venv(tmp_path)
    elsewhere = tmp_path / "cwd"  # not the checkout, whose adk_asgi/ would be on sys.path
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}

    def check() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(python), "-c", IMPORT_CHECK],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )

    before = check()
    assert before.returncode != 0, "adk_asgi imports before the wheel is installed"
    assert b"No module named 'adk_asgi'" in before.stderr, before.stderr.decode()

    install_wheel(built, python)
    after = check()
    assert after.returncode == 0, after.stderr.decode()
    module_file, version, transport = after.stdout.split(b"\n", 2)
    assert Path(module_file.decode()) == site_packages / PACKAGE / "__init__.py"
    assert version.decode() == built.wheel.name.split("-")[1]
    assert transport == (ROOT / TRANSPORT_JS).read_bytes()


def test_the_packaged_page_is_the_current_build_of_web() -> None:
    """``adk_asgi/web/page`` (what ``adk-asgi web`` serves, committed so that a git install
    needs no Node) is ``make web``'s build of ``web/`` as it is now: ``make page`` after a
    change there."""
    dist = ROOT / "web" / "dist"
    assert (dist / "index.html").is_file(), "web/ is not built: make web"
    built = {p.relative_to(dist).as_posix() for p in dist.rglob("*") if p.is_file()} - {".built"}
    packaged = {
        p.relative_to(ROOT / PAGE).as_posix() for p in (ROOT / PAGE).rglob("*") if p.is_file()
    }
    assert packaged == built, "adk_asgi/web/page is not the current build of web/: make page"
    for name in built:
        assert (ROOT / PAGE / name).read_bytes() == (dist / name).read_bytes(), name


def test_the_wheel_declares_the_adk_asgi_command(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        [entry_points] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = wheel.read(entry_points).decode()
    assert "[console_scripts]\nadk-asgi = adk_asgi.web.cli:main" in text


def test_the_version_is_the_packages_and_the_changelogs(built: Built) -> None:
    import adk_asgi

    assert built.wheel.name.split("-")[1] == adk_asgi.__version__
    assert f"\n## {adk_asgi.__version__} " in (ROOT / "CHANGELOG.md").read_text()
