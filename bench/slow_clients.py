"""Slow readers: the server's memory, and the other chats' gaps, when a client stops reading.

``python -m bench.slow_clients [--quick] [--no-pin]`` (also run by ``bench.concurrency``)

Each scenario runs on a fresh ``bench.serve adk_asgi`` server (one uvicorn worker, pinned to one
CPU, the client on the other), so every peak of its resident memory is the scenario's own:

* **under load**: 50 normal users, each reading 3 chats of ``bench.concurrency``'s 300-delta
  replies one after the other: alone; next to two long answers (20,000 deltas) read at full
  speed (the control: the same work, taken as fast as it comes); next to one reader that stops
  reading for 10 s mid-answer and one that reads 1 KB a second. The long answers' readers
  leave when the normal chats are over.
* **alone**: one long answer and nothing else: read at full speed; paused for 10 s mid-answer
  (answers of 5,000 and 20,000 deltas); read at 1 KB/s for 15 s; and paused again with the
  kernel's own send buffer instead of the capped one.

Loopback TCP would soak up a whole answer before the server noticed a reader that does not
read: the kernel autotunes a connection's send buffer up to ``tcp_wmem``'s maximum (4 MiB),
where a slow network path fills after a few kilobytes in flight. So the server's connections
get ``SO_SNDBUF`` = ``SNDBUF`` (the kernel doubles it; inherited from the listening socket) and
the long answers' readers ``SO_RCVBUF`` = ``RCVBUF``; the last scenario shows the default.

Before the clock starts, each server runs the scenario's work once at full speed (a round of the
normal chats, one long answer), so the reading ``before`` already holds what any such run needs;
then the kernel's peak RSS (``VmHWM``) is reset through ``/proc/PID/clear_refs``. ``peak`` is
that peak at the end (checked against ``VmRSS`` sampled every 20 ms), ``end`` the ``VmRSS`` once
every stream is over and the server idle, and ``send-Q`` the most bytes the kernel held unsent
for the server's connections at once (``/proc/net/tcp``).

What should bound a reader that does not read: uvicorn stops taking body writes past its
transport's high-water mark (64 KiB), and adk_asgi's SSE writer then holds at most
``MAX_BUFFER`` (64 KiB) before it stops pulling events from ``run_async``. Whether ADK then
stops producing them is what the ``alone`` rows measure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
from collections.abc import Awaitable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

from adk_asgi.sse_writer import MAX_BUFFER
from bench.agent import quiet
from bench.concurrency import (
    DELTAS,
    Chats,
    Checked,
    Streamed,
    chat_body,
    check_stream,
    environment,
)
from bench.report import load_average, ms, percentile, progress, table, verdict
from bench.servers import ServerProcess
from bench.throughput import Placement, _loop_factory

SNDBUF: Final = 32 * 1024
"""``SO_SNDBUF`` of the server's connections (64 KiB once the kernel doubles it)."""
RCVBUF: Final = 4096
"""``SO_RCVBUF`` of the long answers' sockets (8 KiB once doubled)."""
RATE: Final = 1024
"""Bytes per second of the slow reader: 1 KB, read once a second."""
PAUSE_AFTER: Final = 16 * 1024
"""Bytes read before the pausing reader stops (about 180 deltas: early in the answer)."""
MEMORY_TARGET: Final = 2.0
"""MiB a slow reader may add to the peak over the same answer read at full speed: more than
the buffers that should hold it come to (64 KiB each in uvicorn and adk_asgi), for noise."""
SLOPE_TARGET: Final = 0.1
"""MiB per 1,000 deltas of answer that a paused reader may add to the peak: ~0 if bounded."""
GAP_TARGET: Final = 1.10
"""The other chats' p99 gap with slow readers, over the same with the long answers read at
full speed."""
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
class Scenario:
    name: str
    users: int
    """Normal users, each reading ``chats`` chats one after the other."""
    chats: int
    readers: Sequence[Reader]
    warm_deltas: int
    """The long answer read at full speed before the clock starts (0: none)."""
    sndbuf: int | None = SNDBUF


@dataclass(frozen=True, slots=True)
class Read:
    reader: Reader
    received: int
    seconds: float
    done: bool
    """The answer was read to its ``[DONE]``."""


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


# --- the readers ----------------------------------------------------------------------------


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


# --- the server's memory --------------------------------------------------------------------


