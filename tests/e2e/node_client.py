"""Run the Node harness (the real Vercel AI SDK, ai@5, ai@6 and ai@7) from Python tests.

``validate_sse`` checks SSE bodies with the SDK's own parser, schema and stream processing;
``drive_chat`` drives the SDK's own ``AbstractChat`` + ``DefaultChatTransport`` against a live
server; ``reference_chat`` asks the SDK's own server (``streamText``) for the same answer. All
run in Node processes the test process keeps (:class:`_Pool`), so Node and the SDK load once
per process, not once per call. The scripts live in ``tests/e2e/node`` (see the headers of
``validate-sse.mjs``, ``chat-driver.mjs`` and ``reference-server.mjs`` for the JSON formats).
``npm ci`` must have been run in that directory.

Both functions block; from async tests whose server runs on the test's own event loop use the
``*_async`` variants, which run them in a worker thread.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import json
import select
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread

NODE_DIR = Path(__file__).resolve().parent / "node"
SUPPORTED_SDKS = (5, 6, 7)
_REQUIRED_PACKAGES = ("ai5", "ai6", "ai7", "ws")


class NodeHarnessError(RuntimeError):
    """The Node harness could not run, crashed, or reported a harness (not server) problem."""


def check_node_harness() -> None:
    """Raise `NodeHarnessError` unless node is on PATH and ``npm ci`` has been run."""
    if shutil.which("node") is None:
        raise NodeHarnessError("`node` was not found on PATH; the e2e tests need Node >= 20")
    missing = [p for p in _REQUIRED_PACKAGES if not (NODE_DIR / "node_modules" / p).is_dir()]
    if missing:
        raise NodeHarnessError(
            f"{NODE_DIR / 'node_modules'} lacks {', '.join(missing)}: "
            f"run `npm ci` in {NODE_DIR} (the Makefile does this) before the e2e tests"
        )


def reference_chat(messages: list[dict[str, Any]], sdk: int, timeout: float = 60) -> dict[str, Any]:
    """The AI SDK's own server (``reference-server.mjs``: ``streamText`` with its mock model and
    the demo's tools) answering one ``POST /chat`` of ``messages``: ``status``, ``headers``,
    ``thrown``, ``sse``, and the body as the SDK's client reads it (as :func:`validate_sse`).
    Runs in a kept ``--serve`` process (:class:`_Pool`), each request answered on its own."""
    [result] = _pool("reference-server.mjs", sdk, keep=1).ask([{"messages": messages}], timeout)[
        "results"
    ]
    if not isinstance(result, dict):
        raise NodeHarnessError(f"reference-server.mjs returned {type(result).__name__}")
    return result


def validate_sse(
    bodies: list[bytes] | list[str],
    sdk: int,
    names: Sequence[str] | None = None,
    timeout: float = 60,
    messages: Sequence[dict[str, Any] | None] | None = None,
) -> list[dict[str, Any]]:
    """Validate SSE response bodies with the real client of AI SDK ``sdk`` (5, 6 or 7).

    ``messages[i]``, when given, is the assistant message body ``i`` continues (the last message
    of its request), so its results can find the tool parts of earlier responses.

    Returns one dict per body: ``name`` (the given name or the index), ``ok``, ``chunks`` (parsed
    chunks up to the first invalid one), ``error`` (``"Name: message"`` or None), ``errorChunks``
    (texts of valid ``error`` chunks), ``message`` (the UIMessage built by
    ``readUIMessageStream``, or None) and ``toolStates`` (the tool parts, ``toolCallId``,
    ``state`` and ``input``, of each snapshot that changed them: what the page renders while a
    call's input streams). Bytes are passed through unchanged (base64).
    """
    if names is not None and len(names) != len(bodies):
        raise ValueError("names and bodies differ in length")
    if messages is not None and len(messages) != len(bodies):
        raise ValueError("messages and bodies differ in length")
    items: list[dict[str, Any]] = []
    all_bodies: list[bytes | str] = [*bodies]
    for index, body in enumerate(all_bodies):
        name = names[index] if names is not None else str(index)
        if isinstance(body, bytes):
            items.append({"name": name, "bodyBase64": base64.b64encode(body).decode("ascii")})
        elif isinstance(body, str):
            items.append({"name": name, "body": body})
        else:
            raise TypeError(f"body {index} is {type(body).__name__}, not bytes or str")
        if messages is not None and messages[index] is not None:
            items[-1]["message"] = messages[index]
    result = _pool("validate-sse.mjs", sdk, keep=1).ask(items, timeout)["results"]
    if not isinstance(result, list):
        raise NodeHarnessError(f"validate-sse.mjs returned {type(result).__name__}, not a list")
    return result


class _Served:
    """One ``<script> --sdk N --serve`` process: one JSON line in, one JSON line out, so the
    test process checks a body or drives a chat without starting Node and loading the SDK again
    (about half a second of CPU each, for hundreds of calls a run). One call at a time; a call
    that times out or finds the process gone ends it and raises :class:`NodeHarnessError`."""

    def __init__(self, script: str, sdk: int) -> None:
        self.script = script
        self.sdk = sdk
        node = shutil.which("node")
        assert node is not None  # check_node_harness() came first
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (it lives as the process does)
        self.process = subprocess.Popen(
            [node, script, "--sdk", str(sdk), "--serve"],
            cwd=NODE_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )

    def ask(self, payload: Any, timeout: float) -> dict[str, Any]:
        """The process's answer to ``payload``; a ``usageError`` answer is raised (and ends the
        process: a run of its own would have exited)."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(payload).encode() + b"\n")
            stdin.flush()
            ready, _, _ = select.select([stdout], [], [], timeout)
            line = stdout.readline() if ready else b""
        except OSError:
            line = b""
        if not line:
            raise NodeHarnessError(
                f"{self.script} --sdk {self.sdk} --serve gave no answer within {timeout}s;"
                f" stderr:\n{self.stop()}"
            )
        reply: dict[str, Any] = json.loads(line)
        if "usageError" in reply:
            stderr = self.stop()
            raise NodeHarnessError(
                f"{self.script} --sdk {self.sdk} refused its input: {reply['usageError']}"
                + (f"; stderr:\n{stderr}" if stderr.strip() else "")
            )
        return reply

    def stop(self) -> str:
        """End the process; what it wrote to stderr."""
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.process.kill()
        self.process.wait()
        with self.stderr:
            self.stderr.seek(0)
            return self.stderr.read().decode(errors="replace")[-4000:]

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


