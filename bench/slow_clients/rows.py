"""``bench.slow_clients``'s scenarios and what they measure: the readers (a long answer read over
a raw socket with a small receive buffer, at full speed, paused, or at a trickle:
:func:`read_long`), the normal users next to them (:func:`user`), the plan of scenarios
(:func:`make_plan`) and each one's :class:`Outcome`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

from bench.harness.chats import REPLY_DELTAS, Chats, Checked, Streamed, chat_body

SNDBUF: Final = 32 * 1024
"""``SO_SNDBUF`` of the server's connections (64 KiB once the kernel doubles it)."""
RCVBUF: Final = 4096
"""``SO_RCVBUF`` of the long answers' sockets (8 KiB once doubled)."""
RATE: Final = 1024
"""Bytes per second of the slow reader: 1 KB, read once a second."""
PAUSE_AFTER: Final = 16 * 1024
"""Bytes read before the pausing reader stops (about 180 deltas: early in the answer)."""
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Reader:
    """How one long answer is read, over a raw socket."""

    label: str
    deltas: int
    pause: float = 0.0
    """Seconds without reading once ``PAUSE_AFTER`` bytes are in (0: no pause)."""
    rate: int | None = None
    """Bytes per second (``None``: as fast as they come)."""
    leave_after: float | None = None
    """Seconds after which the reader closes its socket, done or not (``None``: at the end
    of the answer, or when the normal chats are over)."""


@dataclass(frozen=True, slots=True)
class Read:
    reader: Reader
    received: int
    seconds: float
    done: bool
    """The answer was read to its ``[DONE]``."""


def _request(host: str, port: int, deltas: int) -> bytes:
    body = json.dumps(chat_body(deltas)).encode()
    head = (
        f"POST /agent/chat HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


async def _unless(
    leave: asyncio.Event, work: Awaitable[_T], deadline: float
) -> tuple[bool, _T | None]:
    """``work`` unless ``leave`` is set or ``deadline`` (``perf_counter``) passes first:
    (done, its result)."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(leave.wait())
    limit = max(deadline - time.perf_counter(), 0.0)
    try:
        await asyncio.wait({task, waiter}, timeout=limit, return_when="FIRST_COMPLETED")
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
        await asyncio.wait({task, waiter})
    if task.cancelled():
        return False, None
    return True, task.result()


async def read_long(url: str, reader: Reader, leave: asyncio.Event) -> Read:
    """One long answer over a raw socket with a small receive buffer, read as ``reader`` says,
    until its end, ``reader.leave_after`` or ``leave``; then the socket is closed."""
    loop = asyncio.get_running_loop()
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    received = bytearray()
    start = time.perf_counter()
    deadline = start + (reader.leave_after if reader.leave_after is not None else 3600.0)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        sock.setblocking(False)
        await loop.sock_connect(sock, (host, port))
        await loop.sock_sendall(sock, _request(host, port, reader.deltas))
        paused = not reader.pause
        while not leave.is_set() and (now := time.perf_counter()) < deadline:
            if not paused and len(received) >= PAUSE_AFTER:
                paused = True
                await _unless(leave, asyncio.sleep(reader.pause), deadline)
                continue
            size = 65536
            if reader.rate is not None:  # 1 KB at once, then the next KB a second later
                size = reader.rate * (int(now - start) + 1) - len(received)
                if size <= 0:
                    wait = 1.0 - (now - start) % 1.0
                    await _unless(leave, asyncio.sleep(wait), deadline)
                    continue
            done, piece = await _unless(leave, loop.sock_recv(sock, size), deadline)
            if not done or not piece:
                break
            received += piece
    ended = received.endswith(b"0\r\n\r\n") and b"data: [DONE]" in received[-64:]
    return Read(reader, len(received), time.perf_counter() - start, ended)


async def user(chats: Chats, i: int, count: int, deltas: int, out: list[Streamed]) -> None:
    """Normal user ``i``: ``count`` chats, each as soon as the last one ended."""
    for _ in range(count):
        out.append(await chats.chat(i, deltas))


# --- the scenarios ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    users: int
    """Normal users, each reading ``chats`` chats one after the other."""
    chats: int
    readers: Sequence[Reader]
    warm_deltas: int
    """The long answer read at full speed before the clock starts (0: none)."""
    sndbuf: int | None = SNDBUF


@dataclass
class Outcome:
    scenario: Scenario
    rss_before: int
    peak: int
    end: int
    peak_source: str
    send_queue: int
    """Most bytes unsent in the kernel for the server's connections at once."""
    server_cpu: float
    wall: float
    gc_seconds: float
    """Of ``server_cpu``: in the cyclic garbage collector."""
    gc_longest: float
    chats: list[Checked] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    server_info: dict[str, Any] = field(default_factory=dict)

    @property
    def growth(self) -> float:
        return float(self.peak - self.rss_before)

    @property
    def gaps(self) -> list[float]:
        return [gap for one in self.chats for gap in one.gaps]


@dataclass(frozen=True, slots=True)
class Plan:
    deltas: int
    """Of each normal chat."""
    under_load: Sequence[Scenario]
    alone: Sequence[Scenario]
    """The first: the long answer at full speed, that the others compare with."""


def make_plan(*, quick: bool) -> Plan:
    users, chats, deltas = (10, 2, 100) if quick else (50, 3, REPLY_DELTAS)
    pause, slow_for = (2.0, 3.0) if quick else (10.0, 15.0)
    long, short = (2_000, 500) if quick else (20_000, 5_000)
    full = Reader("full speed", long)
    paused = Reader(f"paused {pause:g} s", long, pause=pause)
    slow = Reader("1 KB/s", long, rate=RATE, leave_after=slow_for)
    under_load = [
        Scenario(f"{users} users", users, chats, [], long),
        Scenario(f"{users} users + 2 long answers at full speed", users, chats, [full, full], long),
        Scenario(f"{users} users + paused + 1 KB/s readers", users, chats, [paused, slow], long),
    ]
    alone = []
    for size in (short, long):
        alone += [
            Scenario(f"full speed ({size:,})", 0, 0, [Reader(full.label, size)], size),
            Scenario(f"{paused.label} ({size:,})", 0, 0, [Reader(paused.label, size, pause)], size),
        ]
    alone += [
        Scenario(f"1 KB/s for {slow_for:g} s ({long:,})", 0, 0, [slow], long),
        Scenario(f"{paused.label} ({long:,}), kernel's buffer", 0, 0, [paused], long, None),
    ]
    if quick:  # under a minute with bench.concurrency --quick: fewer fresh servers
        under_load = [under_load[0], under_load[2]]
        alone = alone[2:4]
    return Plan(deltas, under_load, alone)
