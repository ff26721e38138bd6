"""``--before-tree PATH`` (``bench.throughput``, ``bench.concurrency``): the A/B row's server is
another checkout's own code, run in a child process with ``PYTHONPATH`` on that tree; nothing is
patched. ``bench.harness.servers.checkout`` refuses a tree a child would not import from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.harness import servers


def _tree(root: Path, server: str) -> Path:
    """A stand-in checkout: an ``adk_asgi`` package and a bench server module at ``server``."""
    (root / "adk_asgi").mkdir(parents=True)
    (root / "adk_asgi" / "__init__.py").write_text("")
    (root / server).parent.mkdir(parents=True, exist_ok=True)
    (root / server).write_text("")
    return root


def test_another_checkout_is_imported_from_its_own_tree(tmp_path: Path) -> None:
    root = _tree(tmp_path / "before", "bench/harness/serve.py")
    assert servers.checkout(str(root)) == root.resolve()
    assert servers._serve_module(root) == "bench.harness.serve"
    process = servers.ServerProcess("adk_asgi", root=root, env={"BENCH_GC_FREEZE": "1"})
    assert process.env is not None
    assert process.env["PYTHONPATH"].split(os.pathsep)[0] == str(root)
    assert process.env["BENCH_GC_FREEZE"] == "1"
    process.stop()


def test_a_checkout_from_before_the_harness_serves_with_bench_serve(tmp_path: Path) -> None:
    root = _tree(tmp_path / "old", "bench/serve.py")
    assert servers.checkout(str(root)) == root.resolve()
    assert servers._serve_module(root) == "bench.serve"


def test_this_checkout_runs_as_it_is() -> None:
    process = servers.ServerProcess("adk_asgi")
    assert process.env is None  # no PYTHONPATH: this tree is the child's working directory
    assert servers._serve_module(process.root) == "bench.harness.serve"
    process.stop()


@pytest.mark.parametrize("server", [None, "bench/other.py"])
def test_a_tree_without_adk_asgi_or_a_bench_server_is_refused(
    tmp_path: Path, server: str | None
) -> None:
    root = tmp_path / "tree"
    if server is None:
        root.mkdir()
    else:
        _tree(root, server)
    with pytest.raises(SystemExit, match="--before-tree"):
        servers.checkout(str(root))
