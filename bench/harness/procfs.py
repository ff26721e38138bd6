"""What ``/proc`` says about the benches' processes: memory, CPU and the kernel's send queues.

Shared by the benches that read a server from outside (``bench.live``,
``bench.live_concurrency``, ``bench.slow_clients``, ``bench.scale_out``): the server's own
probes (``bench.harness.probes``) cannot see its resident memory as the kernel counts it, nor the
CPU of the processes around it (Redis, PostgreSQL, the machine).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

_CLOCK_TICK: Final = os.sysconf("SC_CLK_TCK")


def status_bytes(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` figure in bytes (``VmRSS``, ``VmHWM``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} for {pid}")


def rss(pid: int) -> int:
    """Resident set size of a process, in bytes (``VmRSS`` of ``/proc/<pid>/status``)."""
    return status_bytes(pid, "VmRSS")


def reset_peak(pid: int) -> bool:
    """Reset the kernel's peak RSS (``VmHWM``) of ``pid`` to its current RSS."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


def send_queue(port: int) -> int:
    """Bytes the kernel holds unsent on the established connections of local ``port``."""
    total = 0
    with open("/proc/net/tcp") as tcp:
        next(tcp)
        for line in tcp:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                total += int(fields[4].split(":")[0], 16)
    return total


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (the first is the state)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()


def process_cpu(pid: int) -> float:
    """CPU seconds of a process (all its threads) and of its children it has reaped."""
    fields = _stat(pid)
    return sum(int(value) for value in fields[11:15]) / _CLOCK_TICK


def descendants(root: int) -> list[int]:
    """``root`` and every process below it, now."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def tree_cpu(root: int) -> float:
    total = 0.0
    for pid in descendants(root):
        with contextlib.suppress(OSError, IndexError):
            total += process_cpu(pid)
    return total


def find_process(*needles: str) -> int:
    """The pid of the one process whose command line holds every one of ``needles``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            words = (entry / "cmdline").read_bytes().split(b"\0")
            line = " ".join(word.decode(errors="replace") for word in words)
            if all(needle in line for needle in needles):
                return int(entry.name)
    raise RuntimeError(f"no process with {needles}")


def machine_cpu() -> tuple[float, float]:
    """CPU seconds the machine has been busy (all CPUs, iowait excluded), and stolen by the
    hypervisor, since boot (``/proc/stat``)."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    user, nice, system, irq, softirq, steal = fields[0], fields[1], fields[2], *fields[5:8]
    busy = user + nice + system + irq + softirq
    return busy / _CLOCK_TICK, steal / _CLOCK_TICK


def listen_overflows() -> int:
    """The kernel's count of connections refused for a full listen queue (all sockets)."""
    try:
        with open("/proc/net/netstat") as netstat:
            lines = netstat.read().splitlines()
    except OSError:
        return 0
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            return int(table.get("ListenOverflows", 0))
    return 0
