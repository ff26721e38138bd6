"""A Python that has imported the servers' libraries once and forks each test server from there.

Every uvicorn server the suite starts from this checkout was a fresh ``python -m uvicorn``: about
2 s of CPU importing ADK, google-genai, SQLAlchemy and FastAPI before it listened, a hundred
times a run, in a suite bound by two cores. A *zygote* (Android's and Chromium's name for the
trick) imports them once per test process and forks a child per server. The child then does what
``python -m uvicorn ...`` does: uvicorn's own command line, in the server's directory and
environment, on the descriptors the caller passed, importing the app module fresh. So the server
is the same real uvicorn process, killed, restarted and ``kill -9``-ed as before; only the
interpreter's start is shared. What it must not share is anything an import does with the
environment: the libraries imported here read theirs when called, not when imported, and the
app modules (which read ``PAYMENT_DB_URL`` and the like at import) are not imported here.

Servers that run elsewhere (another venv, a user's directory: tests/recipes, tests/packaging)
still start cold, as a user's would.

The wire: one ``SOCK_SEQPACKET`` pair per zygote. A request is one message, JSON (argv, cwd,
environment, target descriptor numbers) with the descriptors attached: first a socket of the
caller's on which the zygote answers the child's pid, then, when it has reaped the child, its
exit code (``subprocess``'s: negative for a signal).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What the test servers import before their app module does anything. The dev extra installs
# every backend, so a name missing here is a mistake, not an option.
PRELOAD = (
    "uvicorn.main",
    "uvicorn.config",
    "uvicorn.server",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.auto",
    "uvloop",
    "httpx",
    "google.genai",
    "google.genai.types",
    "google.adk.agents",
    "google.adk.apps",
    "google.adk.runners",
    "google.adk.models.google_llm",
    "google.adk.sessions.database_session_service",
    "google.adk.tools",
    "sqlalchemy",
    "aiosqlite",
    "redis.asyncio",
    "asyncpg",
    "fastapi",
    "starlette.applications",
    "adk_asgi",
    "adk_asgi.testing",
    "adk_asgi.stores",
    "adk_asgi.stores.claims_sql",
    "adk_asgi.stores.claims_sqlite",
    "adk_asgi.stores.locks_postgres",
    "adk_asgi.stores.locks_redis",
    "adk_asgi.stores.locks_sqlite",
    "adk_asgi.stores.resumable_redis",
)

_FAR = 256  # where received descriptors wait before they move to the numbers the caller named
_MAX_FDS = 16


class ForkedServer:
    """A server forked by the zygote, with the part of :class:`subprocess.Popen` the tests use:
    ``pid``, :meth:`poll`, :meth:`wait`, :meth:`terminate`, :meth:`kill`, ``returncode``."""

    def __init__(self, pid: int, status: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._status = status

    def poll(self) -> int | None:
        if self.returncode is None:
            self._status.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                self._read_exit()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._status.settimeout(timeout)
            try:
                self._read_exit()
            except TimeoutError:
                raise subprocess.TimeoutExpired([str(self.pid)], timeout or 0.0) from None
        assert self.returncode is not None
        return self.returncode

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, number: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # exited, not yet reported
                os.kill(self.pid, number)

    def _read_exit(self) -> None:
        message = self._status.recv(64)
        if not message:  # the zygote is gone: it reaps its children, so this one is too
            raise RuntimeError(f"the zygote died before it reported server {self.pid}'s exit")
        self.returncode = int(message)
        self._status.close()


class Zygote:
    """The test process's side: starts the zygote on first use, forks servers from it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def spawn(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int]
    ) -> ForkedServer:
        """Fork ``argv`` (a ``python -m uvicorn`` command line less the interpreter) with this
        process's standard streams and ``pass_fds`` at the same numbers."""
        targets = [0, 1, 2, *pass_fds]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = {"argv": list(argv), "cwd": str(cwd), "env": dict(env), "targets": targets}
        with self._lock:
            control = self._started()
            socket.send_fds(control, [json.dumps(request).encode()], [theirs.fileno(), *targets])
        theirs.close()
        answer = ours.recv(64)
        if not answer:
            raise RuntimeError("the zygote closed the request without forking a server")
        return ForkedServer(int(answer), ours)

    def _started(self) -> socket.socket:
        if self._control is None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            env = {k: v for k, v in os.environ.items() if not k.startswith("GOOGLE_")}
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.zygote", str(theirs.fileno())],
                cwd=ROOT,
                env=env,
                pass_fds=[theirs.fileno()],
            )
            theirs.close()
            if ours.recv(16) != b"ready":
                raise RuntimeError("the zygote exited before it was ready")
            self._control = ours
            atexit.register(self.close)
        return self._control

    def close(self) -> None:
        """Stop the zygote (its EOF); servers still running are sent SIGTERM by it."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._process is not None:
            self._process.wait(timeout=30)
            self._process = None


ZYGOTE = Zygote()


# --- the zygote process -------------------------------------------------------------------------


def _serve(control: socket.socket) -> None:
    statuses: dict[int, socket.socket] = {}
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    control.send(b"ready")
    while True:
        for key, _ in selector.select():
            if key.fileobj is control:
                message, fds, _flags, _address = socket.recv_fds(control, 1 << 20, _MAX_FDS)
                if not message:
                    _stop(statuses)
                    return
                request = json.loads(message)
                status = socket.socket(fileno=fds[0])
                pid = os.fork()
                if pid == 0:
                    _child(request, fds[1:], [control, *statuses.values(), status], wake_read)
                for fd in fds[1:]:
                    os.close(fd)
                status.send(str(pid).encode())
                statuses[pid] = status
            else:
                while True:
                    try:
                        os.read(wake_read, 512)
                    except BlockingIOError:
                        break
        _reap(statuses)


def _reap(statuses: dict[int, socket.socket]) -> None:
    while statuses:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        status = statuses.pop(pid, None)
        if status is not None:
            try:
                status.send(str(os.waitstatus_to_exitcode(wait_status)).encode())
            except OSError as exc:  # the caller went away first
                if exc.errno not in (errno.EPIPE, errno.ECONNREFUSED, errno.ENOTCONN):
                    raise
            status.close()


def _stop(statuses: dict[int, socket.socket]) -> None:
    for pid in statuses:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def _child(
    request: dict[str, object], fds: list[int], inherited: list[socket.socket], wake: int
) -> None:
    """In the forked child: become ``python -m uvicorn <argv>``; never returns."""
    code: int = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for sock in inherited:
            sock.close()
        os.close(wake)
        targets = request["targets"]
        assert isinstance(targets, list)
        far = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _FAR) for fd in fds]
        for fd in fds:
            os.close(fd)
        for fd, target in zip(far, targets, strict=True):
            os.dup2(fd, target)
        for fd in far:
            os.close(fd)
        cwd = str(request["cwd"])
        os.chdir(cwd)
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        argv = request["argv"]
        assert isinstance(argv, list)
        sys.argv = ["uvicorn", *argv]
        sys.path[0] = cwd  # as ``python -m`` sets it
        try:
            runpy.run_module("uvicorn", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        threading._shutdown()  # type: ignore[attr-defined]  # what interpreter exit does
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a stream the server closed
                stream.flush()
        os._exit(code)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    for name in PRELOAD:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a thread would not survive the fork, and could deadlock it
        raise RuntimeError(f"the zygote's imports started threads: {threading.enumerate()}")
    _serve(control)


if __name__ == "__main__":
    main()
