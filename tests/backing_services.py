"""Real backing services for the tests: a throw-away PostgreSQL cluster and a Redis server.

Both come from Debian's packages (``make services`` installs them) and are started by the test
session itself, on loopback only, each in its own temporary directory, and removed afterwards:

- :func:`postgres_server` runs ``initdb`` and ``postgres`` from the newest
  ``/usr/lib/postgresql/<version>/bin`` (trust authentication, UTF8, durability off so it starts
  fast). PostgreSQL refuses to run as root, so under root the cluster belongs to the ``postgres``
  system user the package creates.
- :func:`redis_server` runs ``/usr/bin/redis-server`` without persistence.

Every server is a direct child in a process group of its own: it is stopped gracefully on exit
(even when a test failed or the session was interrupted), its group is killed when that does not
finish within a few seconds, and ``setpriv --pdeathsig`` stops it should the test process die
without cleaning up (the kernel ties that signal to the *thread* that started the server: start
servers from the main thread, as pytest's session fixtures are). Only the temporary directory is
left behind then. Each server's output goes to a log file in its directory; a start-up failure
quotes the log's tail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypedDict

POSTGRES_BIN_GLOB = "/usr/lib/postgresql/*/bin"
REDIS_SERVER = Path("/usr/bin/redis-server")
POSTGRES_DATABASE = "adk_asgi_test"
START_TIMEOUT = 30.0  # seconds for a server to accept connections
STOP_TIMEOUT = 5.0  # seconds for a graceful stop before the process group is killed
_PORT_ATTEMPTS = 3  # a free port can be taken between probing it and the server binding it
_MISSING = "run `make services` to install Debian's postgresql and redis-server packages"


class BackingServiceError(RuntimeError):
    """A backing service could not be found, started or used."""


@dataclasses.dataclass(frozen=True)
class Postgres:
    """One database on the session's PostgreSQL server (trust authentication, no password)."""

    host: str
    port: int
    user: str
    database: str
    bin_dir: Path

    @property
    def url(self) -> str:
        """The SQLAlchemy URL for the asyncpg driver (what ``DatabaseSessionService`` takes)."""
        return f"postgresql+asyncpg://{self.user}@{self.host}:{self.port}/{self.database}"

    @property
    def dsn(self) -> str:
        """The plain libpq DSN (``asyncpg.connect``, ``psql``)."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"

    def create_database(self, name: str) -> Postgres:
        """Create another, empty database on the same server and return it."""
        _run_client(self, "createdb", "--template=template0", name)
        return dataclasses.replace(self, database=name)


# --- PostgreSQL -----------------------------------------------------------------------------


def postgres_bin_dir() -> Path:
    """The ``bin`` directory of the newest PostgreSQL Debian has installed."""
    candidates = [
        path.parent
        for path in Path("/").glob(POSTGRES_BIN_GLOB.lstrip("/") + "/postgres")
        if os.access(path, os.X_OK)
    ]
    if not candidates:
        raise BackingServiceError(f"no PostgreSQL under {POSTGRES_BIN_GLOB}: {_MISSING}")
    return max(candidates, key=lambda bin_dir: _version_key(bin_dir.parent.name))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """Run a throw-away PostgreSQL cluster on 127.0.0.1; yield its test database."""
    bin_dir = postgres_bin_dir()
    account = _postgres_account()
    root = Path(tempfile.mkdtemp(prefix="adk-asgi-postgres-"))
    try:
        if account is not None:
            os.chown(root, account.pw_uid, account.pw_gid)
        user = account.pw_name if account is not None else pwd.getpwuid(os.geteuid()).pw_name
        data = root / "data"
        log = root / "postgres.log"
        _initdb(bin_dir, data, user, account, log)
        for attempt in range(_PORT_ATTEMPTS):
            port = _free_port()
            command = [
                str(bin_dir / "postgres"),
                "-D",
                str(data),
                "-k",
                str(root),
                "-p",
                str(port),
                "-c",
                "listen_addresses=127.0.0.1",
                # A throw-away cluster: nothing to keep across a crash, so durability is off.
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                # Room for several services' connection pools at once.
                "-c",
                "max_connections=200",
            ]
            server = Postgres("127.0.0.1", port, user, "postgres", bin_dir)
            with _server_process(
                command,
                log,
                account=account,
                # "fast" shutdown (sessions are ended, not waited for), then "immediate" (the
                # postmaster SIGKILLs its children, which each run in a session of their own).
                stop_signals=(signal.SIGINT, signal.SIGQUIT),
                death_signal="QUIT",  # "immediate" shutdown should the test process die
                ready=functools.partial(_postgres_ready, server),
                name="PostgreSQL",
            ) as started:
                if not started:
                    if attempt + 1 < _PORT_ATTEMPTS:
                        continue
                    raise BackingServiceError(
                        f"PostgreSQL could not bind a port in {_PORT_ATTEMPTS} attempts:\n"
                        + _tail(log)
                    )
                yield server.create_database(POSTGRES_DATABASE)
                return
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _postgres_account() -> pwd.struct_passwd | None:
    """The account to run PostgreSQL as: ``postgres`` under root, else None (ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise BackingServiceError(f"running as root and no `postgres` user: {_MISSING}") from None


def _initdb(
    bin_dir: Path, data: Path, user: str, account: pwd.struct_passwd | None, log: Path
) -> None:
    command = [
        str(bin_dir / "initdb"),
        "--pgdata",
        str(data),
        "--username",
        user,
        "--auth",
        "trust",
        "--encoding",
        "UTF8",
        "--locale",
        "C",
        "--no-sync",
        "--no-instructions",
    ]
    with log.open("ab") as out:
        result = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=data.parent,
            env=_clean_env(),
            timeout=START_TIMEOUT,
            check=False,
            **_as_account(account),
        )
    if result.returncode != 0:
        raise BackingServiceError(f"initdb exited with {result.returncode}:\n{_tail(log)}")


