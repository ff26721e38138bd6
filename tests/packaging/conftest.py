"""The sdist and the wheel, built once for the session from the working tree: what
tests/packaging/test_distribution.py checks, and test_web_command.py installs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The sdist, and the wheel built from that sdist (``build``'s default), in a temp dir:
    built once for the session (tests/packaging/test_web_command.py installs it too)."""
    work = tmp_path_factory.mktemp("distribution")
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
