"""Exactly-once across real server processes: two uvicorn workers (tests/deploy/payment_app.py)
on one session database, one payment ledger and one lock configuration.

An approval sent to both workers at once must run the payment once: one worker streams the
result, the other answers 409. With the default in-process locks each worker only locks for
itself, so nothing but the server's own exactly-once logic can stop a double run; with Redis or
PostgreSQL locks the workers serialize the chat, and the second one finds the approval answered.

Each configuration's pair of workers is started once for the module. The rounds of a test run
one after another, each on a fresh chat; failures are collected over all rounds and reported
together (how many rounds double-ran, the status pairs, 409 reasons, error chunks, and the
exceptions the workers logged).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from adk_asgi.testing import read_ui_message
from tests.asgi.test_hitl import CLOSING_ALICE, PAY_ALICE, SENT_ALICE, text
from tests.backing_services import Postgres
from tests.deploy.on_gemini import on_gemini
from tests.servers import uvicorn_server
from tests.support import answer, normalize_ids, parse_sse

pytestmark = pytest.mark.backing

APP = "tests.deploy.payment_app:app"
# The shared-lock configurations first, so that `-x` shows them before the in-process ones.
SHARED_LOCKS = ["sqlite+redis", "postgres+postgres"]
# ``@gemini``: the agent on ADK's own Gemini class, against the stand-in (in this process).
CONFIGURATIONS = [*SHARED_LOCKS, "sqlite+process", "postgres+process", "postgres+redis@gemini"]
APPROVAL_ROUNDS = 30
GEMINI_ROUNDS = 20
"""Rounds on the stand-in: the race is the bridge's, the same on any model; the wire (and
its own time) is what the stand-in adds."""
FIRST_MESSAGE_ROUNDS = 20
DETAILED_ROUNDS = 5  # rounds whose problems the failure message spells out

# The approved continuation's stream, ids numbered on from the first stream's
# (tests/asgi/test_hitl.py::test_payment_approved).
APPROVED_STREAM = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "tool-output-available", "toolCallId": "<call1>", "output": SENT_ALICE},
    *text(CLOSING_ALICE),
    {"type": "finish", "finishReason": "stop"},
]


# --- the workers -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Workers:
    """Two uvicorn processes of one configuration."""

    name: str
    a: str
    b: str
    ledger: Path
    logs: tuple[Path, Path]

    def ledger_lines(self, chat_id: str) -> list[str]:
        if not self.ledger.exists():
            return []
        lines = self.ledger.read_text().splitlines()
        return [line for line in lines if line.split(" ", 1)[0] == chat_id]

    def log_sizes(self) -> list[int]:
        return [log.stat().st_size if log.exists() else 0 for log in self.logs]

    def logged_since(self, sizes: list[int]) -> str:
        """What the workers logged since ``log_sizes()`` gave ``sizes``, summarized."""
        found: Counter[str] = Counter()
        for log, start in zip(self.logs, sizes, strict=True):
            if not log.exists():
                continue
            with log.open("rb") as file:
                file.seek(start)
                new = file.read().decode(errors="replace")
            found.update(
                f"{log.stem}: {m.rsplit('.', 1)[-1]}" for m in _EXCEPTION_LINE.findall(new)
            )
            found.update(f"{log.stem}: {m!r}" for m in _NOTABLE_LOG.findall(new))
        if not found:
            return "the workers logged no exception"
        return "the workers logged: " + ", ".join(f"{n}x {what}" for what, n in found.items())


_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception))\b", re.MULTILINE)
_NOTABLE_LOG = re.compile(r"Exception in ASGI application|adk_asgi: [^\n]*")


def _log_config(path: Path, log: Path) -> Path:
    """A uvicorn ``--log-config`` that sends every warning of the worker to ``log``."""
    handler = {"class": "logging.FileHandler", "filename": str(log), "formatter": "plain"}
    config = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"}},
        "handlers": {"file": handler},
        "root": {"handlers": ["file"], "level": "WARNING"},
        "loggers": {"uvicorn": {"handlers": ["file"], "level": "WARNING", "propagate": False}},
    }
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module", params=CONFIGURATIONS)
def workers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workers]:
    backends, _, model = request.param.partition("@")
    database, locks = backends.split("+")
    root = tmp_path_factory.mktemp(re.sub(r"\W", "-", request.param))
    postgres: Postgres | None = None
    if "postgres" in (database, locks):
        postgres = request.getfixturevalue("postgres").create_database(
            f"payments_{secrets.token_hex(4)}"
        )
    if database == "sqlite":
        db_url = f"sqlite+aiosqlite:///{root / 'sessions.db'}"
    else:
        assert postgres is not None
        db_url = postgres.url
    if locks == "redis":
        lock_spec = f"redis:{request.getfixturevalue('redis_url')}"
    elif locks == "postgres":
        assert postgres is not None
        lock_spec = f"postgres:{postgres.dsn}"
    else:
        lock_spec = "process"
    ledger = root / "ledger.txt"
    env = {"PAYMENT_DB_URL": db_url, "PAYMENT_LOCKS": lock_spec, "PAYMENT_LEDGER": str(ledger)}
    logs = (root / "worker-a.log", root / "worker-b.log")
    servers = [
        uvicorn_server(
            APP,
            env=env,
            ready_path="/ready",
            args=[
                "--lifespan",
                "on",
                "--log-config",
                str(_log_config(log.with_suffix(".json"), log)),
            ],
        )
        for log in logs
    ]
    with ExitStack() as stack:
        if model == "gemini":
            stack.enter_context(on_gemini(env, chunk_size=200))
        # One after the other: this module is about requests, not about start-up races.
        bases = []
        for server, log in zip(servers, logs, strict=True):
            try:
                bases.append(stack.enter_context(server))
            except RuntimeError as exc:
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
                raise RuntimeError(f"{exc}; the end of {log}:\n{tail}") from exc
        yield Workers(request.param, bases[0], bases[1], ledger, logs)


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=httpx.Timeout(40.0))


# --- an approval sent to both workers at once ------------------------------------------------


@dataclass
class ApprovalRound:
    chat_id: str
    runs: int = 0
    statuses: tuple[int, ...] = ()
    reasons: list[str] = field(default_factory=list)
    error_chunks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _reason(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    reason = body.get("error") if isinstance(body, dict) else None
    return reason if isinstance(reason, str) and reason else None


def _chunks(response: httpx.Response, problems: list[str], who: str) -> list[dict[str, Any]]:
    try:
        return parse_sse(response.content)
    except (AssertionError, ValueError) as exc:
        problems.append(f"{who}'s 200 is no complete SSE stream: {exc}")
        return []


async def _approval_round(client: httpx.AsyncClient, workers: Workers, n: int) -> ApprovalRound:
    chat_id = f"pay-{n}-{secrets.token_hex(4)}"
    result = ApprovalRound(chat_id)
    problems = result.problems
    user = {
        "id": f"u-{chat_id}",
        "role": "user",
        "parts": [{"type": "text", "text": "pay 5 to alice"}],
    }
    response = await client.post(
        workers.a + "/agent/chat", json={"id": chat_id, "messages": [user]}
    )
    if response.status_code != 200:
        problems.append(f"the first message got {response.status_code}: {response.text[:200]}")
        return result
    first = _chunks(response, problems, "the first message")
    if [c["type"] for c in first].count("tool-approval-request") != 1:
        problems.append(f"the first message asked for no approval: {first}")
        return result
    assistant = read_ui_message(first)
    request = next(c for c in first if c["type"] == "tool-approval-request")
    call_id, approval_id = request["toolCallId"], request["approvalId"]
    answer(assistant, "process_payment", approved=True)
    body = {
        "id": chat_id,
        "messages": [user, assistant],
        "trigger": "submit-message",
        "messageId": assistant["id"],
    }
    responses = await asyncio.gather(
        client.post(workers.a + "/agent/chat", json=body),
        client.post(workers.b + "/agent/chat", json=body),
    )

    lines = workers.ledger_lines(chat_id)
    result.runs = len(lines)
    if lines != [f"{chat_id} {call_id}"]:
        problems.append(f"the payment ran {len(lines)} times: {lines}")
    result.statuses = tuple(sorted(r.status_code for r in responses))
    if list(result.statuses) != [200, 409]:
        problems.append(f"statuses {list(result.statuses)}, not [200, 409]")
    for who, response in zip("AB", responses, strict=True):
        if response.status_code == 409:
            reason = _reason(response)
            if reason is None:
                problems.append(f"{who}'s 409 has no JSON reason: {response.text[:200]!r}")
            else:
                result.reasons.append(reason)
        elif response.status_code == 200:
            second = _chunks(response, problems, who)
            errors = [c.get("errorText", "") for c in second if c["type"] == "error"]
            result.error_chunks += errors
            if errors:
                problems.append(f"{who} streamed error chunks: {errors}")
            elif second and normalize_ids(first + second)[len(first) :] != APPROVED_STREAM:
                problems.append(f"{who} streamed {normalize_ids(second)}")
        else:
            problems.append(f"{who} answered {response.status_code}: {response.text[:200]!r}")

    expected_history = [
        user,
        {
            "id": assistant["id"],
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {
                    "type": "tool-process_payment",
                    "toolCallId": call_id,
                    "state": "output-available",
                    "input": PAY_ALICE,
                    "output": SENT_ALICE,
                    "approval": {"id": approval_id, "approved": True},
                },
                {"type": "step-start"},
                {"type": "text", "text": CLOSING_ALICE, "state": "done"},
            ],
        },
    ]
    histories = await asyncio.gather(
        client.get(f"{workers.a}/agent/chat/{chat_id}/messages"),
        client.get(f"{workers.b}/agent/chat/{chat_id}/messages"),
    )
    for who, history in zip("AB", histories, strict=True):
        if history.status_code != 200:
            problems.append(f"{who}'s history: {history.status_code} {history.text[:200]!r}")
            continue
        messages = history.json()
        if messages != expected_history:
            payments = [
                p
                for m in messages
                for p in m.get("parts", [])
                if p.get("type") == "tool-process_payment" and p.get("state") == "output-available"
            ]
            problems.append(
                f"{who}'s history shows the payment {len(payments)} times: "
                f"{json.dumps(messages)[:600]}"
            )
            break  # one history is enough to show it
    return result


async def test_an_approval_sent_to_two_workers_at_once_runs_the_payment_once(
    workers: Workers,
) -> None:
    logged = workers.log_sizes()
    async with _client() as client:
        rounds = []
        for n in range(GEMINI_ROUNDS if workers.name.endswith("@gemini") else APPROVAL_ROUNDS):
            try:
                rounds.append(await _approval_round(client, workers, n))
            except httpx.HTTPError as exc:  # a worker that died or hung: the round failed
                rounds.append(ApprovalRound(f"pay-{n}", problems=[repr(exc)]))
    twice = sum(1 for r in rounds if r.runs > 1)
    never = sum(1 for r in rounds if r.runs == 0)
    failed = [r for r in rounds if r.problems]
    if not failed:
        return
    statuses = Counter(str(list(r.statuses)) for r in rounds if r.statuses)
    reasons = Counter(re.sub(r"'[^']*'", "'…'", x) for r in rounds for x in r.reasons)
    error_chunks = Counter(x for r in rounds for x in r.error_chunks)
    details = "\n".join(
        f"  round {r.chat_id}: " + "; ".join(r.problems) for r in failed[:DETAILED_ROUNDS]
    )
    pytest.fail(
        f"[{workers.name}] the payment ran twice in {twice}/{len(rounds)} rounds"
        f" (never in {never}); {len(failed)}/{len(rounds)} rounds failed.\n"
        f"status pairs: {dict(statuses)}\n409 reasons: {dict(reasons)}\n"
        f"error chunks: {dict(error_chunks)}\n{workers.logged_since(logged)}\n"
        f"first failed rounds:\n{details}",
        pytrace=False,
    )


# --- two first messages of a new chat, one to each worker ------------------------------------


@dataclass
class FirstMessagesRound:
    chat_id: str
    statuses: list[int] = field(default_factory=list)
    error_chunks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def _first_messages_round(
    client: httpx.AsyncClient, workers: Workers, n: int
) -> FirstMessagesRound:
    chat_id = f"new-{n}-{secrets.token_hex(4)}"
    result = FirstMessagesRound(chat_id)
    problems, error_chunks = result.problems, result.error_chunks
    users: list[dict[str, Any]] = [
        {
            "id": f"u-{who}-{chat_id}",
            "role": "user",
            "parts": [{"type": "text", "text": f"hello from {who}"}],
        }
        for who in "AB"
    ]
    responses = await asyncio.gather(
        *(
            client.post(
                base + "/agent/chat",
                json={"id": chat_id, "messages": [user], "trigger": "submit-message"},
            )
            for base, user in zip((workers.a, workers.b), users, strict=True)
        )
    )
    answered: dict[str, tuple[str, str]] = {}  # user message id -> (message id, reply)
    refused: list[str] = []
    for who, user, response in zip("AB", users, responses, strict=True):
        if response.status_code == 409:
            if _reason(response) is None:
                problems.append(f"{who}'s 409 has no JSON reason: {response.text[:200]!r}")
            refused.append(user["id"])
            continue
        if response.status_code != 200:
            problems.append(f"{who} answered {response.status_code}: {response.text[:200]!r}")
            continue
        chunks = _chunks(response, problems, who)
        errors = [c.get("errorText", "") for c in chunks if c["type"] == "error"]
        if errors:
            error_chunks += errors
            problems.append(f"{who} streamed error chunks: {errors}")
            continue
        if not chunks:
            continue
        reply = next((c.get("delta", "") for c in chunks if c["type"] == "text-delta"), "")
        said = f'You said: "hello from {who}". '
        if not reply.startswith(said) or normalize_ids(chunks) != [
            {"type": "start", "messageId": "<msg1>"},
            *text(reply),
            {"type": "finish", "finishReason": "stop"},
        ]:
            problems.append(f"{who} streamed {normalize_ids(chunks)}")
            continue
        answered[user["id"]] = (chunks[0]["messageId"], reply)
    result.statuses = sorted(r.status_code for r in responses)
    if result.statuses not in ([200, 200], [200, 409]):
        problems.append(f"statuses {result.statuses}, not [200, 200] or [200, 409]")

    history = await client.get(f"{workers.a}/agent/chat/{chat_id}/messages")
    if history.status_code != 200:
        problems.append(f"the history: {history.status_code} {history.text[:200]!r}")
        return result
    messages = history.json()
    ids = [m.get("id") for m in messages]
    for user in users:
        if user["id"] in answered:
            message_id, reply = answered[user["id"]]
            at = ids.index(user["id"]) if user["id"] in ids else None
            following = messages[at + 1] if at is not None and at + 1 < len(messages) else None
            expected = {
                "id": message_id,
                "role": "assistant",
                "parts": [{"type": "step-start"}, {"type": "text", "text": reply, "state": "done"}],
            }
            if at is None or messages[at] != user or following != expected:
                problems.append(f"{user['id']} is not followed by its answer in the history")
        elif user["id"] in refused and user["id"] in ids:
            problems.append(f"the refused {user['id']} is in the history")
    if not problems and len(messages) != 2 * len(answered):
        problems.append(f"the history has {len(messages)} messages for {len(answered)} answers")
    if problems:
        problems.append(f"history: {json.dumps(messages)[:600]}")
    return result


@pytest.mark.parametrize("workers", SHARED_LOCKS, indirect=True)
async def test_two_first_messages_of_a_new_chat_on_two_workers(workers: Workers) -> None:
    """Two messages at once need the chat lock itself to be shared: with in-process locks ADK's
    session service refuses the later write (docs/deployment.md), and ``prepare()`` warns."""
    logged = workers.log_sizes()
    async with _client() as client:
        rounds = []
        for n in range(FIRST_MESSAGE_ROUNDS):
            try:
                rounds.append(await _first_messages_round(client, workers, n))
            except httpx.HTTPError as exc:  # a worker that died or hung: the round failed
                rounds.append(FirstMessagesRound(f"new-{n}", problems=[repr(exc)]))
    failed = [r for r in rounds if r.problems]
    if not failed:
        return
    statuses = Counter(str(r.statuses) for r in rounds if r.statuses)
    error_chunks = Counter(x for r in rounds for x in r.error_chunks)
    details = "\n".join(
        f"  round {r.chat_id}: " + "; ".join(r.problems) for r in failed[:DETAILED_ROUNDS]
    )
    pytest.fail(
        f"[{workers.name}] {len(failed)}/{len(rounds)} rounds failed.\n"
        f"status pairs: {dict(statuses)}\nerror chunks: {dict(error_chunks)}\n"
        f"{workers.logged_since(logged)}\nfirst failed rounds:\n{details}",
        pytrace=False,
    )


# --- the same approval over live on one worker and over SSE on the other -----------------------

CROSS_MODE_ROUNDS = 12


async def _live_answer(base: str, chat_id: str, messages: list[Any]) -> list[dict[str, Any]]:
    """The frames a live connection to ``base`` gets for one ``send`` of ``messages``, up to
    its ``end`` or ``error``."""
    url = f"{base.replace('http', 'ws', 1)}/agent/live?chatId={chat_id}"
    frame = {"type": "send", "requestId": "r1", "id": chat_id, "messages": messages}
    frames: list[dict[str, Any]] = []
    async with connect(url) as socket:
        await socket.send(json.dumps(frame | {"trigger": "submit-message", "body": {}}))
        while not frames or frames[-1]["type"] not in ("end", "error", "closed"):
            try:
                frames.append(json.loads(await asyncio.wait_for(socket.recv(), 40)))
            except ConnectionClosed as exc:  # the server ended the session (its frames came)
                frames.append({"type": "closed", "code": exc.rcvd.code if exc.rcvd else None})
    return frames


async def test_an_approval_answered_over_live_and_sse_at_once_runs_the_payment_once(
    workers: Workers,
) -> None:
    """A payment paused over SSE; the user approves it on a live connection to one worker while
    another tab approves it over SSE on the other: it runs once, one answer streams it and the
    other is refused (an ``error`` frame, or ``409``)."""
    problems = []
    async with _client() as client:
        for n in range(CROSS_MODE_ROUNDS):
            chat_id = f"cross-{n}-{secrets.token_hex(4)}"
            user = {
                "id": "u1",
                "role": "user",
                "parts": [{"type": "text", "text": "pay 5 to alice"}],
            }
            first = parse_sse(
                (
                    await client.post(
                        f"{workers.a}/agent/chat", json={"id": chat_id, "messages": [user]}
                    )
                ).content
            )
            assistant = answer(read_ui_message(first), "process_payment", approved=True)
            messages = [user, assistant]
            live, sse = await asyncio.gather(
                _live_answer(workers.a, chat_id, messages),
                client.post(f"{workers.b}/agent/chat", json={"id": chat_id, "messages": messages}),
            )
            live_paid = live[-1]["type"] == "end" and {
                "type": "tool-output-available",
                "toolCallId": assistant["parts"][1]["toolCallId"],
                "output": SENT_ALICE,
            } in [f.get("chunk") for f in live]
            outcome = (live_paid, live[-1]["type"], sse.status_code)
            if len(workers.ledger_lines(chat_id)) != 1 or outcome not in (
                (True, "end", 409),
                (False, "error", 200),
            ):
                ran = len(workers.ledger_lines(chat_id))
                problems.append(f"{chat_id}: ran {ran}, {outcome}, live ended {live[-1]}")
    assert problems == [], (
        f"[{workers.name}] {len(problems)}/{CROSS_MODE_ROUNDS} rounds: {problems[:3]}"
    )


async def test_a_live_approval_left_on_one_worker_is_approved_on_the_other(
    workers: Workers,
) -> None:
    """Asked on a live connection to worker A, which the user leaves; approved on a new live
    connection to worker B: it runs once, and B streams the payment and the model's answer."""
    problems = []
    for n in range(5):
        chat_id = f"moved-{n}-{secrets.token_hex(4)}"
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "pay 5 to alice"}]}
        asked = await _live_answer(workers.a, chat_id, [user])
        chunks = [f["chunk"] for f in asked if f["type"] == "chunk"]
        assistant = answer(read_ui_message(chunks), "process_payment", approved=True)
        paid = await _live_answer(workers.b, chat_id, [user, assistant])
        streamed = normalize_ids([f["chunk"] for f in paid if f["type"] == "chunk"])
        runs = len(workers.ledger_lines(chat_id))
        if (runs, paid[-1]["type"], streamed) != (1, "end", APPROVED_STREAM):
            problems.append(f"{chat_id}: ran {runs}, {paid[-1]}, {streamed}")
    assert problems == [], f"[{workers.name}] {problems[:2]}"
