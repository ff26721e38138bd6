"""The suite's servers are forked from a pre-imported interpreter (tests/zygote.py). Each must
be what ``python -m uvicorn <app>`` would have been, side by side with one started cold, and its
exit must read as ``subprocess.Popen``'s, since the restart tests kill and wait on it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.servers import ROOT, Process, loopback_listener, wait_ready
from tests.zygote import ZYGOTE

PROBE = "tests.deploy.probe_app:app"


def _start(app: str, *, forked: bool, env: dict[str, str]) -> tuple[Process, str]:
    sock = loopback_listener()
    argv = [app, "--fd", str(sock.fileno()), "--log-level", "warning", "--lifespan", "off"]
    environ = {**os.environ, **env}
    fds = [sock.fileno()]
    server: Process
    if forked:
        server = ZYGOTE.spawn(argv, cwd=ROOT, env=environ, pass_fds=fds)
    else:
        command = [sys.executable, "-m", "uvicorn", *argv]
        server = subprocess.Popen(command, cwd=ROOT, env=environ, pass_fds=fds)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()
    return server, base


@pytest.fixture
def servers() -> Iterator[dict[str, tuple[Process, str]]]:
    """The probe forked, and cold, each with its own ``PROBE``."""
    started = {
        kind: _start(PROBE, forked=kind == "forked", env={"PROBE": kind})
        for kind in ("forked", "cold")
    }
    try:
        for server, base in started.values():
            wait_ready(base, server)
        yield started
    finally:
        for server, _ in started.values():
            server.kill()
            server.wait(timeout=10)


def _report(base: str) -> dict[str, Any]:
    report = httpx.get(base).json()
    assert isinstance(report, dict)
    return report


def test_a_forked_server_is_what_python_m_uvicorn_would_have_been(
    servers: dict[str, tuple[Process, str]],
) -> None:
    """Its app imported in its own environment (``PROBE`` read at import), in its directory,
    with uvicorn's command line and ``sys.path``, holding the same sockets: none of the
    zygote's (SEQPACKET), which would keep other servers' exit reports open."""
    forked, cold = (_report(servers[kind][1]) for kind in ("forked", "cold"))
    assert forked.pop("probe_at_import") == "forked"
    assert cold.pop("probe_at_import") == "cold"
    assert forked.pop("pid") == servers["forked"][0].pid
    assert cold.pop("pid") == servers["cold"][0].pid
    assert "AF_UNIX/SOCK_SEQPACKET" not in forked["sockets"]
    for report in (forked, cold):  # the TCP ones: wait_ready's closed connection may linger
        report["sockets"] = [s for s in report["sockets"] if not s.startswith("AF_INET/")]
    assert forked == cold


@pytest.mark.parametrize("how", ["terminate", "kill -9"])
def test_a_forked_server_exits_as_popen_reports_a_cold_one(
    servers: dict[str, tuple[Process, str]], how: str
) -> None:
    codes = {}
    for kind, (server, base) in servers.items():
        assert server.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            server.wait(timeout=0.05)
        if how == "terminate":
            server.terminate()
        else:  # as test_restarts kills a worker: by the pid it reports
            os.kill(_report(base)["pid"], signal.SIGKILL)
        codes[kind] = server.wait(timeout=10)
        assert server.poll() == codes[kind]
    expected = -signal.SIGTERM if how == "terminate" else -signal.SIGKILL
    assert codes == {"forked": expected, "cold": expected}


def test_a_server_whose_app_fails_to_import_exits_with_uvicorns_code_before_it_is_ready() -> None:
    for forked in (True, False):
        server, base = _start("tests.deploy.no_such_app:app", forked=forked, env={})
        with pytest.raises(RuntimeError, match="the server exited with 3 before it was ready"):
            wait_ready(base, server, timeout=30)
