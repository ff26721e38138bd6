"""The sdist and the wheel built from the working tree, and throwaway venvs with the wheel
installed: what tests/packaging checks, and what the recipes (tests/recipes) run the examples
with, as a user who did ``pip install adk-asgi`` would.

The build runs without isolation (``python -m build --no-isolation``) with this venv's
setuptools and ``build`` (both in the ``dev`` extra), so it downloads nothing. It runs in a copy
of the tree's top-level files and ``adk_asgi/``, not in the checkout itself: setuptools writes
``*.egg-info`` and ``build/`` next to the sources, and a stale ``SOURCES.txt`` there would leak
into the sdist.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "adk_asgi"


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path
    output: str
    """What the build printed (stdout and stderr together)."""


def copy_tree(destination: Path) -> None:
    """The checkout's top-level files and the package: what a build of the checkout reads."""
    destination.mkdir()
    for entry in ROOT.iterdir():
        if entry.is_file():
            shutil.copy2(entry, destination / entry.name)
    shutil.copytree(
        ROOT / PACKAGE,
        destination / PACKAGE,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )


def build(work: Path) -> Built:
    """The sdist, and the wheel built from that sdist (``build``'s default), under ``work``."""
    copy_tree(work / "src")
    dist = work / "dist"
    completed = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(work / "src")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout
    sdists = list(dist.glob("*.tar.gz"))
    wheels = list(dist.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in dist.iterdir())
    return Built(sdist=sdists[0], wheel=wheels[0], output=completed.stdout)


def wheel_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A throwaway venv (its python, its site-packages) whose dependencies come from this venv,
    for a wheel installed with ``--no-deps``.

    A venv made from a venv's interpreter inherits the *base* interpreter's site-packages, so
    the dependencies come in through a ``.pth`` naming this venv's site-packages: a plain path
    line, which does not run the ``.pth`` files there, so the editable install of the checkout
    (a finder installed by one of them) cannot shadow the wheel."""
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
        timeout=60,
    )
    python = venv / "bin" / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
    )
    assert site_packages.is_relative_to(venv), site_packages
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site_packages / "dev_venv.pth").write_text("".join(f"{path}\n" for path in ours))
    return python, site_packages


def install_wheel(built: Built, python: Path) -> None:
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    subprocess.run(
        [*pip, "install", "--quiet", "--no-deps", "--no-index", str(built.wheel)],
        check=True,
        timeout=120,
    )
