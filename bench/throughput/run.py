"""Throughput and time to first text: adk_asgi against bare ``run_async`` and its peers.

``python -m bench.throughput [--quick] [--reps R] [--sizes N ...] [--no-peer] [--no-before]
[--before-tree PATH]``

Every row runs the same agent (``bench.harness.agent``: a scripted model streaming N deltas of 8
characters) in one invocation of this command, with the runs of the rows interleaved, so a
noisy machine slows all rows alike and the ratios stay fair:

* ``floor``: ``Runner.run_async`` (SSE streaming, in-memory sessions) iterated in this process;
  nothing can stream faster than ADK produces events.
* ``adk_asgi``: ``AdkApp`` mounted in Starlette, served by uvicorn in a child process, read by an
  httpx streaming client here.
* ``adk_asgi before``: the same, with the SSE writer as it was before the first words after a
  pause went out at once (``bench.writer_before``): the A/B of that change. With
  ``--before-tree PATH``, the same app served from another checkout instead (a ``git
  worktree`` of an earlier commit): an A/B of two commits in one run.
* ``resumable``: the same app with a stream store, on a server of its own (as every row: a
  server that served the request before is faster to a first text).
* ``adk /run_sse``: ADK's own API server (``get_fast_api_app``), same uvicorn settings, same
  client.
* ``bare http``: ``run_async`` behind a raw ASGI endpoint, one SSE frame per partial event
  (``bench.harness.serve.bare_app``): what any HTTP server of the agent pays over the floor.
* ``bare http*``: the same, with ADK's failed import on every run skipped as ``AdkApp`` skips it
  (``adk_asgi.serving.a2a_import``): adk_asgi's time to first text over it is the bridge's own
  share, measured in the same rounds; ``bare http`` over it is what that import costs.
* ``ag-ui-adk``: the AG-UI protocol's ADK middleware (``bench.harness.peers``: FastAPI,
  sse-starlette), same uvicorn settings, same client; ``--no-peer`` leaves it out (it is
  installed by the ``bench`` extra).

Then the time to the first text delta of a short answer, and the encoding cost per chunk. See
``docs/internals/performance-notes.md`` for what the figures mean.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Final

import httpx
from google.adk.agents._streaming_mode import StreamingMode  # run_config re-exports it implicitly
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from bench.encode import encode_costs
from bench.harness import cli
from bench.harness.agent import APP_NAME, USER_ID, make_agent, quiet, user_message
from bench.harness.chats import sse_payloads
from bench.harness.peers import AGUI_PATH, CONTENT, HEADERS, agui_body, agui_problem
from bench.harness.placement import Placement, loop_factory, on_agent_cpus
from bench.harness.report import progress, versions
from bench.harness.rows import SHORT_ANSWER, HttpRow, Measure, Run, check_count, sample
from bench.harness.serve import BARE_PATH, BARE_TEXT, RESUMABLE
from bench.harness.servers import ServerProcess, logs_on_error
from bench.throughput_report import BARE, BARE_SKIPPING, BEFORE, OURS, PEER, Results, report

TEXT_DELTA: Final = b'"type":"text-delta"'
ADK_TEXT: Final = b'"text":"'
DONE: Final = b"data: [DONE]\n\n"


class Floor:
    """Bare ``run_async``: what ADK costs before any transport.

    With ``cpus`` set, this process moves to the servers' CPU for each run (and back), so every
    row runs the agent on the same CPU: a vCPU the host slows for a while slows all rows alike.
    A short untimed run after the move warms that CPU's caches, as a server's are warm.
    """

    def __init__(self) -> None:
        self.cpus: set[int] | None = None
        self.sessions = InMemorySessionService()
        app = App(name=APP_NAME, root_agent=make_agent())
        self.runner = Runner(app=app, session_service=self.sessions)
        self.run_config = RunConfig(streaming_mode=StreamingMode.SSE)

    async def events(self, deltas: int) -> list[Event]:
        """Every event of one run (for the encoding micro-benchmark)."""
        session = await self.sessions.create_session(app_name=APP_NAME, user_id=USER_ID)
        run = self.runner.run_async(
            user_id=USER_ID,
            session_id=session.id,
            new_message=user_message(deltas),
            run_config=self.run_config,
        )
        return [event async for event in run]

    async def __call__(self, deltas: int) -> Run:
        if not self.cpus:
            return await self._run(deltas)
        return await on_agent_cpus(
            self.cpus, lambda: self._run(SHORT_ANSWER), lambda: self._run(deltas)
        )

    async def _run(self, deltas: int) -> Run:
        session = await self.sessions.create_session(app_name=APP_NAME, user_id=USER_ID)
        message = user_message(deltas)
        events = partials = 0
        first = 0.0
        cpu = time.process_time()
        start = time.perf_counter()
        async for event in self.runner.run_async(
            user_id=USER_ID, session_id=session.id, new_message=message, run_config=self.run_config
        ):
            events += 1
            if event.partial:
                partials += 1
                if not first:
                    first = time.perf_counter() - start
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu
        check_count("floor", partials, deltas)
        return Run(seconds, first, events, 0, cpu, 0.0)


class AdkAsgiClient(HttpRow):
    """``POST /agent/chat`` as the AI SDK's ``DefaultChatTransport`` sends it, a new chat each
    (``mount``: another mount of the same server, e.g. the one with a stream store)."""

    def __init__(self, client: httpx.AsyncClient, base_url: str, mount: str = "/agent") -> None:
        super().__init__(client, base_url)
        self.mount = mount

    async def __call__(self, deltas: int) -> Run:
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": str(deltas)}]}
        body = {"id": uuid.uuid4().hex, "messages": [message], "trigger": "submit-message"}
        got = await self.stream(f"{self.mount}/chat", body, TEXT_DELTA)
        data = got.data
        if not data.endswith(DONE) or b'"type":"error"' in data:
            raise RuntimeError(f"adk_asgi: bad stream ending {data[-300:]!r}")
        check_count("adk_asgi", data.count(TEXT_DELTA), deltas)
        units = data.count(b"data: ") - 1
        return Run(got.seconds, got.first, units, len(data), got.server_cpu, got.client_cpu)


class AdkRunSseClient(HttpRow):
    """ADK's ``/run_sse``: a session created over REST (untimed), then the streamed run."""

    async def __call__(self, deltas: int) -> Run:
        sessions = f"{self.base_url}/apps/{APP_NAME}/users/{USER_ID}/sessions"
        created = await self.client.post(sessions, json={})
        created.raise_for_status()
        body = {
            "appName": APP_NAME,
            "userId": USER_ID,
            "sessionId": created.json()["id"],
            "newMessage": {"role": "user", "parts": [{"text": str(deltas)}]},
            "streaming": True,
        }
        got = await self.stream("/run_sse", body, ADK_TEXT)
        data = got.data
        if b'"error"' in data:
            raise RuntimeError(f"adk /run_sse: error frame {data[-300:]!r}")
        check_count("adk /run_sse", data.count(b'"partial":true'), deltas)
        units = data.count(b"data: ")
        return Run(got.seconds, got.first, units, len(data), got.server_cpu, got.client_cpu)


