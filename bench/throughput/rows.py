"""``bench.throughput``'s rows, each a callable that makes one answer of N deltas and returns its
``Run``: the floor in this process (:class:`Floor`) and one client per server; their names in the
report, and the :class:`Results` of a run."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Final

import httpx
from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from bench.harness.agent import APP_NAME, USER_ID, make_agent, user_message
from bench.harness.chats import sse_payloads
from bench.harness.peers import AGUI_PATH, CONTENT, HEADERS, agui_body, agui_problem
from bench.harness.placement import on_agent_cpus
from bench.harness.rows import SHORT_ANSWER, HttpRow, Run, check_count
from bench.harness.serve import BARE_PATH, BARE_TEXT

OURS: Final = "adk_asgi"
BEFORE: Final = "adk_asgi before"
"""The A/B row (``--before-tree PATH``): the adk_asgi server of another checkout, in the same
rounds."""
PEER: Final = "ag-ui-adk"
BARE: Final = "bare http"
"""``run_async`` behind the thinnest HTTP endpoint (``bench.harness.serve.bare_app``), ADK as
installed."""
BARE_SKIPPING: Final = "bare http*"
"""The same, with ADK's failed per-run import skipped as ``AdkApp`` skips it
(``adk_asgi.serving.a2a_import``): what adk_asgi is compared with for the bridge's own share."""


@dataclass
@dataclass
class Results:
    throughput: dict[int, dict[str, list[Run]]]
    first_chunk: dict[str, list[Run]]
    round_trip: list[float]
    encoding: dict[int, dict[str, float]]


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
