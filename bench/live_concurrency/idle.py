"""``bench.live_concurrency``'s idle part (:func:`idle_part`), what idle ``WS /live`` connections
cost the server: a thousand connections opened on
new chats (``run_live`` open), one short turn on each, then all closed; at each step, once the
server is idle, its RSS, its CPU over a window and a census of its tasks and objects.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Final

import httpx

from bench.harness.live import OPEN_BATCH, SHORT_ANSWER, LiveClient, send_frame
from bench.harness.probes import Census, Probe
from bench.harness.procfs import rss
from bench.harness.report import progress
from bench.harness.serve import raise_fd_limit
from bench.harness.servers import ServerProcess, logs_on_error

TURN_BATCH: Final = 100
"""Short turns run at once when every idle connection answers one."""


@dataclass(frozen=True, slots=True)
class IdleStep:
    name: str
    connections: int
    rss: int
    cpu_share: float | None
    """Of one CPU, over the window; ``None`` when not measured."""
    cpu_peak: float | None
    """Of one CPU, in the window's busiest second."""
    census: Census
    seconds: float
    """How long the step took (opening the connections, answering the turns)."""


@dataclass
class IdleResult:
    connections: int
    window: float
    fd_limit: int
    steps: list[IdleStep] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """Why connections could not be opened, if some could not (the first few)."""
    info: dict[str, Any] = field(default_factory=dict)


async def _turn(socket: Any, chat_id: str, deltas: int) -> None:
    await socket.send(send_frame(chat_id, str(deltas)))
    while True:
        message = await socket.recv()
        if '"type":"end"' in message:
            return
        if '"type":"error"' in message:
            raise RuntimeError(f"short turn: {message[:300]}")


async def idle_part(n: int, window: float) -> IdleResult:
    result = IdleResult(n, window, raise_fd_limit())
    with ServerProcess("adk_asgi") as server, logs_on_error({"": server}):
        result.info = server.info
        async with httpx.AsyncClient(trust_env=False, timeout=120.0) as http:
            await _idle(server, http, n, window, result)
    return result


async def _idle(
    server: ServerProcess, http: httpx.AsyncClient, n: int, window: float, result: IdleResult
) -> None:
    probe = Probe(http, server.url)
    client = LiveClient(http, server.url, compression="deflate")

    async def step(name: str, seconds: float, cpu: bool) -> None:
        await probe.settle()
        found = rss(server.pid)
        share, peak = await probe.cpu_share(window) if cpu else (None, None)
        census = await probe.census()
        result.steps.append(IdleStep(name, len(sockets), found, share, peak, census, seconds))

    # First use: ADK's lazy imports, the first run_live, the first deflate context.
    chat_id = f"warm-{uuid.uuid4().hex}"
    warm = await client.connect(chatId=chat_id)
    await _turn(warm, chat_id, SHORT_ANSWER)
    await warm.close()
    sockets: list[tuple[str, Any]] = []
    await step("before", 0.0, cpu=False)

    progress(f"idle: opening {n:,} connections with ?chatId= ({OPEN_BATCH} at a time)")
    start = time.perf_counter()
    while len(sockets) < n:
        ids = [f"idle-{uuid.uuid4().hex}" for _ in range(min(OPEN_BATCH, n - len(sockets)))]
        opened = await asyncio.gather(
            *(client.connect(chatId=chat) for chat in ids), return_exceptions=True
        )
        for chat, socket in zip(ids, opened, strict=True):
            if isinstance(socket, BaseException):
                result.failed.append(f"{type(socket).__name__}: {socket}")
            else:
                sockets.append((chat, socket))
        if len(result.failed) >= 3:
            progress(f"idle: stopped at {len(sockets):,} connections: {result.failed[0]}")
            break
    opened_in = time.perf_counter() - start
    progress(f"idle: {len(sockets):,} open in {opened_in:.1f} s; measuring {window:g} s idle")
    await step("run_live open, no turn yet", opened_in, cpu=True)

    progress(f"idle: one {SHORT_ANSWER}-delta turn on each ({TURN_BATCH} at a time)")
    start = time.perf_counter()
    for first in range(0, len(sockets), TURN_BATCH):
        batch = sockets[first : first + TURN_BATCH]
        await asyncio.gather(*(_turn(socket, chat, SHORT_ANSWER) for chat, socket in batch))
    turns_in = time.perf_counter() - start
    progress(f"idle: turns done in {turns_in:.1f} s; measuring {window:g} s idle")
    await step("after one turn each", turns_in, cpu=True)

    progress("idle: closing every connection")
    start = time.perf_counter()
    await asyncio.gather(*(socket.close() for _, socket in sockets))
    closed_in = time.perf_counter() - start
    sockets = []
    await step("all closed", closed_in, cpu=False)
