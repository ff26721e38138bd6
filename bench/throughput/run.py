"""``python -m bench.throughput``: a server per row, the rounds of every size, the time to first
text, the encoding costs, and the report."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import httpx

import bench.throughput as benchmark
from bench.harness import cli
from bench.harness.agent import quiet
from bench.harness.placement import Placement, loop_factory
from bench.harness.report import peer_versions, progress, versions
from bench.harness.rows import SHORT_ANSWER, Measure, sample
from bench.harness.serve import RESUMABLE
from bench.harness.servers import ServerProcess, checkout, describe, logs_on_error
from bench.throughput.encode import encode_costs
from bench.throughput.report import report
from bench.throughput.rows import (
    BARE,
    BARE_SKIPPING,
    BEFORE,
    OURS,
    PEER,
    AdkAsgiClient,
    AdkRunSseClient,
    AgUiClient,
    BareClient,
    Floor,
    Results,
)


async def bench(
    urls: dict[str, str],
    sizes: Sequence[int],
    reps: int,
    ttfc_runs: int,
    placement: Placement,
    *,
    primed: bool = True,
) -> Results:
    """``urls``: the servers by kind (``adk_asgi``, ``before``, ``adk_run_sse``,
    ``ag_ui_adk``, ``adk_bare`` and ``adk_bare_skipping``); a row whose server is not there is
    left out."""
    floor = Floor()
    timeout = httpx.Timeout(300.0)
    async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
        rows: dict[str, Measure] = {
            "floor": floor,
            OURS: AdkAsgiClient(client, urls["adk_asgi"]),
            "resumable": AdkAsgiClient(client, urls["resumable"], RESUMABLE),
            "adk /run_sse": AdkRunSseClient(client, urls["adk_run_sse"]),
        }
        if "before" in urls:
            rows[BEFORE] = AdkAsgiClient(client, urls["before"])
        if "ag_ui_adk" in urls:
            rows[PEER] = AgUiClient(client, urls["ag_ui_adk"])
        if "adk_bare" in urls:
            rows[BARE] = BareClient(client, urls["adk_bare"])
            rows[BARE_SKIPPING] = BareClient(client, urls["adk_bare_skipping"])
        throughput = {}
        floor.cpus = placement.pin()
        for size in sizes:
            progress(f"throughput N={size:,} ({reps} runs per row)")
            throughput[size] = await sample(rows, size, reps)
        placement.unpin()
        floor.cpus = None
        progress(f"first text ({ttfc_runs} runs per row)")
        first_chunk = await sample(rows, SHORT_ANSWER, ttfc_runs, primed=primed)
        ours = AdkAsgiClient(client, urls["adk_asgi"])
        round_trip = [await ours.round_trip() for _ in range(ttfc_runs)]
    progress("encoding")
    encoding = {size: encode_costs(await floor.events(size)) for size in sizes}
    return Results(throughput, first_chunk, round_trip, encoding)


def _environment(
    servers: dict[str, ServerProcess], placement: Placement, before: Path | None
) -> str:
    """Versions, what uvicorn picked for each server (the same, or the comparison is off),
    where the processes ran, and the other checkout of ``--before-tree``."""
    picked = {
        kind: f"loop={server.info.get('loop')}, http={server.info.get('http')}"
        for kind, server in servers.items()
    }
    if len(set(picked.values())) == 1:
        uvicorn_line = next(iter(picked.values()))
    else:
        uvicorn_line = "; ".join(f"{kind} {found}" for kind, found in picked.items())
    client = f"httpx {version('httpx')}{peer_versions()}"
    found = f"{versions(uvicorn_line, client)}\n{placement.describe()}"
    if before:
        found += f"\n{BEFORE}: served from {describe(before)}"
    return found


def _server(name: str, kind: str, before: Path | None) -> ServerProcess:
    """A row's server; the A/B row's (``before``) runs the other checkout (``--before-tree``)."""
    if name == "adk_bare_skipping":
        return ServerProcess(kind, env={"BENCH_SKIP_A2A": "1"})
    return ServerProcess(kind, root=before if name == "before" else None)


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("bench.throughput", benchmark.__doc__, "a smoke run: small N, few runs")
    cli.numbers(parser, reps="runs per row and size (default 7; quick 2)")
    cli.lists(parser, sizes="deltas per answer (1000 10000)")
    cli.numbers(parser, ttfc_runs="runs per row for the first text (84: whole cycles of orders)")
    cli.before_tree(parser)
    cli.switches(
        parser,
        no_pin="let the scheduler place servers and client",
        no_peer="leave out the ag-ui-adk row",
        no_bare="leave out the bare http rows",
        no_prime="time first text without an untimed run first",
    )
    args = parser.parse_args(argv)
    reps = args.reps or (2 if args.quick else 7)
    sizes = args.sizes or ([200] if args.quick else [1_000, 10_000])
    ttfc_runs = args.ttfc_runs or (5 if args.quick else 84)
    before = checkout(args.before_tree) if args.before_tree else None
    quiet()
    started = time.perf_counter()
    # Every row a process of its own: a server that served the request before is 0.4 ms
    # faster to a first text, so two rows on one server would each help the other.
    kinds = {"adk_asgi": "adk_asgi", "resumable": "adk_asgi", "adk_run_sse": "adk_run_sse"}
    if before:
        kinds["before"] = "adk_asgi"
    if not args.no_peer:
        kinds["ag_ui_adk"] = "ag_ui_adk"
    if not args.no_bare:
        kinds["adk_bare"] = kinds["adk_bare_skipping"] = "adk_bare"
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(_server(name, kind, before)) for name, kind in kinds.items()
        }
        progress("servers up: " + ", ".join(f"{k} {s.url}" for k, s in servers.items()))
        placement = Placement(list(servers.values()), pin=not args.no_pin)
        urls = {name: server.url for name, server in servers.items()}
        work = bench(urls, sizes, reps, ttfc_runs, placement, primed=not args.no_prime)
        with logs_on_error(servers), asyncio.Runner(loop_factory=loop_factory()) as runner:
            results = runner.run(work)
        print(_environment(servers, placement, before))
    print(report(results, reps, ttfc_runs))
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
