"""Every Python the package claims is tested: the classifiers name the venv's 3.11, on which
``make test`` runs the whole suite, and the others, on which ``make test-pythons`` runs the unit
tests; CI runs both."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_pythons_the_package_claims_are_the_pythons_ci_tests() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    claimed = {
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    assert project["requires-python"] == ">=3.11"
    others = re.search(r"^OTHER_PYTHONS \?= (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert others is not None
    assert claimed == {"3.11", *others[1].split()} == {"3.11", "3.12", "3.13"}
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-2:] == ["make test", "make test-pythons"]
