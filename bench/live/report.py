"""``bench.live``'s report: throughput, speech out, audio in (as fast as possible and at
real-time pace) and idle connections, each row against the floor."""

from __future__ import annotations

import statistics
from importlib.metadata import version
from typing import Any, Final

from bench.harness.agent import DELTA_CHARS, SPEECH_FRAME_BYTES
from bench.harness.live import MIC_FRAME_BYTES, Paced, Run
from bench.harness.placement import Placement
from bench.harness.report import (
    RUN_HEADER,
    median_of,
    min_of,
    paired,
    run_cells,
    table,
    verdict,
    versions,
)
from bench.live.rows import (
    IDLE_STATES,
    OURS,
    RESUMABLE_ROW,
    Idle,
    Results,
)

REAL_TIME: Final = 50
"""Frames per second that 20 ms audio frames need, one way, for one conversation."""
TARGET: Final = 0.90


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
            client = median_of(runs, "client_cpu")
            rows.append(
                [
                    name,
                    f"{size:,}",
                    *run_cells(runs, size),
                    f"{median_of(runs, 'server_cpu') / size * 1e6:,.0f}",
                    f"{client / size * 1e6:,.0f}" if client else "-",
                ]
            )
    header = ["row", "N", *RUN_HEADER, "srv CPU µs/delta"]
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


def environment(info: dict[str, Any], placement: Placement) -> str:
    pinning = (
        f"throughput and audio with the agent (server, floor) on CPU {sorted(placement.agent_cpus)}"
        f" and the client on CPU {sorted(placement.client_cpus)}; idle connections unpinned"
        if placement.enabled
        else "no CPU pinning"
    )
    picked = f"loop={info.get('loop')}, ws={info.get('ws')}"
    return f"{versions(picked, 'websockets ' + version('websockets'))}\n{pinning}"
