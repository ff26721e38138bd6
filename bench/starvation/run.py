"""``python -m bench.starvation``: the server on PostgreSQL, the rounds, and the report."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

import bench.starvation as benchmark
from bench.harness.cli import numbers, parser
from bench.harness.report import progress
from bench.harness.serve import raise_fd_limit
from bench.harness.servers import ServerProcess, logs_on_error
from bench.starvation.report import report
from bench.starvation.rows import DEFAULT_BOUND, Round, one_round


async def bench(
    sockets: int, bound: int, flooders: int, count: int, rounds: int, delay: float
) -> list[Round]:
    from tests.backing_services import postgres_server

    done: list[Round] = []
    with postgres_server() as postgres:
        env = {
            "BENCH_SESSIONS": postgres.create_database("starvation").url,
            "BENCH_LOCKS": "default",
            "BENCH_USER_HEADER": "1",
            "BENCH_DELTA_DELAY": str(delay),
            "BENCH_USER_REQUESTS": str(bound),
        }
        with ServerProcess("adk_asgi_shared", env=env) as server, logs_on_error({"s": server}):
            _pin(server)
            for index in range(rounds):
                progress(f"round {index + 1} of {rounds}")
                done.append(await one_round(server.url, sockets, bound, flooders, count))
    return done


def _pin(server: ServerProcess) -> None:
    """The server on the last CPU, this process and the flood's on the others: a load
    generator's work must not take the CPU of the server it measures (PostgreSQL goes where
    the scheduler puts it)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return
    for pid in (server.info["supervisor"], *server.info["workers"]):
        os.sched_setaffinity(pid, {cpus[-1]})
    os.sched_setaffinity(0, set(cpus[:-1]))


def main(argv: Sequence[str] | None = None) -> None:
    found = parser("bench.starvation", benchmark.__doc__, "one round, 100 sockets, 10 probes")
    numbers(
        found,
        sockets="live sockets the attacker tries to open (1000)",
        flood="the attacker's chat requests in flight (64)",
        probes="the victim's probes per measurement (30)",
        bound="UserBounds(requests=N): the chat requests one user may run at once (the default)",
        rounds="rounds (3)",
    )
    numbers(found, kind=float, delay="seconds the model takes per delta (0.02)")
    args = found.parse_args(argv)
    raise_fd_limit()
    sockets = args.sockets if args.sockets is not None else (100 if args.quick else 1000)
    flooders = args.flood if args.flood is not None else 64
    count = args.probes if args.probes is not None else (10 if args.quick else 30)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    delay = args.delay if args.delay is not None else 0.02
    bound = args.bound if args.bound is not None else DEFAULT_BOUND
    done = asyncio.run(bench(sockets, bound, flooders, count, rounds, delay))
    print(report(done, sockets, bound, flooders, delay))
