"""Two uvicorn workers on one session database with no ``Stores(locks=)`` and no
``Stores(claims=)``: what the app picks by itself (the session database) keeps every chat's runs
apart.

Measured before (issue 26, in-process locks by default): two messages of one chat on the two
workers at once ended both answers in an ``error`` chunk (ADK's ``StaleSessionError``) in 20/20
rounds on native SQLite and PostgreSQL, 15/20 through SQLAlchemy's SQLite; the first message of
a new chat on both workers likewise. Now each round's two messages are both answered, one after
the other, or one is refused with 409 before anything streams; never an error chunk.

Per configuration, the workers (tests/deploy/payment_app.py, ``PAYMENT_LOCKS=default``) are
started once for the module; the rounds run one after another, each on a fresh chat.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.asgi.test_hitl import text
from tests.deploy.test_double_approval import (
    APP,
    ApprovalRound,
    FirstMessagesRound,
    Workers,
    _approval_round,
    _chunks,
    _client,
    _first_messages_round,
    _log_config,
    _reason,
)
from tests.servers import uvicorn_server
from tests.support import normalize_ids

pytestmark = pytest.mark.backing

ROUNDS = 20
DETAILED_ROUNDS = 3


@pytest.fixture(scope="module", params=["sqlite-native", "sqlite-sqlalchemy", "postgres"])
def workers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workers]:
    root = tmp_path_factory.mktemp(request.param)
    if request.param == "sqlite-native":
        db_url = f"sqlite-native:{root / 'sessions.db'}"
    elif request.param == "sqlite-sqlalchemy":
        db_url = f"sqlite+aiosqlite:///{root / 'sessions.db'}"
    else:
        postgres: Any = request.getfixturevalue("postgres")
        db_url = postgres.create_database(f"defaults_{secrets.token_hex(4)}").url
    ledger = root / "ledger.txt"
    env = {"PAYMENT_DB_URL": db_url, "PAYMENT_LOCKS": "default", "PAYMENT_LEDGER": str(ledger)}
    logs = (root / "worker-a.log", root / "worker-b.log")
    with ExitStack() as stack:
        bases = []
        for log in logs:
            config = str(_log_config(log.with_suffix(".json"), log))
            server = uvicorn_server(
                APP, env=env, ready_path="/ready", args=["--lifespan", "on", "--log-config", config]
            )
            try:
                bases.append(stack.enter_context(server))
            except RuntimeError as exc:
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
                raise RuntimeError(f"{exc}; the end of {log}:\n{tail}") from exc
        yield Workers(request.param, bases[0], bases[1], ledger, logs)


def _user(message_id: str, words: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": words}]}


def _answer(message_id: str, reply: str) -> dict[str, Any]:
    parts = [{"type": "step-start"}, {"type": "text", "text": reply, "state": "done"}]
    return {"id": message_id, "role": "assistant", "parts": parts}


def _reply(chunks: list[dict[str, Any]], words: str) -> str | None:
    """The reply of a whole, error-free answer to ``words``; ``None`` for anything else."""
    reply = "".join(c.get("delta", "") for c in chunks if c["type"] == "text-delta")
    whole = [
        {"type": "start", "messageId": "<msg1>"},
        *text(reply),
        {"type": "finish", "finishReason": "stop"},
    ]
    if not reply.startswith(f'You said: "{words}". ') or normalize_ids(chunks) != whole:
        return None
    return reply


@dataclass
class NextMessagesRound:
    chat_id: str
    statuses: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def _next_messages_round(
    client: httpx.AsyncClient, workers: Workers, n: int
) -> NextMessagesRound:
    """A chat with one answered message; then a message to each worker at once."""
    chat_id = f"next-{n}-{secrets.token_hex(4)}"
    result = NextMessagesRound(chat_id)
    problems = result.problems
    first = _user("u1", "hello")
    response = await client.post(
        f"{workers.a}/agent/chat", json={"id": chat_id, "messages": [first]}
    )
    chunks = _chunks(response, problems, "the first message")
    reply = _reply(chunks, "hello")
    if response.status_code != 200 or reply is None:
        problems.append(f"the first message: {response.status_code} {normalize_ids(chunks)}")
        return result
    answered = [first, _answer(chunks[0]["messageId"], reply)]
    users = {who: _user(f"u2-{who}", f"hello from {who}") for who in "AB"}
    responses = dict(
        zip(
            "AB",
            await _gather(
                client.post(
                    f"{base}/agent/chat",
                    json={"id": chat_id, "messages": [*answered, users[who]]},
                )
                for who, base in zip("AB", (workers.a, workers.b), strict=True)
            ),
            strict=True,
        )
    )
    turns: dict[str, list[dict[str, Any]]] = {}
    for who, response in responses.items():
        if response.status_code == 409 and _reason(response) is not None:
            continue
        chunks = _chunks(response, problems, who)
        reply = _reply(chunks, f"hello from {who}")
        if response.status_code != 200 or reply is None:
            problems.append(f"{who}: {response.status_code} {normalize_ids(chunks)[:6]}")
            continue
        turns[who] = [users[who], _answer(chunks[0]["messageId"], reply)]
    result.statuses = sorted(r.status_code for r in responses.values())
    if result.statuses not in ([200, 200], [200, 409]):
        problems.append(f"statuses {result.statuses}, not [200, 200] or [200, 409]")
    history = (await client.get(f"{workers.b}/agent/chat/{chat_id}/messages")).json()
    # the turns in either order: the workers ran them one after the other
    orders = [
        [*answered, *turns[x], *turns[y]] for x, y in ("AB", "BA") if x in turns and y in turns
    ]
    if len(turns) < 2:
        orders = [[*answered, *(m for turn in turns.values() for m in turn)]]
    if not problems and history not in orders:
        problems.append(f"history: {json.dumps(history)[:600]}")
    return result


async def _gather(requests: Any) -> list[httpx.Response]:
    return list(await asyncio.gather(*requests))


def _report(
    workers: Workers,
    rounds: list[Any],
    logged: list[int],
    statuses: Counter[str],
) -> str:
    failed = [r for r in rounds if r.problems]
    details = "\n".join(
        f"  round {r.chat_id}: " + "; ".join(r.problems) for r in failed[:DETAILED_ROUNDS]
    )
    return (
        f"[{workers.name}] {len(failed)}/{len(rounds)} rounds failed; status pairs "
        f"{dict(statuses)}\n{workers.logged_since(logged)}\nfirst failed rounds:\n{details}"
    )


async def test_two_messages_of_one_chat_at_once_are_both_answered_or_one_is_refused(
    workers: Workers,
) -> None:
    logged = workers.log_sizes()
    async with _client() as client:
        rounds = [await _next_messages_round(client, workers, n) for n in range(ROUNDS)]
    statuses = Counter(str(r.statuses) for r in rounds)
    assert [r for r in rounds if r.problems] == [], _report(workers, rounds, logged, statuses)


async def test_the_first_message_of_a_new_chat_on_both_workers_at_once(workers: Workers) -> None:
    logged = workers.log_sizes()
    async with _client() as client:
        rounds: list[FirstMessagesRound] = [
            await _first_messages_round(client, workers, n) for n in range(ROUNDS)
        ]
    statuses = Counter(str(r.statuses) for r in rounds)
    assert [r for r in rounds if r.problems] == [], _report(workers, rounds, logged, statuses)


async def test_an_approval_sent_to_both_workers_at_once_pays_once(workers: Workers) -> None:
    logged = workers.log_sizes()
    async with _client() as client:
        rounds: list[ApprovalRound] = [
            await _approval_round(client, workers, n) for n in range(ROUNDS)
        ]
    statuses = Counter(str(list(r.statuses)) for r in rounds)
    assert ([r.runs for r in rounds], statuses) == ([1] * ROUNDS, Counter({"[200, 409]": ROUNDS}))
    assert [r for r in rounds if r.problems] == [], _report(workers, rounds, logged, statuses)
