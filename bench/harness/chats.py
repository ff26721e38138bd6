"""One chat over HTTP as a user's browser makes it, and its stream checked chunk by chunk.

Shared by the benches that send many chats at once (``bench.concurrency``, ``bench.scale_out``,
``bench.slow_clients``). A :class:`Wire` says what a server's streams look like: adk_asgi's
(the AI SDK's UI message stream) or its peer's (AG-UI, ``bench.harness.peers``);
:func:`sse_payloads` reads an SSE body back.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import ssl
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx
import msgspec

from bench.harness.agent import answer_text
from bench.harness.peers import (
    AGUI_PATH,
    CONTENT,
    HEADERS,
    agui_body,
    agui_canonical,
    agui_complete,
    agui_problem,
)
from bench.harness.probes import Clocks
from bench.harness.rows import Timed

DONE: Final = "[DONE]"
REPLY_DELTAS: Final = 300
"""Text deltas of a normal chat's reply (2,400 characters: a few paragraphs), in the benches
of many chats at once (``bench.concurrency``, ``bench.slow_clients``)."""
_JSON = msgspec.json.Decoder(dict[str, Any])


def sse_payloads(data: bytes) -> list[tuple[str, int]]:
    """The ``data:`` payloads of an SSE body, each with the offset where its event ends
    (comments, such as keep-alives, skipped)."""
    found: list[tuple[str, int]] = []
    start = 0
    while True:
        end = data.find(b"\n\n", start)
        if end < 0:
            return found
        for line in data[start:end].split(b"\n"):
            if line.startswith(b"data: "):
                found.append((line[6:].decode(), end + 2))
        start = end + 2


def chat_body(deltas: int) -> dict[str, Any]:
    """``POST /agent/chat`` as the AI SDK's ``DefaultChatTransport`` sends it, a new chat."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": str(deltas)}]}
    return {"id": uuid.uuid4().hex, "messages": [message], "trigger": "submit-message"}


@dataclass(frozen=True, slots=True)
class Streamed:
    """One chat's response as the client read it."""

    started: float
    """``perf_counter`` when the client began the request (connecting first if it must)."""
    sent: float
    """``perf_counter`` when the request's body was written to the socket (``started`` if it
    never was)."""
    status: int
    """HTTP status; 0 when the request failed (``error``)."""
    data: bytes
    reads: list[tuple[float, int]]
    """(``perf_counter``, bytes read so far) after each read of the body."""
    error: str = ""


async def read_chat(
    client: httpx.AsyncClient,
    url: str,
    deltas: int,
    wire: Wire | None = None,
) -> Streamed:
    """POST one new chat and read its whole body, noting when each piece arrived."""
    wire = wire or AI_SDK
    data = bytearray()
    reads: list[tuple[float, int]] = []
    started = time.perf_counter()
    sent = [started]

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event == "http11.send_request_body.complete":
            sent[0] = time.perf_counter()

    try:
        async with client.stream(
            "POST",
            url,
            json=wire.body(deltas),
            headers=wire.headers,
            extensions={"trace": trace},
        ) as response:
            async for piece in response.aiter_raw():
                data += piece
                reads.append((time.perf_counter(), len(data)))
            status = response.status_code
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"
        return Streamed(started, sent[0], 0, bytes(data), reads, error)
    return Streamed(started, sent[0], status, bytes(data), reads)


def canonical(payloads: Sequence[str]) -> list[str]:
    """The payloads with the message id (random per chat, in ``start`` and every part id)
    replaced, so streams of the same reply compare equal chunk for chunk."""
    if not payloads or payloads[0] == DONE:
        return list(payloads)
    message_id = _JSON.decode(payloads[0]).get("messageId")
    if not isinstance(message_id, str) or not message_id:
        return list(payloads)
    return [payload.replace(message_id, "MSG") for payload in payloads]