class BareClient(HttpRow):
    """``bench.harness.serve.bare_app``'s endpoint: the deltas asked for, one frame each."""

    async def __call__(self, deltas: int) -> Run:
        got = await self.stream(BARE_PATH, {"deltas": deltas}, BARE_TEXT)
        data = got.data
        if not data.endswith(DONE):
            raise RuntimeError(f"{BARE}: bad stream ending {data[-300:]!r}")
        check_count(BARE, data.count(BARE_TEXT), deltas)
        units = data.count(b"data: ") - 1
        return Run(got.seconds, got.first, units, len(data), got.server_cpu, got.client_cpu)


class AgUiClient(HttpRow):
    """ag-ui-adk's endpoint: a ``RunAgentInput`` for a new thread, as ``HttpAgent`` posts it."""

    async def __call__(self, deltas: int) -> Run:
        got = await self.stream(AGUI_PATH, agui_body(deltas), CONTENT, HEADERS)
        payloads = [payload for payload, _ in sse_payloads(got.data)]
        problem = agui_problem(payloads, deltas)
        if problem:
            raise RuntimeError(f"{PEER}: {problem}: {got.data[-300:]!r}")
        units = len(payloads)
        return Run(got.seconds, got.first, units, len(got.data), got.server_cpu, got.client_cpu)


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


