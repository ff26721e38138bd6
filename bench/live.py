"""Live mode: ``WS /live`` against bare ``run_live``, memory per idle connection, audio rates.

``python -m bench.live [--quick] [--reps R] [--sizes N ...] [--no-pin]``

The same agent as ``bench.throughput`` (``bench.agent``), run by ``Runner.run_live``, in rows
(``bench.live_rows``): ``floor`` is ``run_live`` iterated in this process; ``adk_asgi`` is
``WS /live`` served by uvicorn in a child process and driven by a ``websockets`` client here,
offering permessage-deflate as browsers do; ``adk_asgi, no deflate`` the same without it;
``adk_asgi in-process`` is the app called in this process with no socket (adk_asgi's own share).

* **throughput**: N text deltas per answer, from the user text (``send`` frame; for the floor
  ``LiveRequestQueue.send_content``) to the end of the turn (``finish`` chunk; ``turn_complete``).
* **speech out**: the same in audio mode: N frames of 20 ms output audio (and their
  transcript) per answer.
* **audio in**: N frames of 20 ms microphone audio pushed as fast as possible, timed to the
  first frame of the answer.
* **idle connections**: the server's RSS with K idle connections open, in a fresh server per
  connection state.

Rounds rotate the order of the rows, and ratios are medians of per-round ratios, so a noisy
machine slows every row alike. See ``docs/performance.md`` ("Live mode") for what the figures
mean.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Final

import httpx

from bench.agent import DELTA_CHARS, SPEECH_FRAME_BYTES, quiet
from bench.live_rows import (
    MIC_FRAME_BYTES,
    SHORT_ANSWER,
    InProcess,
    LiveClient,
    LiveFloor,
    Paced,
    Run,
    send_frame,
)
from bench.report import median_of, min_of, paired, progress, table, verdict
from bench.serve import RESUMABLE, UNMERGED
from bench.servers import ServerProcess
from bench.throughput import Placement, _loop_factory

OURS: Final = "adk_asgi"
"""``WS /live`` as a browser uses it (permessage-deflate negotiated): the row with the target."""
IN_PROCESS: Final = "adk_asgi in-process"
NO_DEFLATE: Final = "adk_asgi, no deflate"
FRAME_PER_DELTA: Final = "adk_asgi, frame per delta"
"""``live_write_interval=0``: what coalescing the deltas changes (text and speech rows)."""
RESUMABLE_ROW: Final = "adk_asgi, resumable"
"""The app with a stream store (``streams=``): every answer recorded for a resume (text)."""


class _Text:
    """A row of the text measurement only."""

    def __init__(self, client: LiveClient) -> None:
        self.text = client.text


class _TextOnly:
    """A row of the text and speech measurements only (the microphone is not coalesced)."""

    def __init__(self, client: LiveClient) -> None:
        self.text = client.text
        self.speech = client.speech


REAL_TIME: Final = 50
"""Frames per second that 20 ms audio frames need, one way, for one conversation."""
TARGET: Final = 0.90

Measure = Callable[[int], Awaitable[Run]]


async def sample(rows: dict[str, Measure], n: int, reps: int) -> dict[str, list[Run]]:
    """One warm-up run per row, then ``reps`` rounds, rotating the order of rows each round."""
    for measure in rows.values():
        await measure(n)
    names = list(rows)
    results: dict[str, list[Run]] = {name: [] for name in names}
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(await rows[name](n))
    return results


# --- idle connections -----------------------------------------------------------------------


IDLE_STATES: Final = {
    "no chat yet": "connected, nothing sent: run_live not started (it starts at the first send)",
    "no chat, no deflate": "the same, without permessage-deflate",
    "chatId given": "?chatId=…: run_live started at connect, then idle",
    "after a turn": f"one {SHORT_ANSWER}-delta text turn answered, then idle (run_live open)",
}
"""Every state but "no deflate" negotiates permessage-deflate, as browsers do."""
_BATCH: Final = 50
"""Connections opened at once (the listening socket's backlog is 128)."""


@dataclass(frozen=True, slots=True)
class Idle:
    state: str
    count: int
    rss_before: int
    rss_after: int
    idle_cpu: float
    """Share of one CPU the server used while the connections sat idle."""


def _rss(pid: int) -> int:
    """Resident set size of a process, in bytes (``VmRSS`` of ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


async def _settle(client: LiveClient) -> None:
    """Wait until the server is idle (under 2 % of a CPU over 0.25 s), at most 30 s."""
    async with asyncio.timeout(30.0):
        before = await client.cpu()
        while True:
            await asyncio.sleep(0.25)
            now = await client.cpu()
            if now - before < 0.005:
                return
            before = now


async def _open_idle(client: LiveClient, state: str) -> Any:
    chat_id = f"idle-{uuid.uuid4().hex}"
    params = {"chatId": chat_id} if state == "chatId given" else {}
    socket = await client.connect(**params)
    if state == "after a turn":
        await socket.send(send_frame(chat_id, str(SHORT_ANSWER)))
        while '"type":"end"' not in await socket.recv():
            pass
    return socket


async def idle_memory(state: str, counts: Sequence[int]) -> list[Idle]:
    """RSS growth of a fresh server with K idle connections in ``state`` (K in ``counts``)."""
    found = []
    with ServerProcess("adk_asgi") as server:
        async with httpx.AsyncClient(trust_env=False, timeout=60.0) as http:
            deflate = None if "no deflate" in state else "deflate"
            client = LiveClient(http, server.url, compression=deflate)
            warm = await _open_idle(client, state)  # first-use costs are not per connection
            await warm.close()
            await _settle(client)
            before = _rss(server.pid)
            sockets: list[Any] = []
            for count in counts:
                while len(sockets) < count:
                    batch = min(_BATCH, count - len(sockets))
                    sockets += await asyncio.gather(
                        *(_open_idle(client, state) for _ in range(batch))
                    )
                await _settle(client)
                after = _rss(server.pid)
                cpu = await client.cpu()
                await asyncio.sleep(2.0)
                idle_cpu = (await client.cpu() - cpu) / 2.0
                found.append(Idle(state, count, before, after, idle_cpu))
            await asyncio.gather(*(socket.close() for socket in sockets))
    return found


# --- the run --------------------------------------------------------------------------------


@dataclass
class Results:
    text: dict[int, dict[str, list[Run]]]
    speech: dict[int, dict[str, list[Run]]]
    listen: dict[int, dict[str, list[Run]]]
    paced: list[Paced]
    idle: list[Idle]


@dataclass(frozen=True, slots=True)
class Plan:
    text: Sequence[int]
    speech: Sequence[int]
    listen: Sequence[int]
    paced: Sequence[int]
    """Microphones at once, each sending 50 frames/s for ``paced_seconds``."""
    paced_seconds: float
    idle: Sequence[int]
    reps: int


async def bench(url: str, plan: Plan, placement: Placement) -> Results:
    floor, inproc = LiveFloor(), InProcess()
    async with httpx.AsyncClient(timeout=httpx.Timeout(300.0), trust_env=False) as http:
        ours = LiveClient(http, url, compression="deflate")
        plain = LiveClient(http, url, compression=None)
        unmerged = LiveClient(http, url, compression="deflate", mount=UNMERGED)
        kept = LiveClient(http, url, compression="deflate", mount=RESUMABLE)
        rows: dict[str, Any] = {
            "floor": floor,
            IN_PROCESS: inproc,
            OURS: ours,
            NO_DEFLATE: plain,
            FRAME_PER_DELTA: _TextOnly(unmerged),
            RESUMABLE_ROW: _Text(kept),
        }
        floor.cpus = inproc.cpus = placement.pin()
        text, speech, listen = {}, {}, {}
        for size in plan.text:
            progress(f"text N={size:,} ({plan.reps} runs per row)")
            text[size] = await sample(_measures(rows, "text"), size, plan.reps)
        for size in plan.speech:
            progress(f"speech out N={size:,} frames ({plan.reps} runs per row)")
            speech[size] = await sample(_measures(rows, "speech"), size, plan.reps)
        for size in plan.listen:
            progress(f"audio in N={size:,} frames ({plan.reps} runs per row)")
            listen[size] = await sample(_measures(rows, "listen"), size, plan.reps)
        paced = []
        for streams in plan.paced:
            progress(f"audio in at real-time pace: {streams} microphones")
            paced.append(await ours.paced(streams, plan.paced_seconds))
        placement.unpin()
        floor.cpus = inproc.cpus = None
    await inproc.app.aclose()
    idle = []
    for state in IDLE_STATES:
        progress(f"idle connections: {state}, K={', '.join(map(str, plan.idle))}")
        idle += await idle_memory(state, plan.idle)
    return Results(text, speech, listen, paced, idle)


def _measures(rows: dict[str, Any], name: str) -> dict[str, Measure]:
    """The rows that have measurement ``name`` (``text``, ``speech``, ``listen``)."""
    return {row: getattr(obj, name) for row, obj in rows.items() if hasattr(obj, name)}


# --- report ---------------------------------------------------------------------------------


def _ratios(by_size: dict[int, dict[str, list[Run]]], *, target: bool) -> list[str]:
    """Each row's rate over the floor's; with ``target``, the verdict of the ``OURS`` row."""
    out = []
    for size, by_row in by_size.items():
        floor = by_row["floor"]
        for name, runs in by_row.items():
            if name == "floor":
                continue
            ratio = paired(floor, runs)
            best = min_of(floor, "seconds") / min_of(runs, "seconds")
            cpu = paired(floor, runs, "server_cpu")
            goal = (
                f"  target >= {TARGET:.2f}: {verdict(ratio >= TARGET)}"
                if target and name == OURS
                else ""
            )
            out.append(
                f"  N={size:>6,}  {name + ' / floor':<36} {ratio:.3f} ({best:.3f})  cpu {cpu:.3f}"
                + goal
            )
    return out


def _text_report(results: Results, reps: int) -> list[str]:
    rows = []
    for size, by_row in results.text.items():
        for name, runs in by_row.items():
            median = median_of(runs, "seconds")
            client = median_of(runs, "client_cpu")
            rows.append(
                [
                    name,
                    f"{size:,}",
                    f"{median * 1e3:,.0f}",
                    f"{min_of(runs, 'seconds') * 1e3:,.0f}",
                    f"{size / median:,.0f}",
                    f"{size / min_of(runs, 'seconds'):,.0f}",
                    f"{median_of(runs, 'server_cpu') / size * 1e6:,.0f}",
                    f"{client / size * 1e6:,.0f}" if client else "-",
                ]
            )
    header = ["row", "N", "ms med", "ms min", "deltas/s", "(best)", "srv CPU µs/delta"]
    return [
        f"Throughput: N text deltas of {DELTA_CHARS} chars per answer, median of {reps} runs",
        table([*header, "client CPU µs/delta"], rows),
        "srv CPU: CPU time of the process that runs the agent (the floor: this one)",
        "",
        "Ratios of deltas/s: median of the per-round ratios; in brackets the ratio of the best"
        " runs;\n  cpu: the same from server CPU",
        *_ratios(results.text, target=True),
        *_kept_ratios(results.text),
    ]


def _kept_ratios(by_size: dict[int, dict[str, list[Run]]]) -> list[str]:
    """What recording every answer in the stream store costs, next to the same app without."""
    out = []
    for size, by_row in by_size.items():
        ratio = paired(by_row[OURS], by_row[RESUMABLE_ROW])
        cpu = paired(by_row[OURS], by_row[RESUMABLE_ROW], "server_cpu")
        out.append(
            f"  N={size:>6,}  {'resumable / adk_asgi':<36} {ratio:.3f}  cpu {cpu:.3f}"
            f"  target >= 0.95: {verdict(ratio >= 0.95)}"
        )
    return out


def _audio_report(
    title: str, by_size: dict[int, dict[str, list[Run]]], frame_bytes: int, listen: bool
) -> list[str]:
    rows = []
    for size, by_row in by_size.items():
        for name, runs in by_row.items():
            median = median_of(runs, "seconds")
            rate = size / median
            cpu = median_of(runs, "server_cpu") / size
            row = [
                name,
                f"{size:,}",
                f"{median * 1e3:,.0f}",
                f"{rate:,.0f}",
                f"{rate / REAL_TIME:,.0f}x",
                f"{rate * frame_bytes / 1e6:,.2f}",
                f"{cpu * 1e6:,.0f}",
                f"{1 / (REAL_TIME * cpu):,.0f}",
            ]
            if listen:
                pushed = median_of(runs, "pushed")
                row.append(f"{size / pushed:,.0f}" if pushed else "-")
            rows.append(row)
    header = ["row", "frames", "ms med", "frames/s", "real time", "MB/s", "srv CPU µs/frame"]
    header.append("streams/CPU")
    if listen:
        header.append("client sent frames/s")
    out = [title, table(header, rows), "Ratios of frames/s, as above"]
    out += _ratios(by_size, target=False)
    for size, by_row in by_size.items():
        slowest = size / max(run.seconds for run in by_row[OURS])
        ok = verdict(slowest >= REAL_TIME)
        out.append(
            f"  N={size:>6,}  {OURS}, slowest run: {slowest:,.0f} frames/s, "
            f"{slowest / REAL_TIME:,.0f}x real time: target >= {REAL_TIME} frames/s: {ok}"
        )
    return out


def _paced_report(paced: list[Paced], seconds: float) -> list[str]:
    rows = []
    for found in paced:
        cpu = found.server_cpu / found.frames
        rows.append(
            [
                f"{found.streams:,}",
                f"{found.frames / found.seconds:,.0f}",
                f"{found.server_cpu / found.seconds * 100:.1f}",
                f"{cpu * 1e6:,.0f}",
                f"{1 / (REAL_TIME * cpu):,.0f}",
                f"{found.latencies[0] * 1e3:,.1f}",
                f"{statistics.median(found.latencies) * 1e3:,.1f}",
            ]
        )
    header = ["mics", "frames/s", "srv CPU %", "srv CPU µs/frame", "streams/CPU"]
    return [
        f"Audio in at real-time pace ({OURS}): each microphone sends {REAL_TIME} frames/s for "
        f"{seconds:g} s, staggered;\n  then, one microphone after the other, activity-end and "
        "the time to the first frame of the answer\n  (the first one waits for any backlog)",
        table([*header, "first answer ms", "answer ms med"], rows),
    ]


def _idle_report(idle: list[Idle]) -> list[str]:
    rows = [
        [
            found.state,
            f"{found.count:,}",
            f"{found.rss_before / 2**20:,.1f}",
            f"{found.rss_after / 2**20:,.1f}",
            f"{(found.rss_after - found.rss_before) / found.count / 1024:,.1f}",
            f"{found.idle_cpu * 100:.1f}",
        ]
        for found in idle
    ]
    header = ["state", "K", "RSS before MiB", "RSS with K MiB", "KiB/conn", "idle CPU %"]
    states = [f"  {state}: {meaning}" for state, meaning in IDLE_STATES.items()]
    return [
        "Idle connections: server RSS (VmRSS) before and with K open, a fresh server per state",
        table(header, rows),
        *states,
    ]


def report(results: Results, reps: int, plan_seconds: float) -> str:
    out = _text_report(results, reps)
    out.append("")
    out += _audio_report(
        f"Speech out (?audio=1): N frames of 20 ms PCM16 24 kHz ({SPEECH_FRAME_BYTES} B) per "
        f"answer, median of {reps} runs\n  streams/CPU: conversations one server CPU could "
        f"voice at {REAL_TIME} frames/s",
        results.speech,
        SPEECH_FRAME_BYTES,
        listen=False,
    )
    out.append("")
    out += _audio_report(
        f"Audio in (?audio=1): N frames of 20 ms PCM16 16 kHz ({MIC_FRAME_BYTES} B) between "
        f"activity-start and activity-end,\n  sent as fast as possible, timed to the first "
        f"frame of the answer, median of {reps} runs",
        results.listen,
        MIC_FRAME_BYTES,
        listen=True,
    )
    out.append("")
    out += _paced_report(results.paced, plan_seconds)
    out.append("")
    out += _idle_report(results.idle)
    return "\n".join(out)


def _environment(info: dict[str, Any], placement: Placement) -> str:
    pinning = (
        f"throughput and audio with the agent (server, floor) on CPU {sorted(placement.agent_cpus)}"
        f" and the client on CPU {sorted(placement.client_cpus)}; idle connections unpinned"
        if placement.enabled
        else "no CPU pinning"
    )
    return (
        f"python {platform.python_version()}, google-adk {version('google-adk')}, "
        f"uvicorn {version('uvicorn')} (loop={info.get('loop')}, ws={info.get('ws')}), "
        f"websockets {version('websockets')}, {platform.machine()}, {os.cpu_count()} CPUs\n"
        f"{pinning}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.live", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run: small N, few runs")
    parser.add_argument("--reps", type=int, help="runs per row and size (default 7; quick 2)")
    parser.add_argument("--sizes", type=int, nargs="+", help="text deltas (1000 10000)")
    parser.add_argument(
        "--no-pin", action="store_true", help="let the scheduler place server and client"
    )
    args = parser.parse_args(argv)
    quick = args.quick
    plan = Plan(
        text=args.sizes or ([200] if quick else [1_000, 10_000]),
        speech=[200] if quick else [3_000],
        listen=[1_000] if quick else [20_000],
        paced=[10] if quick else [25, 100, 200],
        paced_seconds=2.0 if quick else 5.0,
        idle=[20, 50] if quick else [100, 500],
        reps=args.reps or (2 if quick else 7),
    )
    quiet()
    started = time.perf_counter()
    with ServerProcess("adk_asgi") as server:
        progress(f"server up: {server.url}")
        placement = Placement([server], pin=not args.no_pin)
        try:
            with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                results = runner.run(bench(server.url, plan, placement))
        except Exception:
            print(f"--- server log ---\n{server.log_tail()}", file=sys.stderr)
            raise
    print(_environment(server.info, placement))
    print(report(results, plan.reps, plan.paced_seconds))
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
