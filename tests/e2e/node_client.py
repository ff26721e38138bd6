"""Run the Node harness (the real Vercel AI SDK, ai@5, ai@6 and ai@7) from Python tests.

``validate_sse`` checks SSE bodies with the SDK's own parser, schema and stream processing, in
one Node process per SDK that the test process keeps (:class:`_Validator`); ``drive_chat``
drives the SDK's own ``AbstractChat`` + ``DefaultChatTransport`` against a live server. The
scripts live in ``tests/e2e/node`` (see the headers of ``validate-sse.mjs`` and
``chat-driver.mjs`` for the JSON formats). ``npm ci`` must have been run in that directory.

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
from typing import IO, Any

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


def _run_node(script: str, sdk: int, payload: Any, timeout: float) -> Any:
    if sdk not in SUPPORTED_SDKS:
        raise ValueError(f"sdk must be one of {SUPPORTED_SDKS}, got {sdk!r}")
    check_node_harness()
    node = shutil.which("node")
    assert node is not None  # checked above
    try:
        proc = subprocess.run(
            [node, script, "--sdk", str(sdk)],
            cwd=NODE_DIR,
            input=json.dumps(payload).encode(),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        stderr = (exc.stderr or b"").decode(errors="replace")
        raise NodeHarnessError(
            f"node {script} --sdk {sdk} did not finish within {timeout}s; stderr:\n{stderr}"
        ) from exc
    stdout = proc.stdout.decode(errors="replace")
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise NodeHarnessError(
            f"node {script} --sdk {sdk} exited with {proc.returncode}; stderr:\n{stderr}"
            f"\nstdout:\n{stdout[:2000]}"
        )
    try:
        return json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise NodeHarnessError(
            f"node {script} --sdk {sdk} printed no JSON ({exc}); stdout:\n{stdout[:2000]}"
            f"\nstderr:\n{stderr}"
        ) from exc


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
    result = _validator(sdk).validate(items, timeout)
    if not isinstance(result, list):
        raise NodeHarnessError(f"validate-sse.mjs returned {type(result).__name__}, not a list")
    return result


class _Validator:
    """``validate-sse.mjs --serve`` for one SDK, kept for the test process: a body is checked
    without starting Node and loading the SDK again (about half a second of CPU each, for
    hundreds of checks a run). Calls are serialized; one that times out or finds the process
    gone ends it (the next call starts another) and raises :class:`NodeHarnessError`."""

    def __init__(self, sdk: int) -> None:
        self.sdk = sdk
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr: IO[bytes] | None = None

    def validate(self, items: list[dict[str, Any]], timeout: float) -> Any:
        check_node_harness()  # (every call, as a run of its own would: the hint stays)
        with self.lock:
            process = self.process or self._start()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(json.dumps(items).encode() + b"\n")
                process.stdin.flush()
                ready, _, _ = select.select([process.stdout], [], [], timeout)
                line = process.stdout.readline() if ready else b""
            except OSError:
                line = b""
            if not line:
                stderr = self._stop()
                raise NodeHarnessError(
                    f"validate-sse.mjs --sdk {self.sdk} --serve gave no answer within"
                    f" {timeout}s; stderr:\n{stderr}"
                )
        reply = json.loads(line)
        if "usageError" in reply:
            raise NodeHarnessError(f"validate-sse.mjs refused its input: {reply['usageError']}")
        return reply["results"]

    def _start(self) -> subprocess.Popen[bytes]:
        node = shutil.which("node")
        assert node is not None  # checked above
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (it lives as the process does)
        self.process = subprocess.Popen(
            [node, "validate-sse.mjs", "--sdk", str(self.sdk), "--serve"],
            cwd=NODE_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        return self.process

    def _stop(self) -> str:
        """End the process; what it wrote to stderr."""
        process, self.process = self.process, None
        if process is not None:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            process.kill()
            process.wait()
        stderr, self.stderr = self.stderr, None
        if stderr is None:
            return ""
        with stderr:
            stderr.seek(0)
            return stderr.read().decode(errors="replace")[-4000:]


_VALIDATORS: dict[int, _Validator] = {}
_VALIDATORS_LOCK = threading.Lock()


def _validator(sdk: int) -> _Validator:
    if sdk not in SUPPORTED_SDKS:
        raise ValueError(f"sdk must be one of {SUPPORTED_SDKS}, got {sdk!r}")
    with _VALIDATORS_LOCK:
        return _VALIDATORS.setdefault(sdk, _Validator(sdk))


@atexit.register
def _stop_validators() -> None:
    for validator in _VALIDATORS.values():
        validator._stop()


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
    """
    result = _run_node("chat-driver.mjs", sdk, spec, timeout)
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
