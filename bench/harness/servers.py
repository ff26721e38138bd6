"""Start and stop the benchmark servers (``bench.harness.serve``) as child processes.

The parent binds the listening socket on 127.0.0.1 and hands it to the child, so the port is
known before the child starts and no other process can take it; the child says on stdout when
it listens. Stopping is ``SIGTERM`` (uvicorn's graceful shutdown), then ``SIGKILL`` if it hangs,
so a benchmark never leaves a server behind.
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


def _serve_module(root: str | Path) -> str:
    """The server module of the checkout at ``root``: ``bench.harness.serve``, or
    ``bench.serve`` in a checkout from before ``bench/harness`` (same arguments, same answer)."""
    if (Path(root) / "bench" / "harness" / "serve.py").exists():
        return "bench.harness.serve"
    return "bench.serve"


class ServerProcess:
    """``with ServerProcess("adk_asgi") as server: server.url`` — a uvicorn child process."""

    def __init__(
        self,
        kind: str,
        *,
        startup_timeout: float = 90.0,
        sndbuf: int | None = None,
        env: dict[str, str] | None = None,
        root: str | None = None,
    ) -> None:
        self.kind = kind
        self.root = root or _ROOT
        """The checkout whose server module and ``adk_asgi`` the child runs (this one unless
        given: another commit's, for an A/B of two commits in one run; :func:`_serve_module`)."""
        self.startup_timeout = startup_timeout
        self.env = env
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
