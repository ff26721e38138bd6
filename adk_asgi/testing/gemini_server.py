"""A local Gemini: an HTTPS and WSS server that answers as the public Gemini API does.

Point an unchanged ``LlmAgent(model="gemini-2.5-flash")`` at it and ADK's own ``Gemini`` class,
google-genai's HTTP client and its Live WebSocket client all run for real, offline::

    with GeminiStandIn(responder=my_responder) as gemini, gemini.installed():
        ...  # GOOGLE_GEMINI_BASE_URL, GOOGLE_API_KEY and SSL_CERT_FILE point at it

It serves ``models/{model}:streamGenerateContent?alt=sse``, ``:generateContent`` and the Live
API's ``BidiGenerateContent`` WebSocket (a session of it: :mod:`.gemini_live`), in the shapes
and order of :mod:`.gemini_wire`. The
answers come from the script language of :mod:`.scripted`, as ``ScriptedLlm``'s do (``turns=``
or ``responder=``), so one scenario runs on both models.

Why TLS: google-genai dials ``wss://`` for live whatever the base URL's scheme, so the server
speaks TLS with a throw-away certificate made for ``127.0.0.1``, and ``SSL_CERT_FILE`` names a
bundle that holds it (google-genai reads that variable as it builds its client).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import os
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import uvicorn
from google.genai import types
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect
from uvicorn.protocols.http.h11_impl import H11Protocol

from adk_asgi.testing.gemini_live import LiveSession, field, receive_json
from adk_asgi.testing.gemini_wire import (
    JSON,
    WireFailure,
    contents_of,
    error_body,
    generate_once,
    generate_stream,
    pairing_error,
)
from adk_asgi.testing.live import transcribe_utf8
from adk_asgi.testing.llm import ScriptedLlm
from adk_asgi.testing.scripted import Responder, Turn

__all__ = ["API_KEY", "GeminiStandIn"]

API_KEY = "stand-in-key"
"""The key the stand-in expects (any non-empty key is taken; this one is what it installs)."""
REQUEST_LOG_SIZE = 1000
_LOG = logging.getLogger("adk_asgi.testing.gemini")
_ELSEWHERE = ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE")
"""What would send google-genai elsewhere (Vertex AI, another key): unset while installed."""
Pace = Callable[[Sequence[types.Content]], float]


KEEP_ALIVE_S = 610
"""How long an idle HTTP connection stays open: the default of Google Cloud's external
Application Load Balancer, the front end that serves Google's APIs."""