def _environment(servers: dict[str, ServerProcess], placement: Placement) -> str:
    """Versions, what uvicorn picked for each server (the same, or the comparison is off), and
    where the processes ran."""
    picked = {
        kind: f"loop={server.info.get('loop')}, http={server.info.get('http')}"
        for kind, server in servers.items()
    }
    if len(set(picked.values())) == 1:
        uvicorn_line = next(iter(picked.values()))
    else:
        uvicorn_line = "; ".join(f"{kind} {found}" for kind, found in picked.items())
    try:
        peer = f", ag-ui-adk {version('ag-ui-adk')}, sse-starlette {version('sse-starlette')}"
    except PackageNotFoundError:
        peer = ""
    client = f"httpx {version('httpx')}{peer}"
    return f"{versions(uvicorn_line, client)}\n{placement.describe()}"


def _server(name: str, kind: str, before_tree: str | None) -> ServerProcess:
    """A row's server. The A/B row (``before``) is this checkout with the earlier SSE writer,
    or, with ``--before-tree``, another checkout's app."""
    if name == "adk_bare_skipping":
        return ServerProcess(kind, env={"BENCH_SKIP_A2A": "1"})
    if name != "before":
        return ServerProcess(kind)
    if before_tree:
        return ServerProcess(kind, root=os.path.abspath(before_tree))
    return ServerProcess(kind, env={"BENCH_WRITER": "before"})


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("bench.throughput", __doc__, "a smoke run: small N, few runs")
    cli.numbers(parser, reps="runs per row and size (default 7; quick 2)")
    cli.lists(parser, sizes="deltas per answer (1000 10000)")
    cli.numbers(parser, ttfc_runs="runs per row for the first text (84: whole cycles of orders)")
    cli.numbers(parser, str, before_tree="serve the A/B row from this checkout of adk-asgi")
    cli.switches(
        parser,
        no_pin="let the scheduler place servers and client",
        no_peer="leave out the ag-ui-adk row",
        no_before="leave out the A/B row",
        no_bare="leave out the bare http rows",
        no_prime="time first text without an untimed run first",
    )
    args = parser.parse_args(argv)
    reps = args.reps or (2 if args.quick else 7)
    sizes = args.sizes or ([200] if args.quick else [1_000, 10_000])
    ttfc_runs = args.ttfc_runs or (5 if args.quick else 84)
    quiet()
    started = time.perf_counter()
    # Every row a process of its own: a server that served the request before is 0.4 ms
    # faster to a first text, so two rows on one server would each help the other.
    kinds = {"adk_asgi": "adk_asgi", "resumable": "adk_asgi", "adk_run_sse": "adk_run_sse"}
    if not args.no_before:
        kinds["before"] = "adk_asgi"
    if not args.no_peer:
        kinds["ag_ui_adk"] = "ag_ui_adk"
    if not args.no_bare:
        kinds["adk_bare"] = kinds["adk_bare_skipping"] = "adk_bare"
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(_server(name, kind, args.before_tree))
            for name, kind in kinds.items()
        }
        progress("servers up: " + ", ".join(f"{k} {s.url}" for k, s in servers.items()))
        placement = Placement(list(servers.values()), pin=not args.no_pin)
        urls = {name: server.url for name, server in servers.items()}
        work = bench(urls, sizes, reps, ttfc_runs, placement, primed=not args.no_prime)
        with logs_on_error(servers), asyncio.Runner(loop_factory=loop_factory()) as runner:
            results = runner.run(work)
        print(_environment(servers, placement))
    print(report(results, reps, ttfc_runs))
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