def _postgres_ready(server: Postgres) -> bool:
    result = subprocess.run(
        [
            str(server.bin_dir / "pg_isready"),
            "--quiet",
            "--host",
            server.host,
            "--port",
            str(server.port),
            "--username",
            server.user,
            "--dbname",
            server.database,
            "--timeout",
            "1",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_clean_env(),
        check=False,
    )
    return result.returncode == 0


def _run_client(server: Postgres, program: str, *args: str) -> None:
    """Run a PostgreSQL client program (over TCP, so it runs as whoever we are)."""
    result = subprocess.run(
        [
            str(server.bin_dir / program),
            "--host",
            server.host,
            "--port",
            str(server.port),
            "--username",
            server.user,
            *args,
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_clean_env(),
        timeout=START_TIMEOUT,
        check=False,
    )
    if result.returncode != 0:
        raise BackingServiceError(
            f"{program} {' '.join(args)} exited with {result.returncode}: {result.stderr.strip()}"
        )


def _clean_env() -> dict[str, str]:
    """Our environment without libpq's variables (PGHOST, PGDATA, ...), which would redirect
    the programs to another server, and with a fixed message language."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


# --- Redis ----------------------------------------------------------------------------------


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Run a Redis server on 127.0.0.1 without persistence; yield ``redis://127.0.0.1:<port>/0``."""
    if not os.access(REDIS_SERVER, os.X_OK):
        raise BackingServiceError(f"no {REDIS_SERVER}: {_MISSING}")
    root = Path(tempfile.mkdtemp(prefix="adk-asgi-redis-"))
    try:
        log = root / "redis.log"
        for attempt in range(_PORT_ATTEMPTS):
            port = _free_port()
            command = [
                str(REDIS_SERVER),
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--dir",
                str(root),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--logfile",
                "",  # standard output, which is the log file
            ]
            with _server_process(
                command,
                log,
                account=None,
                stop_signals=(signal.SIGTERM,),  # a clean shutdown, with nothing to save
                death_signal="TERM",
                ready=functools.partial(_redis_ready, port),
                name="Redis",
            ) as started:
                if not started:
                    if attempt + 1 < _PORT_ATTEMPTS:
                        continue
                    raise BackingServiceError(
                        f"Redis could not bind a port in {_PORT_ATTEMPTS} attempts:\n{_tail(log)}"
                    )
                yield f"redis://127.0.0.1:{port}/0"
                return
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _redis_ready(port: int) -> bool:
    """Whether ``PING`` gets ``+PONG`` (a loading server answers ``-LOADING`` instead)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


# --- Processes ------------------------------------------------------------------------------


_BIND_FAILURE = re.compile(r"address already in use|could not bind|could not create listen", re.I)


@contextlib.contextmanager
def _server_process(
    command: Sequence[str],
    log: Path,
    *,
    account: pwd.struct_passwd | None,
    stop_signals: Sequence[signal.Signals],
    death_signal: str,
    ready: Callable[[], bool],
    name: str,
) -> Iterator[bool]:
    """Run a server until the block ends; yield True once ``ready()``, or False if it exited
    because its port was taken (the caller tries another). Any other failure raises."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            ["setpriv", "--pdeathsig", death_signal, "--", *command],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=log.parent,
            env=_clean_env(),
            start_new_session=True,
            **_as_account(account),
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            if process.poll() is not None:
                if _BIND_FAILURE.search(log.read_text(errors="replace")):
                    log.write_bytes(b"")  # the next attempt starts a fresh log
                    yield False
                    return
                raise BackingServiceError(
                    f"{name} exited with {process.returncode} before it was ready:\n{_tail(log)}"
                )
            if time.monotonic() > deadline:
                raise BackingServiceError(
                    f"{name} did not accept connections within {START_TIMEOUT:g} s:\n{_tail(log)}"
                )
            time.sleep(0.02)
        yield True
    finally:
        _stop(process, stop_signals)


def _stop(process: subprocess.Popen[bytes], stop_signals: Sequence[signal.Signals]) -> None:
    """Stop a server gracefully, with each of ``stop_signals`` in turn (each given
    ``STOP_TIMEOUT``) until it exits; kill its process group if none works."""
    for stop_signal in stop_signals:
        if process.poll() is not None:
            return
        process.send_signal(stop_signal)
        try:
            process.wait(timeout=STOP_TIMEOUT)
            return
        except subprocess.TimeoutExpired:
            pass
    # Not reaped yet, so its group (the server and the children it did not move) is still ours.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


class _Credentials(TypedDict, total=False):
    user: int
    group: int
    extra_groups: list[int]


def _as_account(account: pwd.struct_passwd | None) -> _Credentials:
    """``subprocess`` arguments that run the child as ``account`` (None: as ourselves)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(log: Path, lines: int = 40) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    return "\n".join(text.splitlines()[-lines:]) or "(the log is empty)"
