"""Real servers for the slow suites: uvicorn on loopback, started once per test session.

The listening socket is bound here (port 0, so parallel runs never collide) and handed to the
uvicorn subprocess as a file descriptor, so the port is known before the server starts and no
other process can take it in between.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx
import uvicorn

from tests.zygote import ZYGOTE

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def uvicorn_server(
    app: str,
    *,
    env: Mapping[str, str] | None = None,
    ready_path: str = "/",
    args: Sequence[str] = (),
    python: str | Path = sys.executable,
    cwd: Path = ROOT,
    environ: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> Iterator[str]:
    """Run ``uvicorn <app>`` on a fresh loopback port; yield its base URL. ``args`` are
    appended to uvicorn's command line. By default this venv's Python runs it in the checkout,
    with this environment less ``GOOGLE_*`` plus ``env``; ``python``, ``cwd`` and ``environ``
    (the whole environment) run it elsewhere, as a user would (tests/recipes). In this checkout on
    this venv's Python, the server is forked from a pre-imported interpreter (:mod:`tests.zygote`)
    instead of started cold: the same uvicorn command line, about 2 s of CPU less."""
    sock = loopback_listener()
    port = sock.getsockname()[1]
    if environ is None:
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("GOOGLE_")}
        child_env.update(env or {})
    else:
        child_env = {**environ, **(env or {})}
    command = [
        str(python),
        "-m",
        "uvicorn",
        app,
        "--fd",
        str(sock.fileno()),
        "--log-level",
        "warning",
        "--no-access-log",
        *args,
    ]
    process: Process
    if str(python) == sys.executable and cwd == ROOT and environ is None:
        process = ZYGOTE.spawn(command[3:], cwd=cwd, env=child_env, pass_fds=[sock.fileno()])
    else:
        process = subprocess.Popen(command, cwd=cwd, env=child_env, pass_fds=[sock.fileno()])
    sock.close()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base + ready_path, process, timeout)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def loopback_listener() -> socket.socket:
    """A socket listening on a fresh loopback port, for a uvicorn server to inherit (``--fd``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # uvicorn wraps an inherited fd as a Unix socket, so asyncio never sets TCP_NODELAY on its
    # connections (each response would wait ~40 ms for Nagle); Linux copies it from here.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def free_port() -> int:
    """A loopback port free now, for a server that binds its own (a command's ``--port``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Process(Protocol):
    """What the tests use of a server process: a :class:`subprocess.Popen` or a
    :class:`tests.zygote.ForkedServer`."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


def wait_ready(url: str, process: Process, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before it was ready")
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the server at {url} was not ready after {timeout:g} s")


@asynccontextmanager
async def in_loop_uvicorn(app: Any) -> AsyncIterator[str]:
    """``app`` (an ``AdkApp``) under uvicorn in this event loop, so the loop's stalls are the
    server's and its objects can be inspected; yields the base URL, and closes the app."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        await app.aclose()