class GeminiStandIn:
    """A local Gemini API (see the module docstring); a context manager that runs it in a
    thread of its own, on a free loopback port, with TLS.

    ``turns`` / ``responder``: the script, as for ``ScriptedLlm``; ``by_model``: another
    responder for requests to the models it names (a team whose agents run on different
    models, each answering its own way). ``delay``: seconds before
    each streamed message (or a function of the conversation: a "slowly" that paces a turn).
    ``transcribe`` / ``synthesize``: the Live API's speech stand-ins (UTF-8 by default, as
    ``ScriptedLlm``'s). ``requests`` logs every request body and Live client message.
    """

    def __init__(
        self,
        *,
        turns: Sequence[Turn] | None = None,
        responder: Responder | None = None,
        by_model: Mapping[str, Responder] | None = None,
        chunk_size: int = 8,
        delay: float | Pace = 0.0,
        transcribe: Callable[[bytes], str] = transcribe_utf8,
        synthesize: Callable[[str], bytes] = str.encode,
    ) -> None:
        self.script = ScriptedLlm(turns=turns, responder=responder, chunk_size=chunk_size)
        self.scripts = {
            model.removeprefix("models/"): ScriptedLlm(responder=answer, chunk_size=chunk_size)
            for model, answer in (by_model or {}).items()
        }
        self.chunk_size = chunk_size
        self._delay = delay
        self.transcribe = transcribe
        self.synthesize = synthesize
        self.requests: deque[JSON] = deque(maxlen=REQUEST_LOG_SIZE)
        self.resumable: dict[str, list[types.Content]] = {}
        """Live conversations by resumption handle (a client may reconnect with one)."""
        self.app = Starlette(
            routes=[
                Route("/{version}/models/{call}", self._generate, methods=["POST"]),
                WebSocketRoute("/ws/{method}", self._live),
            ]
        )
        self.base_url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._files: tempfile.TemporaryDirectory[str] | None = None
        self.ca_bundle = ""

    def script_for(self, model: str) -> ScriptedLlm:
        """The script that answers requests to ``model`` (``models/…`` or the bare name)."""
        return self.scripts.get(model.removeprefix("models/"), self.script)

    def delay(self, contents: Sequence[types.Content]) -> float:
        return self._delay(contents) if callable(self._delay) else self._delay

    # --- running ---------------------------------------------------------------------------

    def __enter__(self) -> GeminiStandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Serve on a free loopback port, in a thread with its own event loop."""
        self._files = tempfile.TemporaryDirectory(prefix="gemini-stand-in-")
        folder = Path(self._files.name)
        cert, key = _self_signed(folder)
        bundle = folder / "ca-bundle.pem"
        bundle.write_bytes(cert.read_bytes())
        self.ca_bundle = str(bundle)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            # The process's logging is its own (a demo's server configures it): no log config,
            # level or access switch here, which would reach every server of the process.
            log_config=None,
            log_level=None,
            http=_QuietH11,
            lifespan="off",
            ssl_certfile=str(cert),
            ssl_keyfile=str(key),
            ws_max_size=64 * 1024 * 1024,
            # Google's front ends keep an idle connection 610 s. uvicorn's 5 s default is
            # google-genai's (httpx's) own pool expiry: a request sent at the edge went out on
            # a connection being closed ("Server disconnected without sending a response").
            timeout_keep_alive=KEEP_ALIVE_S,
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._serve, args=(server, sock), name="gemini-stand-in", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the Gemini stand-in did not start")
            time.sleep(0.01)
        self.base_url = f"https://127.0.0.1:{port}"

    @staticmethod
    def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        except Exception:
            if not server.should_exit:
                raise
            # (uvicorn's shutdown sends a close on a WebSocket the client is closing, and
            # websockets refuses it: the stand-in is stopping anyway)
            _LOG.debug("gemini stand-in: an error as it stopped", exc_info=True)

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = self._thread = None
        if self._files is not None:
            self._files.cleanup()
            self._files = None

    @property
    def environ(self) -> dict[str, str]:
        """What points google-genai (and so ADK's ``Gemini``) here: for a server process you
        start yourself, or :meth:`installed` for this one."""
        return {
            "GOOGLE_GEMINI_BASE_URL": self.base_url,
            "GOOGLE_API_KEY": API_KEY,
            "SSL_CERT_FILE": self.ca_bundle,
        }

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Set :attr:`environ` in this process (restored on exit). google-genai reads it when
        a client is built: build the agents after this, not before."""
        saved = {name: os.environ.get(name) for name in (*self.environ, *_ELSEWHERE)}
        for name in _ELSEWHERE:
            os.environ.pop(name, None)
        os.environ.update(self.environ)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    # --- REST --------------------------------------------------------------------------------

    async def _generate(self, request: Request) -> Response:
        model, _, method = request.path_params["call"].partition(":")
        if not _has_key(request.headers.get("x-goog-api-key"), request.query_params.get("key")):
            return JSONResponse(error_body(403, "API key not valid.", "PERMISSION_DENIED"), 403)
        try:
            body = json.loads(await request.body())
            contents = contents_of(body)
        except (ValueError, TypeError) as exc:
            invalid = error_body(400, f"Invalid JSON payload: {exc}", "INVALID_ARGUMENT")
            return JSONResponse(invalid, 400)
        self.requests.append({"model": model, "method": method, **body})
        if (unpaired := pairing_error(contents)) is not None:
            return JSONResponse(error_body(400, unpaired, "INVALID_ARGUMENT"), 400)
        turn = self.script_for(model).next_turn(contents)
        if method == "generateContent":
            try:
                return JSONResponse(generate_once(turn, contents, model=model))
            except WireFailure as failure:
                return JSONResponse(error_body(500, failure.message, "INTERNAL"), 500)
        if method != "streamGenerateContent":
            return JSONResponse(error_body(404, f"Method not found: {method}", "NOT_FOUND"), 404)
        delay = self.delay(contents)
        chunks = generate_stream(turn, contents, model=model, chunk_size=self.chunk_size)

        async def stream() -> Any:
            try:
                for chunk in chunks:
                    await asyncio.sleep(delay)
                    yield f"data: {json.dumps(chunk)}\r\n\r\n"
            except WireFailure as failure:  # Gemini ends a failed stream with its error
                yield f"data: {json.dumps(error_body(500, failure.message, 'INTERNAL'))}\r\n\r\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    # --- Live ------------------------------------------------------------------------------

    async def _live(self, websocket: WebSocket) -> None:
        if not _has_key(websocket.headers.get("x-goog-api-key"), websocket.query_params.get("key")):
            await websocket.close(code=1008, reason="API key not valid.")
            return
        await websocket.accept()
        try:
            setup = field(await receive_json(websocket), "setup")
        except WebSocketDisconnect:
            return
        if not isinstance(setup, dict):
            await websocket.close(code=1007, reason="The first message must be a setup.")
            return
        self.requests.append({"setup": setup})
        session = LiveSession(self, websocket, setup)
        await session.run()


class _QuietH11(H11Protocol):
    """uvicorn's HTTP protocol without access lines (the process's access logger is shared
    with its other servers: only this one's connections leave it out)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.access_log = False


def _has_key(*keys: str | None) -> bool:
    return any(keys)


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A throw-away certificate for ``127.0.0.1`` and ``localhost`` (its own CA)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "adk-asgi Gemini stand-in")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