@dataclass(frozen=True, slots=True)
class Checked:
    """One stream against the reference: integrity and timing."""

    complete: bool
    """Status 200, no ``error`` chunk, ``[DONE]`` last."""
    exact: bool
    """Every chunk equal to the reference's, in the same order."""
    lost: int
    duplicated: int
    reordered: int
    """Chunks out of place, counted only when none was lost or duplicated."""
    first: float | None
    """Seconds from the request's body on the wire (the floor: the run's start) to its first
    text delta."""
    gaps: list[float]
    """Seconds between consecutive deliveries, from the first text delta to the end."""
    deliveries: int = 0
    """Reads that brought at least one whole chunk (about the server's body writes)."""


def check_stream(stream: Streamed, reference: Sequence[str], wire: Wire | None = None) -> Checked:
    wire = wire or AI_SDK
    parsed = sse_payloads(stream.data)
    payloads = wire.canonical([payload for payload, _ in parsed])
    complete = stream.status == 200 and wire.complete(payloads)
    want, got = Counter(reference), Counter(payloads)
    lost = sum((want - got).values())
    duplicated = sum((got - want).values())
    reordered = 0
    if not lost and not duplicated:
        reordered = sum(a != b for a, b in zip(reference, payloads, strict=True))
    # When each chunk arrived: the first read by which its event's bytes were all in.
    totals = [total for _, total in stream.reads]
    arrivals = [bisect.bisect_left(totals, end) for _, end in parsed]
    first_read = next(
        (
            read
            for (payload, _), read in zip(parsed, arrivals, strict=True)
            if wire.delta in payload
        ),
        None,
    )
    first = None
    gaps: list[float] = []
    if first_read is not None and first_read < len(stream.reads):
        first = stream.reads[first_read][0] - stream.sent
        delivered = sorted({read for read in arrivals if read >= first_read})
        times = [stream.reads[read][0] for read in delivered if read < len(stream.reads)]
        gaps = [b - a for a, b in itertools.pairwise(times)]
    exact = payloads == list(reference)
    deliveries = len(set(arrivals))
    return Checked(complete, exact, lost, duplicated, reordered, first, gaps, deliveries)


def _ai_sdk_problem(payloads: Sequence[str], deltas: int) -> str:
    texts = [_JSON.decode(p)["delta"] for p in payloads if '"text-delta"' in p]
    if len(texts) != deltas or "".join(texts) != answer_text(deltas):
        return f"{len(texts)} text deltas, not the agent's answer of {deltas}"
    if not payloads or payloads[-1] != DONE:
        return "no [DONE] last"
    return ""


def _ai_sdk_complete(payloads: Sequence[str]) -> bool:
    return (
        bool(payloads)
        and payloads[-1] == DONE
        and not any('"type":"error"' in payload for payload in payloads)
    )


@dataclass(frozen=True, slots=True)
class Wire:
    """What one server's chat streams look like, for :class:`Chats` and :func:`check_stream`."""

    path: str
    """Where a chat is posted (:class:`Chats` with a ``wire``)."""
    body: Callable[[int], dict[str, Any]]
    """The request for a new chat answered with N deltas."""
    headers: dict[str, str] | None
    canonical: Callable[[Sequence[str]], list[str]]
    """The payloads with the ids that differ per chat replaced."""
    complete: Callable[[Sequence[str]], bool]
    """Whether (canonical) payloads are a whole answer with no error."""
    delta: str
    """In the payload of a text delta and no other (what the time to first text waits for)."""
    problem: Callable[[Sequence[str], int], str]
    """Why the payloads of one answer alone are not the agent's N deltas (``""``: they are)."""


AI_SDK: Final = Wire(
    "/agent/chat", chat_body, None, canonical, _ai_sdk_complete, '"text-delta"', _ai_sdk_problem
)
"""adk_asgi's: the AI SDK's UI message stream."""
AG_UI: Final = Wire(
    AGUI_PATH, agui_body, HEADERS, agui_canonical, agui_complete, CONTENT.decode(), agui_problem
)
"""ag-ui-adk's (``bench.harness.peers``): AG-UI events."""


