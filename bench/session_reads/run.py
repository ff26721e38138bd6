"""``python -m bench.session_reads``: the app on PostgreSQL called in this process, each chat
length's rounds of both rows, and the table."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import httpx
from google.adk.sessions.database_session_service import DatabaseSessionService

import bench.session_reads as benchmark
from adk_asgi import AdkApp
from adk_asgi.sse import chat as chat_module
from bench.harness.agent import make_agent
from bench.harness.report import load_average, median_of, paired, progress, table
from tests.backing_services import postgres_server

LENGTHS = (0, 10, 40)
"""Earlier turns of each chat before the measured message."""


def _body(chat_id: str, history: list[dict[str, Any]], message_id: str) -> dict[str, Any]:
    message = {"id": message_id, "role": "user", "parts": [{"type": "text", "text": "5"}]}
    return {"id": chat_id, "messages": [*history, message], "trigger": "submit-message"}


@contextmanager
def _read_twice() -> Iterator[None]:
    """The app as it was: nothing handed over, so the Runner reads the session itself."""
    names = vars(chat_module)  # sse/chat.py's own binding of hand_over, not a re-export
    hand_over = names["hand_over"]
    names["hand_over"] = lambda session: None
    try:
        yield
    finally:
        names["hand_over"] = hand_over


class _Counted(DatabaseSessionService):
    reads = 0

    async def get_session(self, **kwargs: Any) -> Any:
        self.reads += 1
        return await super().get_session(**kwargs)


class _Run:
    def __init__(self, seconds: float, reads: float) -> None:
        self.seconds, self.reads = seconds, reads


async def _chats(client: httpx.AsyncClient, earlier: int, count: int, tag: str) -> list[str]:
    """``count`` chats of ``earlier`` turns, made untimed."""
    ids = [f"{tag}-{earlier}-{i}" for i in range(count)]
    for chat_id in ids:
        for turn in range(earlier):
            reply = await client.post("/chat", json=_body(chat_id, [], f"u{turn}"))
            reply.raise_for_status()
    return ids


async def _measure(
    client: httpx.AsyncClient, sessions: _Counted, chat_ids: Sequence[str], earlier: int
) -> _Run:
    sessions.reads = 0
    cpu = time.process_time()
    for chat_id in chat_ids:
        reply = await client.post("/chat", json=_body(chat_id, [], f"u{earlier}"))
        if reply.status_code != 200 or not reply.content.endswith(b"data: [DONE]\n\n"):
            raise RuntimeError(f"{chat_id}: {reply.status_code} {reply.text[-200:]}")
    cpu = time.process_time() - cpu
    return _Run(cpu / len(chat_ids), sessions.reads / len(chat_ids))


async def run(url: str, rounds: int, count: int) -> str:
    sessions = _Counted(db_url=url)
    app = AdkApp(make_agent(), session_service=sessions, identify=lambda conn: "u")
    await app.prepare()
    rows = []
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for twice in (False, True):  # warm-up: ADK's lazy imports, the pool's connections
                with _read_twice() if twice else nullcontext():
                    await _measure(client, sessions, await _chats(client, 1, 2, f"warm{twice}"), 1)
            for earlier in LENGTHS:
                runs: dict[bool, list[_Run]] = {False: [], True: []}  # by "read twice"
                for round_ in range(rounds):
                    progress(f"{earlier} earlier turns, round {round_ + 1}/{rounds}")
                    for twice in (False, True) if round_ % 2 == 0 else (True, False):
                        ids = await _chats(client, earlier, count, f"r{round_}{twice}")
                        with _read_twice() if twice else nullcontext():
                            runs[twice].append(await _measure(client, sessions, ids, earlier))
                once_cpu, twice_cpu = (median_of(runs[t], "seconds") * 1e3 for t in (False, True))
                rows.append(
                    [
                        f"{earlier}",
                        f"{runs[False][0].reads:.0f}",
                        f"{runs[True][0].reads:.0f}",
                        f"{once_cpu:.2f}",
                        f"{twice_cpu:.2f}",
                        f"{paired(runs[False], runs[True]):.3f}",
                    ]
                )
    finally:
        await app.aclose()
        await sessions.close()
    header = [
        "earlier turns",
        "reads, once",
        "reads, twice",
        "CPU ms, once",
        "CPU ms, twice",
        "once / twice",
    ]
    return table(header, rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.session_reads",
        description=(benchmark.__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds (5)")
    parser.add_argument("--chats", type=int, default=10, help="messages per row and round (10)")
    options = parser.parse_args(argv)
    print(f"load average (1, 5, 15 min) before {load_average()}")
    with postgres_server() as postgres:
        report = asyncio.run(run(postgres.url, options.rounds, options.chats))
    print(
        "One message to a chat of N earlier turns, on PostgreSQL (DatabaseSessionService), in\n"
        "  process. once: the Runner is handed the session the checks read; twice: it reads it\n"
        "  itself. reads: get_session calls per message; CPU: this process's per message (app\n"
        "  and client), median over rounds; once / twice: median of the per-round CPU ratios"
    )
    print(report)
    print(f"load average (1, 5, 15 min) after {load_average()}")
