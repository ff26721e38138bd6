"""A bench's command line: ``python -m bench.<name> [--quick] [sizes...] [--no-...]``.

Every bench takes ``--quick`` (a smoke run), numbers for its sizes and rounds, and switches that
leave parts out; these build them alike, the flag named after the keyword (``ttfc_runs``:
``--ttfc-runs``), so ``args.ttfc_runs`` reads it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[2]
"""The checkout this ``bench`` is in."""


def parser(module: str, doc: str | None, quick: str) -> argparse.ArgumentParser:
    """The parser of ``python -m <module>``, with ``--quick`` (its help: ``quick``)."""
    found = argparse.ArgumentParser(prog=f"python -m {module}", description=doc)
    found.add_argument("--quick", action="store_true", help=quick)
    return found


def numbers(parser: argparse.ArgumentParser, kind: Any = int, **helps: str) -> None:
    """``--<name> N`` for each keyword (``None`` when not given: the bench's default)."""
    for name, text in helps.items():
        parser.add_argument(_flag(name), type=kind, help=text)


def lists(parser: argparse.ArgumentParser, **helps: str) -> None:
    """``--<name> N [N ...]`` for each keyword."""
    for name, text in helps.items():
        parser.add_argument(_flag(name), type=int, nargs="+", help=text)


def switches(parser: argparse.ArgumentParser, **helps: str) -> None:
    """``--<name>`` (a flag, false unless given) for each keyword."""
    for name, text in helps.items():
        parser.add_argument(_flag(name), action="store_true", help=text)


def before_tree(parser: argparse.ArgumentParser) -> None:
    """``--before-tree PATH``: the A/B row (``adk_asgi before``) served from another checkout of
    adk-asgi, in the same rounds (``bench.harness.servers.checkout``)."""
    parser.add_argument(
        "--before-tree",
        metavar="PATH",
        help="add the row 'adk_asgi before': the same server run from this other checkout of"
        " adk-asgi (git worktree add PATH <commit>), in the same rounds (an A/B of two commits)",
    )


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def run_module(module: str, *args: str) -> None:
    """``python -m <module> <args>`` in a child process, its output going where this one's goes:
    how one benchmark runs another after itself (``bench.concurrency`` runs
    ``bench.slow_clients``) without importing it."""
    sys.stdout.flush()
    subprocess.run([sys.executable, "-m", module, *args], check=True, cwd=_ROOT)