def _status(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` figure in bytes (``VmRSS``, ``VmHWM``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} for {pid}")


def _reset_peak(pid: int) -> bool:
    """Reset the kernel's peak RSS (``VmHWM``) of ``pid`` to its current RSS."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


def _send_queue(port: int) -> int:
    """Bytes the kernel holds unsent on the established connections of local ``port``."""
    total = 0
    with open("/proc/net/tcp") as tcp:
        next(tcp)
        for line in tcp:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                total += int(fields[4].split(":")[0], 16)
    return total


@dataclass
class _Peaks:
    rss: int = 0
    send_queue: int = 0


async def _sample(pid: int, port: int, stop: asyncio.Event, peaks: _Peaks) -> None:
    while not stop.is_set():
        peaks.rss = max(peaks.rss, _status(pid, "VmRSS"))
        peaks.send_queue = max(peaks.send_queue, _send_queue(port))
        with suppress(TimeoutError):
            async with asyncio.timeout(0.02):
                await stop.wait()


async def _settle(chats: Chats) -> None:
    """Wait until the server is idle (under 2 % of a CPU over 0.25 s), at most 60 s."""
    async with asyncio.timeout(60.0):
        before = await chats.cpu()
        while True:
            await asyncio.sleep(0.25)
            now = await chats.cpu()
            if now - before < 0.005:
                return
            before = now


# --- a scenario -----------------------------------------------------------------------------


async def run_scenario(scenario: Scenario, deltas: int, pin: bool) -> Outcome:
    with ServerProcess("adk_asgi", sndbuf=scenario.sndbuf) as server:
        placement = Placement([server], pin=pin)
        placement.pin()
        try:
            async with Chats(server.url) as chats:
                return await _run(scenario, deltas, server, chats)
        except Exception:
            print(f"--- server log ---\n{server.log_tail()}", file=sys.stderr)
            raise
        finally:
            placement.unpin()


async def _run(scenario: Scenario, deltas: int, server: ServerProcess, chats: Chats) -> Outcome:
    await chats.gc()  # starts the server's garbage collector clock
    reference = await chats.reference(deltas)  # also the first run: ADK's lazy imports
    if scenario.users:
        await chats.batch(scenario.users, deltas, None)
    if scenario.warm_deltas:
        await read_long(server.url, Reader("warm-up", scenario.warm_deltas), asyncio.Event())
    await _settle(chats)
    rss_before = _status(server.pid, "VmRSS")
    hwm = _reset_peak(server.pid)
    port = urlsplit(server.url).port or 80
    stop, leave, peaks = asyncio.Event(), asyncio.Event(), _Peaks()
    sampler = asyncio.create_task(_sample(server.pid, port, stop, peaks))
    gc_before = await chats.gc()
    cpu = await chats.cpu()
    start = time.perf_counter()
    streams: list[Streamed] = []
    readers = asyncio.gather(*(read_long(server.url, r, leave) for r in scenario.readers))
    if scenario.users:
        await asyncio.gather(
            *(user(chats, i, scenario.chats, deltas, streams) for i in range(scenario.users))
        )
        leave.set()  # the long answers' readers leave with the last normal chat
    reads = await readers
    await _settle(chats)
    wall = time.perf_counter() - start
    server_cpu = await chats.cpu() - cpu
    gc_after = await chats.gc()
    stop.set()
    await sampler
    peak, source = peaks.rss, "VmRSS every 20 ms"
    if hwm and _status(server.pid, "VmHWM") >= peaks.rss:
        peak, source = _status(server.pid, "VmHWM"), "VmHWM"
    end = _status(server.pid, "VmRSS")
    gc_seconds = gc_after["seconds"] - gc_before["seconds"]
    outcome = Outcome(
        scenario,
        rss_before,
        peak,
        end,
        source,
        peaks.send_queue,
        server_cpu,
        wall,
        gc_seconds,
        gc_after["longest"],
    )
    outcome.chats = [check_stream(stream, reference) for stream in streams]
    outcome.reads = list(reads)
    outcome.server_info = server.info
    return outcome


# --- plan and report ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    deltas: int
    """Of each normal chat."""
    under_load: Sequence[Scenario]
    alone: Sequence[Scenario]
    """The first: the long answer at full speed, that the others compare with."""


def make_plan(*, quick: bool) -> Plan:
    users, chats, deltas = (10, 2, 100) if quick else (50, 3, DELTAS)
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


def _mib(size: float) -> str:
    return f"{size / 2**20:,.1f}"


def report(plan: Plan, outcomes: dict[str, Outcome]) -> str:
    rows = []
    for scenario in [*plan.under_load, *plan.alone]:
        o = outcomes[scenario.name]
        exact = sum(one.exact for one in o.chats)
        reads = ", ".join(
            f"{read.reader.label}: {read.received / 1024:,.0f} KiB{' (all)' if read.done else ''}"
            for read in o.reads
        )
        rows.append(
            [
                scenario.name,
                f"{exact}/{len(o.chats)}" if o.chats else "-",
                ms(percentile(o.gaps, 50)),
                ms(percentile(o.gaps, 99)),
                _mib(o.rss_before),
                _mib(o.peak),
                f"{o.growth / 2**20:+,.1f}",
                _mib(o.end),
                f"{o.send_queue / 1024:,.0f}",
                f"{o.server_cpu:,.1f}",
                f"{o.gc_seconds / o.server_cpu * 100:.0f}",
                ms(o.gc_longest),
                f"{o.wall:,.1f}",
                reads or "-",
            ]
        )
    header = [
        "scenario",
        "chats exact",
        "gap p50 ms",
        "gap p99 ms",
        "RSS before MiB",
        "peak MiB",
        "growth",
        "end MiB",
        "send-Q KiB",
        "srv CPU s",
        "GC %",
        "GC max ms",
        "wall s",
        "long answers: taken by the reader",
    ]
    cap = f"SO_SNDBUF {SNDBUF // 1024} KiB (doubled by the kernel)"
    out = [
        "Slow readers: a fresh server per scenario, warmed by the same work at full speed;"
        f" server connections with {cap}\n  unless said; readers' SO_RCVBUF {RCVBUF} B",
        table(header, rows),
        f"chats exact: normal chats ({plan.deltas} deltas) complete and equal to the reply read"
        " alone; gaps: theirs (as in\n  Concurrency); growth: peak - before; send-Q: most bytes"
        " unsent in the kernel for the server's connections\n  at once; GC: the garbage collector's"
        " share of srv CPU and its longest pause; long answers: bytes the\n  reader took before"
        " the answer ended (all) or it left",
        "",
        "Targets",
    ]
    alone = [outcomes[s.name] for s in plan.alone]
    full = {o.scenario.readers[0].deltas: o for o in alone if o.scenario.name.startswith("full")}
    extras: dict[int, float] = {}
    for o in alone:
        size = o.scenario.readers[0].deltas
        if o.scenario.name.startswith("full") or size not in full:
            continue
        extra = (o.growth - full[size].growth) / 2**20
        if o.scenario.sndbuf and o.scenario.readers[0].pause:
            extras[size] = extra
        out.append(
            f"  {o.scenario.name}: peak {extra:+,.1f} MiB over the same answer at full speed"
            f"  target <= +{MEMORY_TARGET:g} MiB (bounded): {verdict(extra <= MEMORY_TARGET)}"
        )
    if len(extras) >= 2:
        a, b = min(extras), max(extras)
        slope = (extras[b] - extras[a]) / (b - a) * 1000
        out.append(
            f"  paused reader, that extra per 1,000 deltas of answer ({a:,} -> {b:,}):"
            f" {slope:,.2f} MiB  target <= {SLOPE_TARGET:g} (does not grow with the answer):"
            f" {verdict(slope <= SLOPE_TARGET)}"
        )
    loaded = [outcomes[s.name] for s in plan.under_load]
    base, slow = loaded[0], loaded[-1]
    control = loaded[1] if len(loaded) > 2 else base
    p99 = {o.scenario.name: percentile(o.gaps, 99) for o in loaded}
    with_slow = p99[slow.scenario.name]
    ratio = with_slow / p99[control.scenario.name]
    out.append(
        f"  other chats' p99 gap, with slow readers / {control.scenario.name}: {ratio:.3f}"
        f" ({ms(with_slow)} / {ms(p99[control.scenario.name])} ms)"
        f"  target <= {GAP_TARGET:.2f}: {verdict(ratio <= GAP_TARGET)}"
    )
    if control is not base:
        plain = with_slow / p99[base.scenario.name]
        out.append(
            f"  other chats' p99 gap, with slow readers / {base.scenario.name}: {plain:.3f}"
            f" ({ms(with_slow)} / {ms(p99[base.scenario.name])} ms)"
        )
    extra = (slow.growth - control.growth) / 2**20
    out.append(
        f"  under load, peak with slow readers {extra:+,.1f} MiB over {control.scenario.name}"
        f" (no target: what the\n    slow readers' answers reached in that time fits in the"
        f" buffers, see send-Q; peaks of identical runs differ by a few MiB)"
    )
    whole = all(one.exact for o in loaded for one in o.chats)
    out.append(f"  normal chats complete and exact in every scenario: {verdict(whole)}")
    sources = ", ".join(sorted({o.peak_source for o in outcomes.values()}))
    out.append(
        f"(adk_asgi's own buffer per response: MAX_BUFFER = {MAX_BUFFER // 1024} KiB;"
        f" peaks from {sources})"
    )
    return "\n".join(out)


async def run_all(plan: Plan, pin: bool) -> dict[str, Outcome]:
    outcomes = {}
    for scenario in [*plan.under_load, *plan.alone]:
        progress(f"slow readers: {scenario.name}")
        outcomes[scenario.name] = await run_scenario(scenario, plan.deltas, pin)
    return outcomes


def run(*, quick: bool, pin: bool) -> tuple[str, dict[str, Any]]:
    """Every scenario of the plan, each on a fresh server: the report, and what uvicorn
    picked."""
    plan = make_plan(quick=quick)
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        outcomes = runner.run(run_all(plan, pin))
    return report(plan, outcomes), next(iter(outcomes.values())).server_info


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.slow_clients", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run: short, small answers")
    parser.add_argument("--no-pin", action="store_true", help="let the scheduler place processes")
    args = parser.parse_args(argv)
    quiet()
    started = time.perf_counter()
    load_before = load_average()
    text, info = run(quick=args.quick, pin=not args.no_pin)
    print(environment(info, Placement([], pin=not args.no_pin)))
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_average()}")
    print(text)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
