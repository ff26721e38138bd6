"""Start and stop the benchmark servers (``bench.harness.serve``) as child processes.

The parent binds the listening socket on 127.0.0.1 and hands it to the child, so the port is
known before the child starts and no other process can take it; the child says on stdout when
it listens. Stopping is ``SIGTERM`` (uvicorn's graceful shutdown), then ``SIGKILL`` if it hangs,
so a benchmark never leaves a server behind.

A server may run another checkout of adk-asgi (``--before-tree PATH``, :func:`checkout`): the
child starts in that tree with ``PYTHONPATH`` on it, so it imports that tree's ``adk_asgi`` and
bench server, with this venv's Python and packages; the rows of both trees are then measured in
the same rounds of one run. Nothing of the package is replaced in a process: each tree serves
its own code.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

_ROOT = Path(__file__).resolve().parents[2]


def _serve_module(root: Path) -> str:
    """The server module of the checkout at ``root``: ``bench.harness.serve``, or
    ``bench.serve`` in a checkout from before ``bench/harness`` (same arguments, same answer)."""
    if (root / "bench" / "harness" / "serve.py").is_file():
        return "bench.harness.serve"
    if (root / "bench" / "serve.py").is_file():
        return "bench.serve"
    raise RuntimeError(f"{root}: no bench server (bench/harness/serve.py or bench/serve.py)")


def _tree_env(root: Path) -> dict[str, str] | None:
    """The environment a child needs to import the checkout at ``root`` first: ``PYTHONPATH``
    on it (ahead of this venv's editable install of this checkout). ``None`` for this one."""
    if root == _ROOT:
        return None
    paths = [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(paths)}


def checkout(path: str) -> Path:
    """``--before-tree PATH``: another checkout of adk-asgi (``git worktree add PATH <commit>``),
    its absolute path once a Python started there imports that tree's ``adk_asgi`` (not this
    one's) and the tree has a bench server. Its servers: ``ServerProcess(kind, root=...)``."""
    root = Path(path).resolve()
    if not (root / "adk_asgi" / "__init__.py").is_file():
        raise SystemExit(f"--before-tree {path}: no adk_asgi package there")
    try:
        _serve_module(root)
    except RuntimeError as exc:
        raise SystemExit(f"--before-tree {path}: {exc}") from exc
    found = subprocess.run(
        [sys.executable, "-c", "import adk_asgi; print(adk_asgi.__file__)"],
        cwd=root,
        env={**os.environ, **(_tree_env(root) or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    imported = Path(found.stdout.strip() or ".").resolve()
    if found.returncode or not imported.is_relative_to(root):
        why = found.stderr.strip()[-500:] or f"it imports adk_asgi from {imported}"
        raise SystemExit(f"--before-tree {path}: {why}")
    return root


def describe(root: Path) -> str:
    """``PATH (commit abc1234)``: a checkout as a report names it (the commit when git knows)."""
    found = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    commit = found.stdout.strip()
    return f"{root} (commit {commit})" if found.returncode == 0 and commit else str(root)


class ServerProcess:
    """``with ServerProcess("adk_asgi") as server: server.url`` — a uvicorn child process."""

    def __init__(
        self,
        kind: str,
        *,
        startup_timeout: float = 90.0,
        sndbuf: int | None = None,
        env: dict[str, str] | None = None,
        root: Path | None = None,
    ) -> None:
        self.kind = kind
        self.root = root or _ROOT
        """The checkout whose bench server and ``adk_asgi`` the child runs: this one unless
        given; another (:func:`checkout`) for an A/B of two commits in one run."""
        self.startup_timeout = startup_timeout
        self.env = {**(_tree_env(self.root) or {}), **(env or {})} or None
        """Variables added to the child's environment (``adk_asgi_shared`` reads its own)."""
        self.sndbuf = sndbuf
        """``SO_SNDBUF`` of the listening socket, which every connection it accepts inherits
        (``None``: the kernel's autotuning). ``bench.slow_clients`` caps it."""
        self.url = ""
        self.info: dict[str, Any] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()

    def __enter__(self) -> ServerProcess:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.sndbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sndbuf)
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)
            host, port = sock.getsockname()
            self.url = f"http://{host}:{port}"
            self._proc = subprocess.Popen(
                [sys.executable, "-m", _serve_module(self.root), self.kind, str(sock.fileno())],
                pass_fds=[sock.fileno()],
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                cwd=self.root,
                env={**os.environ, **self.env} if self.env else None,
            )
        # The parent's copy of the socket is closed; the child keeps its own.
        try:
            self.info = self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _wait_ready(self) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        readable, _, _ = select.select([self._proc.stdout], [], [], self.startup_timeout)
        line = self._proc.stdout.readline() if readable else b""
        if not line:
            raise RuntimeError(f"{self.kind} server did not start:\n{self.log_tail()}")
        info: dict[str, Any] = json.loads(line)
        return info

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def set_cpus(self, cpus: set[int]) -> None:
        """Let the server run only on ``cpus``."""
        assert self._proc is not None
        os.sched_setaffinity(self._proc.pid, cpus)

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the server's stderr, for error messages."""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-chars:]

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            self._stderr.close()
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self._stderr.close()


@contextlib.contextmanager
def logs_on_error(servers: Mapping[str, ServerProcess]) -> Iterator[None]:
    """On an exception, the end of each server's log on stderr, then the exception: what a
    server said before a bench failed is gone once it stops. Keyed by the row's name
    (``""``: the only server)."""
    try:
        yield
    except Exception:
        for name, server in servers.items():
            label = f"{name} server log" if name else "server log"
            print(f"--- {label} ---\n{server.log_tail()}", file=sys.stderr)
        raise
