"""A reader that stops reading holds the model, not the server's memory (adk_asgi.serving.pace).

Under a real uvicorn, a raw socket sends a chat request, reads a little of a long answer, then
reads nothing for a while. ADK hands events from the agent's task to the bridge through an
unbounded queue; how many events wait in it — made by the model but not yet taken by the
bridge — is counted from both ends: the agent's own ``after_model_callback`` (which ADK runs
after the plugins, so after the pace plugin let the response go) and a plugin's
``on_event_callback`` (which the runner calls as the bridge takes each event). Without the
plugin that backlog grows with the answer for as long as the reader sleeps; with it, it stays
at a few events. Then the reader reads on, and the answer arrives whole.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvicorn
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.context import Context
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin

from adk_asgi import AdkApp
from adk_asgi.serving.pace import PaceToReader
from adk_asgi.testing import ScriptedLlm, Text
from tests.support import parse_sse

pytestmark = pytest.mark.e2e

DELTAS = 4000
TEXT = "".join(f"{i:07d}," for i in range(DELTAS))  # 8 characters a delta
SMALL_BUFFER = 16 * 1024
"""Socket buffers of both ends, so the reader's pause is felt within a few hundred deltas."""


class Backlog:
    """Model responses made and events taken by the bridge, counted as they happen."""

    def __init__(self) -> None:
        self.made = 0
        self.taken = 0
        self.most = 0

    def after_model(self, callback_context: CallbackContext, llm_response: LlmResponse) -> None:
        self.made += 1
        self.most = max(self.most, self.made - self.taken)


class Taken(BasePlugin):
    def __init__(self, backlog: Backlog) -> None:
        super().__init__(name="taken")
        self.backlog = backlog

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        self.backlog.taken += 1
        return None


@asynccontextmanager
async def serve(app: AdkApp) -> AsyncIterator[int]:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_BUFFER)  # (inherited)
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
        await asyncio.sleep(0.01)
    try:
        yield listener.getsockname()[1]
    finally:
        server.should_exit = True
        await task
        await app.aclose()


async def read_with_a_pause(
    port: int, pause: float, until: Callable[[], bool] | None = None
) -> bytes:
    """POST a chat request, read 4 KiB, stop reading for ``pause`` seconds (or, with
    ``until``, until it says so, for at most ``pause``), then read to the end."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}
    body = json.dumps({"id": "chat-1", "messages": [user]}).encode()
    head = (
        "POST /chat HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    await loop.sock_sendall(sock, head + body)
    received = bytearray()
    paused = False
    with sock:
        while chunk := await loop.sock_recv(sock, 4096):
            received += chunk
            if not paused and len(received) >= 4096:
                paused = True
                deadline = loop.time() + pause
                while loop.time() < deadline and not (until is not None and until()):  # noqa: ASYNC110 (a count, no event)
                    await asyncio.sleep(0.01 if until is not None else deadline - loop.time())
    return bytes(received)


def long_answer(backlog: Backlog) -> AdkApp:
    model = ScriptedLlm(turns=[[Text(TEXT)]], chunk_size=8)
    agent = LlmAgent(name="talker", model=model, after_model_callback=backlog.after_model)
    return AdkApp(agent, identify=lambda c: "u", plugins=[Taken(backlog)])


async def _let_go(self: PaceToReader, **_: Any) -> None:
    return None


def text_of(raw: bytes) -> str:
    _, _, body = raw.partition(b"\r\n\r\n")
    chunks: list[dict[str, Any]] = parse_sse(_dechunk(body))
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def _dechunk(body: bytes) -> bytes:
    """The body of a ``transfer-encoding: chunked`` response."""
    out = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return bytes(out)


@pytest.mark.parametrize("paced", [True, False], ids=["paced", "control"])
async def test_a_paused_reader_holds_the_model_and_then_gets_the_whole_answer(
    paced: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not paced:  # the control: the pace plugin lets every response go at once
        monkeypatch.setattr(PaceToReader, "after_model_callback", _let_go)
    backlog = Backlog()
    # The control's reader stays away until the model ran far ahead, however slow a loaded
    # machine makes the model (a fixed pause let a slow model fill only the socket buffers).
    ahead = None if paced else (lambda: backlog.most > 1000)
    async with serve(long_answer(backlog)) as port:
        raw = await read_with_a_pause(port, pause=1.5 if paced else 30, until=ahead)
    assert text_of(raw) == TEXT
    assert backlog.made == DELTAS + 1  # every partial, then the whole text
    if paced:
        assert backlog.most <= 3
    else:  # the control shows what the plugin prevents
        assert backlog.most > 1000


async def test_pacing_copies_no_invocation_context_per_streamed_response(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pace plugin runs for every streamed response: it finds its run's reader in a
    context variable, not through ``get_invocation_context()``, which copies ADK's invocation
    context (16 µs, a third of the bridge's own CPU per delta at fifty chats,
    docs/internals/performance-notes.md)."""
    copies = 0
    copy = Context.get_invocation_context

    def counted(self: Context) -> InvocationContext:
        nonlocal copies
        copies += 1
        return copy(self)

    monkeypatch.setattr(Context, "get_invocation_context", counted)
    backlog = Backlog()
    async with serve(long_answer(backlog)) as port:
        raw = await read_with_a_pause(port, pause=0.5)
    assert text_of(raw) == TEXT
    assert backlog.made == DELTAS + 1
    assert backlog.most <= 3  # still paced
    assert copies <= 2  # per model call (sse/pause.py and ADK itself), not per delta (4,001)
