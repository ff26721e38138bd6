"""``run.mjs --serve`` kept for the test process: Chromium starts once per test process (a
pytest-xdist worker), not once per test (its start-up was most of a browser test's CPU time);
each run gets a new browser context in it (run.mjs's header says what that keeps fresh).

A run's answer is what ``node run.mjs ARGS`` would have exited with and printed, as a
:class:`subprocess.CompletedProcess`. A run that fails ends the kept process (run.mjs answers it
``closing``): the next run starts another. A run with no answer within its timeout ends it too
(:class:`NoAnswer`, with what run.mjs wrote to stderr meanwhile).

Not node_client's ``_Served``: that one answers JSON values and kills its process at once; this
one's answer is a command's outcome, and the kept browser is closed, not killed, so that Chromium
ends with run.mjs (and its CPU time is counted with the test process's).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO

RUNNER = Path(__file__).with_name("run.mjs")
CLOSE_S = 10
"""How long run.mjs has to close its browser and exit once told to, before it is stopped."""


class NoAnswer(Exception):
    """``run.mjs --serve`` gave no answer to a run: it ``timed_out`` (and was stopped) or it
    ended (with ``returncode``); ``output``: what it wrote to stderr since the run began."""

    def __init__(self, timed_out: bool, returncode: int | None, output: str) -> None:
        super().__init__(output)
        self.timed_out = timed_out
        self.returncode = returncode
        self.output = output


class KeptBrowser:
    """One ``node run.mjs --serve`` process, started by the first run; one run at a time."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr: IO[bytes] | None = None

    def run(
        self, args: list[str], env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """What ``node run.mjs *args``, with ``env`` added to this process's environment, would
        have exited with and printed; :class:`NoAnswer` when nothing came within ``timeout``."""
        with self.lock:
            if self.process is not None and self.process.poll() is not None:
                self._close()  # (ended by itself: its pipes and stderr file are still open)
            if self.process is None:
                self._start()
            assert self.process is not None and self.stderr is not None
            stdin, stdout = self.process.stdin, self.process.stdout
            assert stdin is not None and stdout is not None
            began = os.fstat(self.stderr.fileno()).st_size
            ready = False
            try:
                stdin.write(json.dumps({"args": args, "env": env}).encode() + b"\n")
                stdin.flush()
                ready = bool(select.select([stdout], [], [], timeout)[0])
                line = stdout.readline() if ready else b""
            except OSError:
                line = b""
            if not line:
                process = self.process
                output = self._close(since=began, graceful=ready)
                raise NoAnswer(not ready, process.returncode, output)
            reply = json.loads(line)
            if "usageError" in reply:  # (run.mjs itself failed, not the run)
                stderr = self._close(since=began)
                reply = {"code": 2, "stdout": "", "stderr": f"{stderr}{reply['usageError']}\n"}
            elif reply.get("closing"):
                self._close()
            command = ["node", str(RUNNER), *args]
            return subprocess.CompletedProcess(
                command, reply["code"], reply["stdout"], reply["stderr"]
            )

    def close(self) -> None:
        """Close the browser and end the process (a later run starts another)."""
        with self.lock:
            self._close()

    def _start(self) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (it lives as the process does)
        self.process = subprocess.Popen(
            ["node", str(RUNNER), "--serve"],
            cwd=self.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )

    def _close(self, *, since: int = 0, graceful: bool = True) -> str:
        """End the process: stdin closed, run.mjs closes its browser and exits (``graceful``);
        else, or past CLOSE_S, terminated (Playwright ends Chromium), then killed. What it wrote
        to stderr from offset ``since``."""
        process, stderr = self.process, self.stderr
        self.process = self.stderr = None
        if process is None or stderr is None:
            return ""
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        for stop, wait in (
            (None, CLOSE_S if graceful else 0),
            (process.terminate, CLOSE_S / 2),
            (process.kill, None),
        ):
            if stop is not None:
                stop()
            try:
                process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        with stderr:
            stderr.seek(since)
            return stderr.read().decode(errors="replace")


KEPT = KeptBrowser(RUNNER.parents[2])
"""The test process's kept browser (``test_demo_page.run_page``'s)."""
atexit.register(KEPT.close)