class Chats:
    """The ``adk_asgi`` server as its users see it: one ``httpx.AsyncClient`` with one
    connection per concurrent chat, as each user has a browser of their own, and a client of
    its own for the ``/__cpu`` probe.

    Not one client with N connections: httpcore's pool looks at every connection for each
    request it queues or finishes, so a burst of N requests costs that one client O(N²) (at
    N=200 it took seconds to send the burst, which the first chunks then waited for)."""

    def __init__(self, base_url: str, mount: str = "/agent", wire: Wire | None = None) -> None:
        self.base_url = base_url
        self.wire = wire or AI_SDK
        self.url = f"{base_url}{mount}/chat" if wire is None else f"{base_url}{wire.path}"
        self._ssl = ssl.create_default_context()  # shared: building one per client costs ms
        self.probe = self._client()
        self.users: list[httpx.AsyncClient] = []

    def _client(self) -> httpx.AsyncClient:
        # Idle connections are dropped before uvicorn would (timeout_keep_alive=5 s), so a
        # request never races the server closing one.
        limits = httpx.Limits(max_connections=1, keepalive_expiry=4.0)
        timeout = httpx.Timeout(600.0)
        return httpx.AsyncClient(verify=self._ssl, limits=limits, timeout=timeout, trust_env=False)

    async def __aenter__(self) -> Chats:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.gather(*(client.aclose() for client in [self.probe, *self.users]))

    def user(self, i: int) -> httpx.AsyncClient:
        """The client of user ``i`` (made on first use)."""
        while len(self.users) <= i:
            self.users.append(self._client())
        return self.users[i]

    async def chat(self, i: int, deltas: int) -> Streamed:
        """One new chat of ``deltas`` deltas, by user ``i``."""
        return await read_chat(self.user(i), self.url, deltas, self.wire)

    async def cpu(self) -> float:
        response = await self.probe.get(f"{self.base_url}/__cpu")
        return float(response.text)

    async def gc(self) -> dict[str, float]:
        """The server's garbage collector time (``bench.harness.probes``' ``/__gc``; the first call
        starts the clock)."""
        response = await self.probe.get(f"{self.base_url}/__gc")
        found: dict[str, float] = response.json()
        return found

    async def reference(self, deltas: int) -> list[str]:
        """The canonical chunks of one reply read alone, checked against the agent's text."""
        alone = await self.chat(0, deltas)
        if alone.status != 200:
            body = alone.data[:300]
            raise RuntimeError(f"reference stream: {alone.status} {alone.error} {body!r}")
        payloads = self.wire.canonical([payload for payload, _ in sse_payloads(alone.data)])
        problem = self.wire.problem(payloads, deltas)
        if problem:
            raise RuntimeError(f"reference stream: {problem}: {alone.data[-300:]!r}")
        return payloads

    async def batch(self, n: int, deltas: int, reference: Sequence[str] | None) -> Batch:
        """``n`` chats sent together; checked against ``reference`` after the clocks stop."""
        for i in range(n):
            self.user(i)  # made before the clocks start
        async with Clocks(self.cpu, self.gc) as clocks:
            streams = await asyncio.gather(*(self.chat(i, deltas) for i in range(n)))
        checked = (
            [check_stream(stream, reference, self.wire) for stream in streams] if reference else []
        )
        errors: list[object] = [s.error or s.status for s in streams if s.status != 200]
        all_sent = max(stream.sent for stream in streams) - clocks.start
        return Batch(
            n,
            deltas,
            clocks.seconds,
            clocks.server_cpu,
            clocks.client_cpu,
            checked,
            errors[:3],
            all_sent,
            clocks.gc_seconds,
            clocks.gc_longest,
        )


@dataclass(frozen=True, slots=True)
class Batch(Timed):
    """N streams started together."""

    checked: list[Checked]
    errors: list[object]
    """The first few failed requests (status or exception), for the report."""
    all_sent: float
    """Seconds from the start of the batch until the client had sent every request."""
    gc_seconds: float
    """Of ``server_cpu``: seconds in the cyclic garbage collector."""
    gc_longest: float
    """The longest garbage collection, in seconds: every stream stood still that long."""
