"""A local Gemini: an HTTPS and WSS server that answers as the public Gemini API does.

Point an unchanged ``LlmAgent(model="gemini-2.5-flash")`` at it and ADK's own ``Gemini`` class,
google-genai's HTTP client and its Live WebSocket client all run for real, offline::

    with GeminiStandIn(responder=my_responder) as gemini, gemini.installed():
        ...  # GOOGLE_GEMINI_BASE_URL, GOOGLE_API_KEY and SSL_CERT_FILE point at it

It serves ``models/{model}:streamGenerateContent?alt=sse``, ``:generateContent`` and the Live
API's ``BidiGenerateContent`` WebSocket, in the shapes and order of :mod:`.gemini_wire`. The
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
import secrets
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

from adk_asgi.testing.gemini_wire import (
    JSON,
    LiveTurn,
    WireFailure,
    contents_of,
    error_body,
    generate_once,
    generate_stream,
    interruption,
    pairing_error,
)
from adk_asgi.testing.live import transcribe_utf8
from adk_asgi.testing.llm import ScriptedLlm
from adk_asgi.testing.scripted import Responder, Turn

__all__ = ["API_KEY", "GeminiStandIn"]

API_KEY = "stand-in-key"
"""The key the stand-in expects (any non-empty key is taken; this one is what it installs)."""
REQUEST_LOG_SIZE = 1000
READING_RESULTS = 0.05
"""Seconds the model takes before it answers a ``toolResponse`` (Gemini takes longer): a
client turn that comes meanwhile interrupts that answer before its first word, as a client
message interrupts any generation under way."""
_LOG = logging.getLogger("adk_asgi.testing.gemini")
_ELSEWHERE = ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE")
"""What would send google-genai elsewhere (Vertex AI, another key): unset while installed."""
Pace = Callable[[Sequence[types.Content]], float]


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
            setup = _field(await _receive_json(websocket), "setup")
        except WebSocketDisconnect:
            return
        if not isinstance(setup, dict):
            await websocket.close(code=1007, reason="The first message must be a setup.")
            return
        self.requests.append({"setup": setup})
        session = LiveSession(self, websocket, setup)
        await session.run()


class LiveSession:
    """One Live API WebSocket: the conversation so far, and the turns it answers with."""

    def __init__(self, stand_in: GeminiStandIn, websocket: WebSocket, setup: JSON) -> None:
        self.stand_in = stand_in
        self.script = stand_in.script_for(str(_field(setup, "model") or ""))
        self.websocket = websocket
        generation = _field(setup, "generation_config") or {}
        modalities = _field(generation, "response_modalities") or []
        self.audio = "AUDIO" in modalities
        self.transcribe_input = _field(setup, "input_audio_transcription") is not None
        self.transcribe_output = _field(setup, "output_audio_transcription") is not None
        realtime = _field(setup, "realtime_input_config") or {}
        detection = _field(realtime, "automatic_activity_detection") or {}
        self.manual_activity = bool(_field(detection, "disabled"))
        resumption = _field(setup, "session_resumption")
        self.resumable = resumption is not None
        handle = _field(resumption or {}, "handle")
        self.contents: list[types.Content] = list(stand_in.resumable.get(handle or "", []))
        self.audio_in = bytearray()
        self.replies: asyncio.Queue[str | None] = asyncio.Queue()
        """The replies owed: to a user turn (what was heard, ``""`` if typed) or to results
        (``None``)."""
        self.speaking: LiveTurn | None = None
        self.barge_in = asyncio.Event()

    async def run(self) -> None:
        await self.websocket.send_text(json.dumps({"setupComplete": {}}))
        try:
            async with asyncio.TaskGroup() as group:
                answering = group.create_task(self._answer())
                await self._read()
                answering.cancel()
        except* (WebSocketDisconnect, _Closed):
            pass

    async def _read(self) -> None:
        while True:
            message = await _receive_json(self.websocket)
            self.stand_in.requests.append(message)
            if (content := _field(message, "client_content")) is not None:
                turns = [types.Content.model_validate(t) for t in _field(content, "turns") or []]
                self.contents.extend(turns)
                if _field(content, "turn_complete"):
                    self._user_spoke("")
            elif (response := _field(message, "tool_response")) is not None:
                answers = _field(response, "function_responses") or []
                parts = [
                    types.Part(function_response=types.FunctionResponse.model_validate(a))
                    for a in answers
                ]
                self.contents.append(types.Content(role="user", parts=parts))
                if pairing_error(self.contents) is not None:
                    # Results that do not follow their calls (the user's turn came between
                    # them): Gemini pairs each call with its response, as over REST.
                    await self._close(1007, "Request contains an invalid argument.")
                self.replies.put_nowait(None)  # (a tool's answer never interrupts)
            elif (realtime := _field(message, "realtime_input")) is not None:
                await self._realtime(realtime)
            else:
                await self._close(1007, "Invalid JSON payload: unknown client message.")

    async def _realtime(self, realtime: JSON) -> None:
        signals = ("activity_start", "activity_end")
        activity = [k for k in signals if _field(realtime, k) is not None]
        if activity and not self.manual_activity:
            # The Live API takes activity signals only when automatic activity detection is
            # off (``realtimeInputConfig.automaticActivityDetection.disabled``).
            await self._close(
                1007,
                "Explicit activity control is not enabled.",
            )
        if (text := _field(realtime, "text")) is not None:
            self.contents.append(types.Content(role="user", parts=[types.Part(text=text)]))
            self._user_spoke("")
        for blob in [_field(realtime, "audio"), *(_field(realtime, "media_chunks") or [])]:
            if isinstance(blob, dict) and str(_field(blob, "mime_type") or "").startswith("audio/"):
                self.audio_in += types.Blob.model_validate(blob).data or b""
        if "activity_start" in activity:
            self.audio_in.clear()
            if self.speaking is not None:
                self.barge_in.set()
        if "activity_end" in activity or _field(realtime, "audio_stream_end"):
            heard, self.audio_in = bytes(self.audio_in), bytearray()
            text = self.stand_in.transcribe(heard) if heard else ""
            if text:
                self.contents.append(types.Content(role="user", parts=[types.Part(text=text)]))
                self._user_spoke(text)

    def _user_spoke(self, heard: str) -> None:
        if self.speaking is not None:
            self.barge_in.set()
        self.replies.put_nowait(heard)

    async def _answer(self) -> None:
        while True:
            heard = await self.replies.get()
            if heard is None:
                await asyncio.sleep(READING_RESULTS)
                if not self.replies.empty():  # the client spoke first: that answer is dropped
                    for message in interruption():
                        await self._send(message)
                    continue
            if heard and self.transcribe_input:
                heard_all = {"text": heard, "finished": True}  # (what was heard, then done)
                await self._send({"serverContent": {"inputTranscription": heard_all}})
            contents = list(self.contents)
            try:
                turn = self.script.next_turn(contents)
            except Exception as exc:  # (a responder that raises: the session fails)
                await self._close(1011, f"Internal error encountered: {exc}")
                return
            live = LiveTurn.of(
                turn,
                contents,
                audio=self.audio,
                transcribe_output=self.transcribe_output,
                synthesize=self.stand_in.synthesize,
                chunk_size=self.stand_in.chunk_size,
                resumption_handle=secrets.token_hex(8) if self.resumable else None,
            )
            await self._speak(live, self.stand_in.delay(contents))

    async def _speak(self, live: LiveTurn, delay: float) -> None:
        self.speaking, cut = live, False
        self.barge_in.clear()
        at = len(self.contents)  # (what the user says meanwhile comes after this turn)
        try:
            for message in live.deltas():
                await asyncio.sleep(delay)
                if self.barge_in.is_set():
                    cut = True
                    break
                await self._send(message)
        except WireFailure as failure:
            await self._close(1011, failure.message)
        finally:
            self.speaking = None
        if said := live.said(cut=cut):
            self.contents.insert(at, said)
        ending = live.interrupted() if cut else live.ending()
        for message in ending:
            await asyncio.sleep(delay)
            await self._send(message)
        if live.resumption_handle is not None:
            self.stand_in.resumable[live.resumption_handle] = list(self.contents)

    async def _send(self, message: JSON) -> None:
        await self.websocket.send_text(json.dumps(message))

    async def _close(self, code: int, reason: str) -> None:
        _LOG.info("gemini stand-in: closing a live session (%s): %s", code, reason)
        with contextlib.suppress(Exception):
            await self.websocket.close(code=code, reason=reason[:120])
        raise _Closed


class _QuietH11(H11Protocol):
    """uvicorn's HTTP protocol without access lines (the process's access logger is shared
    with its other servers: only this one's connections leave it out)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.access_log = False


class _Closed(Exception):
    """The stand-in closed the session (Gemini's error close)."""


def _has_key(*keys: str | None) -> bool:
    return any(keys)


def _field(message: Any, name: str) -> Any:
    """A proto3 JSON field by either of its names (``client_content`` / ``clientContent``)."""
    if not isinstance(message, dict):
        return None
    if name in message:
        return message[name]
    head, *rest = name.split("_")
    return message.get(head + "".join(word.title() for word in rest))


async def _receive_json(websocket: WebSocket) -> JSON:
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    raw = message.get("text") or message.get("bytes") or b""
    try:
        decoded = json.loads(raw)
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict):
        await websocket.close(code=1007, reason="Invalid JSON payload.")
        raise _Closed
    return decoded


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