class _Pool:
    """The kept ``--serve`` processes of one script and SDK, for the test process: a call takes
    an idle one (or starts one), so calls from several threads run side by side, each in a
    process of its own; at most ``keep`` idle ones are kept."""

    def __init__(self, script: str, sdk: int, keep: int) -> None:
        self.script = script
        self.sdk = sdk
        self.keep = keep
        self.lock = threading.Lock()
        self.idle: list[_Served] = []

    def ask(self, payload: Any, timeout: float) -> dict[str, Any]:
        check_node_harness()  # (every call, as a run of its own would: the hint stays)
        with self.lock:
            served = self.idle.pop() if self.idle else None
        if served is not None and not served.alive:
            served.stop()  # (gone by itself: its pipes and stderr file are still open)
            served = None
        if served is None:
            served = _Served(self.script, self.sdk)
        reply = served.ask(payload, timeout)  # raises, and ends the process, on failure
        with self.lock:
            if len(self.idle) < self.keep:
                self.idle.append(served)
                served = None
        if served is not None:
            served.stop()
        return reply

    def stop(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for served in idle:
            served.stop()


_POOLS: dict[tuple[str, int], _Pool] = {}
_POOLS_LOCK = threading.Lock()


def _pool(script: str, sdk: int, keep: int) -> _Pool:
    if sdk not in SUPPORTED_SDKS:
        raise ValueError(f"sdk must be one of {SUPPORTED_SDKS}, got {sdk!r}")
    with _POOLS_LOCK:
        return _POOLS.setdefault((script, sdk), _Pool(script, sdk, keep))


@atexit.register
def _stop_pools() -> None:
    for pool in _POOLS.values():
        pool.stop()


def drive_chat(spec: dict[str, Any], sdk: int, timeout: float = 60) -> dict[str, Any]:
    """Drive the real ``AbstractChat`` of AI SDK ``sdk`` (5, 6 or 7) against a live server.

    ``spec`` is the JSON spec documented in ``node/chat-driver.mjs``. Returns the driver's report
    (``status``, ``error``, ``messages``, ``requests``, ``responses``, ``toolCalls``, ``loop``,
    ``timeout``, ...). Raises `NodeHarnessError` if node fails or the driver reports a harness
    error (``driverError``: a bad step, a rejected client-side call).

    Live mode: ``spec["transport"]`` ``"ws"`` (the stock ``WebSocketChatTransport``, sdk 7 only)
    or ``"ws-js"`` (the module at ``spec["transportJsUrl"]``, exporting ``AdkLiveTransport``; sdk
    5, 6 and 7) connects to ``spec["wsUrl"]`` (query ``spec["wsParams"]``), sending
    ``spec["headers"]``' cookie in the opening handshake. Then ``requests`` holds the ``send``
    frames, ``responses`` is empty, and ``frames`` lists every data frame
    (``{"dir": "out" | "in", "frame": ...}``) and ``sockets`` every connection.

    Runs in a kept ``chat-driver.mjs --serve`` process (:class:`_Pool`; two idle ones kept per
    SDK), a new ``ChatDriver`` each time, as a run of its own would.
    """
    result = _pool("chat-driver.mjs", sdk, keep=2).ask(spec, timeout)["report"]
    if not isinstance(result, dict):
        raise NodeHarnessError(f"chat-driver.mjs returned {type(result).__name__}, not an object")
    if result.get("driverError") is not None:
        raise NodeHarnessError(f"chat-driver.mjs reported: {result['driverError']}")
    return result


async def validate_sse_async(
    bodies: list[bytes] | list[str],
    sdk: int,
    names: Sequence[str] | None = None,
    node_timeout: float = 60,
) -> list[dict[str, Any]]:
    """`validate_sse` in a worker thread (keeps the event loop free)."""
    return await anyio.to_thread.run_sync(
        functools.partial(validate_sse, bodies, sdk, names, node_timeout)
    )


async def drive_chat_async(
    spec: dict[str, Any], sdk: int, node_timeout: float = 60
) -> dict[str, Any]:
    """`drive_chat` in a worker thread (keeps the event loop free for an in-process server)."""
    return await anyio.to_thread.run_sync(functools.partial(drive_chat, spec, sdk, node_timeout))
