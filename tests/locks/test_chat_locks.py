"""Per-chat locks on every backend, with real Redis and PostgreSQL servers started by the test
session: two lock objects on one store stand for two workers."""

from __future__ import annotations

import asyncio
import secrets
import signal
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, closing
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from adk_asgi.stores.leases import RENEWALS_PER_TTL, LeasedChatLocks
from adk_asgi.stores.locks import ChatBusy, ChatLocks, InMemoryChatLocks, Lease, LockUnavailable
from adk_asgi.stores.locks_postgres import PostgresChatLocks
from adk_asgi.stores.locks_redis import FENCE_KEEP, RedisChatLocks
from adk_asgi.stores.locks_sqlite import TABLE, SqliteChatLocks

pytestmark = pytest.mark.backing

CHAT = ("app", "user", "chat-1")
OTHER = ("app", "user", "chat-2")

Workers = Callable[..., ChatLocks]


@pytest_asyncio.fixture(params=["redis", "postgres", "sqlite"])
async def workers(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Workers]:
    """A factory of lock objects that share one store, as the workers of a deployment do."""
    if request.param == "postgres":
        database = request.getfixturevalue("postgres").create_database(_fresh("locks"))
    async with AsyncExitStack() as stack:

        def make(**options: Any) -> ChatLocks:
            if request.param == "redis":
                locks: ChatLocks = RedisChatLocks(request.getfixturevalue("redis_url"), **options)
            elif request.param == "postgres":  # a database of its own: no row of another test
                locks = PostgresChatLocks(database.dsn, **options)
            else:  # one file, as the workers of an app on ADK's SQLite sessions share it
                locks = SqliteChatLocks(str(tmp_path / "sessions.db"), **options)
            stack.push_async_callback(locks.aclose)
            return locks

        yield make


async def test_a_chat_is_held_by_one_worker_at_a_time(workers: Workers) -> None:
    first, second = workers(), workers()
    async with first.hold(CHAT, wait=1) as held:
        with pytest.raises(ChatBusy, match=r"still busy with another request after 0\.2 s"):
            async with second.hold(CHAT, wait=0.2):
                pass
        async with second.hold(OTHER, wait=0.2):  # another chat does not wait
            pass
    async with second.hold(CHAT, wait=1) as next_grant:
        assert next_grant.token > held.token  # fencing: every grant's token is larger
    assert (len(first), len(second)) == (0, 0)


async def test_a_waiting_worker_gets_the_chat_as_soon_as_it_is_released(workers: Workers) -> None:
    first, second = workers(), workers()
    order: list[str] = []
    held, release = asyncio.Event(), asyncio.Event()
    attempts = _attempts(second)

    async def hold_until_released() -> None:
        async with first.hold(CHAT, wait=1):
            order.append("first holds")
            held.set()
            await release.wait()
            order.append("first releases")

    holder = asyncio.create_task(hold_until_released())
    await asyncio.wait_for(held.wait(), 5)
    waiter = asyncio.create_task(_hold_once(second, order, "second holds"))
    await _until(lambda: len(attempts) >= 3)  # the waiter tried, and tried again: not in
    assert attempts[:3] == [False] * 3
    assert order == ["first holds"]
    release.set()
    await asyncio.wait_for(asyncio.gather(holder, waiter), 5)
    assert order == ["first holds", "first releases", "second holds"]


async def _hold_once(locks: ChatLocks, order: list[str], label: str) -> Lease:
    async with locks.hold(CHAT, wait=5) as lease:
        order.append(label)
        return lease


async def _until(condition: Callable[[], bool], deadline: float = 10) -> None:
    """Wait for ``condition`` on a spy's counts (checked every 2 ms); fail after ``deadline``
    s."""
    try:
        async with asyncio.timeout(deadline):
            while not condition():  # noqa: ASYNC110 (a bounded poll on a spy's count)
                await asyncio.sleep(0.002)
    except TimeoutError:
        raise AssertionError(f"not within {deadline} s") from None


def _attempts(locks: ChatLocks) -> list[bool]:
    """A spy on ``locks``' attempts to take a chat, one round trip to its store each: whether
    each got the chat, in order."""
    outcomes: list[bool] = []
    if isinstance(locks, RedisChatLocks):
        take = locks._take

        def counted_take(**kwargs: Any) -> Awaitable[Any]:
            async def counted() -> Any:
                token = await take(**kwargs)
                outcomes.append(bool(token))
                return token

            return counted()

        locks._take = counted_take
    else:
        assert isinstance(locks, LeasedChatLocks)
        try_take = locks._try_take

        async def counted_try_take(chat: str, patience: float) -> int:
            token = await try_take(chat, patience)
            outcomes.append(bool(token))
            return token

        locks._try_take = counted_try_take  # type: ignore[method-assign]
    return outcomes


def _renewals(locks: ChatLocks) -> list[int]:
    """A spy on ``locks``' lease renewals: how many leases each renewal kept, in order."""
    kept: list[int] = []
    if isinstance(locks, RedisChatLocks):
        renew = locks._renew

        def counted_renew(**kwargs: Any) -> Awaitable[Any]:
            async def counted() -> Any:
                renewed = await renew(**kwargs)
                kept.append(int(bool(renewed)))
                return renewed

            return counted()

        locks._renew = counted_renew
    else:
        assert isinstance(locks, LeasedChatLocks)
        renew_rows = locks._renew

        async def counted_renew_rows(chats: list[str]) -> Mapping[str, int]:
            rows = await renew_rows(chats)
            kept.append(len(rows))
            return rows

        locks._renew = counted_renew_rows  # type: ignore[method-assign]
    return kept


async def test_only_one_of_many_racing_workers_holds_the_chat_at_once(workers: Workers) -> None:
    racers = [workers(poll=0.005) for _ in range(4)]
    attempts = [_attempts(r) for r in racers]
    inside = 0
    most = 0
    tokens: list[int] = []
    racing = len(racers)

    def turned_away() -> int:
        return sum(a.count(False) for a in attempts)

    async def run(locks: ChatLocks) -> None:
        nonlocal inside, most, racing
        for _ in range(5):
            async with locks.hold(CHAT, wait=10) as lease:
                inside += 1
                most = max(most, inside)
                tokens.append(lease.token)
                before = turned_away()
                # held until another racer tried to get in (unless none is left racing)
                await _until(lambda: turned_away() > before or racing == 1)  # noqa: B023
                inside -= 1
        racing -= 1

    await asyncio.wait_for(asyncio.gather(*(run(r) for r in racers)), 30)
    assert most == 1
    assert len(tokens) == 20 and tokens == sorted(tokens) and len(set(tokens)) == 20


async def test_in_memory_locks_hold_in_one_process() -> None:
    locks = InMemoryChatLocks()
    async with locks.hold(CHAT, wait=1) as held:
        with pytest.raises(ChatBusy):
            async with locks.hold(CHAT, wait=0.05):
                pass
        assert len(locks) == 1
    async with locks.hold(CHAT, wait=1) as again:
        # the entry was dropped once free: its tokens start again (one process loses no lease)
        assert (held.token, again.token) == (1, 1)
    assert len(locks) == 0


# --- Redis: leases --------------------------------------------------------------------------


async def test_a_redis_lease_is_renewed_while_its_run_goes_on(redis_url: str) -> None:
    first = RedisChatLocks(redis_url, ttl=0.3)
    second = RedisChatLocks(redis_url, ttl=0.3)
    renewals = _renewals(first)
    try:
        async with first.hold(CHAT, wait=1) as lease:
            # renewed every ttl / 3: ten renewals are more than three ttls, which the lease
            # outlived only through them
            await _until(lambda: len(renewals) >= 10)
            assert renewals[:10] == [1] * 10
            with pytest.raises(ChatBusy):
                async with second.hold(CHAT, wait=0.1):
                    pass
        assert not lease.lost
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_dead_workers_redis_lock_expires_after_its_ttl(redis_url: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.from_url(redis_url)
    locks = RedisChatLocks(client, ttl=5)
    try:
        name = locks.prefix + "\x1f".join(CHAT)
        await client.set(name, "999", px=300)  # a worker died holding it, 300 ms left
        loop = asyncio.get_running_loop()
        start = loop.time()
        async with locks.hold(CHAT, wait=5):
            waited = loop.time() - start
        assert waited >= 0.2  # it waited for the expiry, not less
    finally:
        await client.aclose()


async def test_a_redis_release_never_deletes_a_successors_lock(redis_url: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.from_url(redis_url)
    first = RedisChatLocks(client, ttl=60)
    second = RedisChatLocks(client, ttl=60)
    name = first.prefix + "\x1f".join(CHAT)
    try:
        async with first.hold(CHAT, wait=1):
            await client.delete(name)  # its lease ran out (a pause longer than the ttl)
            successor = second.hold(CHAT, wait=1)
            lease = await successor.__aenter__()
        # the first holder's release came after the successor took the chat
        assert int(await client.get(name)) == lease.token
        await successor.__aexit__(None, None, None)
        assert await client.get(name) is None
    finally:
        await client.aclose()


async def test_a_redis_fencing_counter_expires_a_week_after_the_chats_last_grant(
    redis_url: str,
) -> None:
    """A fencing counter per chat ever served would stay in Redis forever: it expires a week
    after the chat's last grant, and the tokens of a chat in use still grow."""
    import redis.asyncio as aioredis

    client = aioredis.from_url(redis_url)
    locks = RedisChatLocks(client, prefix=f"fence-test:{secrets.token_hex(4)}:")
    counter = locks.prefix + "\x1f".join(CHAT) + ":fence"
    try:
        tokens = []
        for _ in range(3):
            async with locks.hold(CHAT, wait=1) as lease:
                tokens.append(lease.token)
        remaining = await client.pttl(counter)
    finally:
        await client.aclose()
    assert tokens == [1, 2, 3]
    assert FENCE_KEEP * 1000 - 60_000 < remaining <= FENCE_KEEP * 1000


async def test_a_busy_wait_whose_time_runs_out_mid_command_answers_busy(redis_url: str) -> None:
    """The wait for a busy chat polls Redis until its time runs out. The timeout cancels the
    poll, often in the middle of a command: redis-py swallowed some of those cancellations
    (Python 3.11's ``wait_for``), and the wait then polled until the chat was free instead of
    answering busy. Raced 200 times, cancelled at every moment of a poll."""
    holder = RedisChatLocks(redis_url)
    waiter = RedisChatLocks(redis_url, poll=0.0005)
    outcomes: list[str] = []

    async def wait_once(wait: float) -> None:
        try:
            async with waiter.hold(CHAT, wait=wait):
                outcomes.append("held")
        except ChatBusy:
            outcomes.append("busy")

    try:
        async with holder.hold(CHAT, wait=1):
            for i in range(200):
                attempt = asyncio.create_task(wait_once(0.001 + (i % 20) * 0.0005))
                done, _ = await asyncio.wait([attempt], timeout=2)
                assert done, f"attempt {i} still polls a chat it cannot get"
        assert outcomes == ["busy"] * 200
    finally:
        await holder.aclose()
        await waiter.aclose()


async def test_a_lease_released_while_its_renewal_talks_to_redis_is_released(
    redis_url: str,
) -> None:
    """Release cancels the lease's renewal task and waits for it: a cancellation redis-py
    swallowed mid-renewal left the task renewing forever, and the request that held the chat
    never ended. Raced 200 times against a renewal every 2 ms."""
    locks = RedisChatLocks(redis_url, ttl=0.006)
    try:
        for i in range(200):

            async def hold_briefly(hold_for: float = (i % 10) * 0.001) -> None:
                async with locks.hold(CHAT, wait=1):
                    # the subject: releases spread over a renewal's round trip (0-9 ms, against
                    # one every 2 ms), to land at every moment of it; no event marks a moment
                    await asyncio.sleep(hold_for)

            attempt = asyncio.create_task(hold_briefly())
            done, _ = await asyncio.wait([attempt], timeout=2)
            assert done, f"hold {i} never released its chat"
    finally:
        await locks.aclose()


# --- PostgreSQL and SQLite: lease rows; nothing pinned while held ---------------------------

_HOLDER = """
import asyncio, sys
from adk_asgi.stores.locks_postgres import PostgresChatLocks
from adk_asgi.stores.locks_sqlite import SqliteChatLocks

async def main() -> None:
    kind, where, ttl = sys.argv[1], sys.argv[2], float(sys.argv[3])
    make = PostgresChatLocks if kind == "postgres" else SqliteChatLocks
    locks = make(where, ttl=ttl)
    async with locks.hold(("app", "user", "chat-1"), wait=5) as lease:
        print("held", flush=True)
        await asyncio.sleep(float(sys.argv[4]))  # a run that goes on: the worker is killed or
        # stopped meanwhile, or its lease outlives several ttls (the subject)
    print("lost" if lease.lost else "kept", flush=True)
    await locks.aclose()

asyncio.run(main())
"""


def _fresh(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(4)}"


@pytest.fixture(params=["postgres", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """``(kind, where)``: a PostgreSQL database or a SQLite file, shared by the processes."""
    if request.param == "postgres":
        return "postgres", request.getfixturevalue("postgres").create_database(_fresh("held")).dsn
    return "sqlite", str(tmp_path / "sessions.db")


def _locks(store: tuple[str, str], **options: Any) -> ChatLocks:
    kind, where = store
    return (
        PostgresChatLocks(where, **options)
        if kind == "postgres"
        else SqliteChatLocks(where, **options)
    )


async def _holder(
    store: tuple[str, str], ttl: float, seconds: float = 60
) -> asyncio.subprocess.Process:
    """Another worker process holding CHAT for ``seconds``, once it said so."""
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _HOLDER,
        *store,
        str(ttl),
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdout is not None
    assert await asyncio.wait_for(holder.stdout.readline(), 20) == b"held\n"
    return holder


async def _time_to_take(locks: ChatLocks, key: tuple[str, str, str] = CHAT) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with locks.hold(key, wait=10):
        return loop.time() - start


async def test_a_killed_workers_chat_is_free_at_once_on_postgres_within_the_ttl_on_sqlite(
    store: tuple[str, str],
) -> None:
    """kill -9 of a worker holding a chat: PostgreSQL sees its connection go and frees the
    chat at once, though the lease (60 s) is far from over; SQLite, on one host, after the
    lease's ttl (1 s). The old SQLite lease kept it for 30 s, busy_timeout's length."""
    kind, _ = store
    ttl = 60.0 if kind == "postgres" else 1.0
    holder = await _holder(store, ttl)
    locks = _locks(store)
    try:
        with pytest.raises(ChatBusy):  # alive: held
            async with locks.hold(CHAT, wait=0.2):
                pass
        holder.kill()
        await holder.wait()
        waited = await _time_to_take(locks)
        assert waited < (1.0 if kind == "postgres" else ttl + 1.5)
    finally:
        await locks.aclose()


async def test_a_stalled_workers_chat_is_free_within_the_ttl_and_it_learns_its_lease_is_lost(
    store: tuple[str, str],
) -> None:
    """SIGSTOP of a worker holding a chat (its connections stay open; PostgreSQL's advisory
    lock used to keep the chat for ever): the chat is free once the lease runs out, and the
    worker, woken, finds its lease lost and does not free its successor's chat."""
    holder = await _holder(store, ttl=1.0, seconds=3)
    locks, third = _locks(store), _locks(store)
    try:
        holder.send_signal(signal.SIGSTOP)
        waited = await _time_to_take(locks)
        assert 0.3 < waited < 2.5  # about the lease's ttl (1 s) after its last renewal
        async with locks.hold(CHAT, wait=1):
            holder.send_signal(signal.SIGCONT)
            assert holder.stdout is not None
            assert await asyncio.wait_for(holder.stdout.readline(), 20) == b"lost\n"
            with pytest.raises(ChatBusy):  # its release left the successor's lease alone
                async with third.hold(CHAT, wait=0.2):
                    pass
    finally:
        holder.send_signal(signal.SIGCONT)
        await holder.wait()
        await locks.aclose()
        await third.aclose()


async def test_held_chats_pin_no_connection_and_no_thread(store: tuple[str, str]) -> None:
    """Sixty chats held at once by one worker (idle live sockets, say) use no more
    connections (PostgreSQL) or threads (SQLite) than one does, and other chats are taken at
    once meanwhile: the number of chats held never limits other users."""
    import asyncpg

    kind, where = store
    locks = _locks(store, max_connections=2) if kind == "postgres" else _locks(store)
    admin = await asyncpg.connect(where) if kind == "postgres" else None

    async def resources() -> int:
        if admin is None:
            return threading.active_count()
        return int(
            await admin.fetchval(
                "select count(*) from pg_stat_activity where datname = current_database()"
            )
        )

    try:
        async with AsyncExitStack() as held:
            await held.enter_async_context(locks.hold(("app", "user", "chat-0"), wait=1))
            one = await resources()
            for n in range(1, 60):
                await held.enter_async_context(locks.hold(("app", "user", f"chat-{n}"), wait=1))
            assert await resources() == one
            other = _locks(store)
            try:
                assert await _time_to_take(other, ("app", "another user", "chat-0")) < 0.5
            finally:
                await other.aclose()
    finally:
        await locks.aclose()
        if admin is not None:
            await admin.close()


async def test_one_renewal_keeps_every_lease_of_a_worker(store: tuple[str, str]) -> None:
    """Leases outlive several ttls while held, however many a worker holds: one task renews
    them all, and stops once none is held."""
    locks, other = _locks(store, ttl=0.3), _locks(store, ttl=0.3)
    renewals = _renewals(locks)
    try:
        async with locks.hold(CHAT, wait=1) as first, locks.hold(OTHER, wait=1) as second:
            # more than three ttls (renewed every ttl / RENEWALS_PER_TTL), both leases kept by
            # each renewal, in one statement. (A renewal may come between the two takings, or
            # be under way as the second is taken: it keeps the first alone. Counted from the
            # first renewal that starts with both held.)
            start = len(renewals) + 1
            count = 3 * RENEWALS_PER_TTL + 1
            await _until(lambda: len(renewals) >= start + count)
            assert renewals[start : start + count] == [2] * count
            for chat in (CHAT, OTHER):
                with pytest.raises(ChatBusy):
                    async with other.hold(chat, wait=0.1):
                        pass
        assert not first.lost and not second.lost
        renewals = [t for t in asyncio.all_tasks() if t.get_name() == "adk_asgi lock renewal"]
        assert renewals == []
        async with other.hold(CHAT, wait=0.1):  # released: at once
            pass
    finally:
        await locks.aclose()
        await other.aclose()


# --- SQLite: leases in the session file -----------------------------------------------------


async def test_a_sqlite_file_with_the_earlier_lease_table_gets_its_holder_column(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "sessions.db")
    with closing(sqlite3.connect(path)) as db, db:  # the table as releases before made it
        db.execute(
            f"CREATE TABLE {TABLE} (chat TEXT PRIMARY KEY, token INTEGER NOT NULL, "
            "expires REAL NOT NULL)"
        )
        db.execute(f"INSERT INTO {TABLE} VALUES ('app\x1fuser\x1fchat-2', 7, 0)")  # expired
    locks = SqliteChatLocks(path)
    async with locks.hold(CHAT, wait=1) as free, locks.hold(OTHER, wait=1) as expired:
        assert (free.token, expired.token) == (1, 2)
    assert len(locks) == 0


async def test_a_sqlite_release_never_deletes_a_successors_lease(tmp_path: Path) -> None:
    path = str(tmp_path / "sessions.db")
    first, second, third = (SqliteChatLocks(path, ttl=60) for _ in range(3))
    first_hold = first.hold(CHAT, wait=1)
    stalled = await first_hold.__aenter__()
    with closing(sqlite3.connect(path)) as db, db:  # first stalls past its lease
        db.execute(f"UPDATE {TABLE} SET expires = 0")
    async with second.hold(CHAT, wait=1) as successor:
        assert successor.token > stalled.token
        await first_hold.__aexit__(None, None, None)  # the stalled run ends, releases
        with pytest.raises(ChatBusy):  # the successor's lease is still there
            async with third.hold(CHAT, wait=0.1):
                pass
    async with third.hold(CHAT, wait=0.1):
        pass


async def test_a_sqlite_file_locked_past_the_wait_is_lock_unavailable_not_a_hang(
    tmp_path: Path,
) -> None:
    """Another process's write keeps the file locked: the lease cannot even be read. The wait
    bounds that too (SQLite's busy timeout would be 30 s), and the caller learns it is the
    file, not the chat, that is busy."""
    path = str(tmp_path / "sessions.db")
    locks = SqliteChatLocks(path)
    async with locks.hold(OTHER, wait=1):  # the tables exist
        pass
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(LockUnavailable, match=r"stayed locked for 0\.3 s$"):
            async with locks.hold(CHAT, wait=0.3):
                pass
        assert loop.time() - start < 1.5
        other.execute("ROLLBACK")
    async with locks.hold(CHAT, wait=1):
        pass
    assert len(locks) == 0


async def test_a_hold_cancelled_as_it_lets_go_still_releases_the_chat(workers: Workers) -> None:
    """A cancellation that lands as the hold ends (the first await of its clean-up, waiting
    for the renewal task) used to skip the release over Redis and SQLite: the chat stayed
    taken for the lease's ttl. Seen once as a stray lease in
    test_a_sqlite_hold_cancelled_as_it_takes_the_chat_leaves_no_lease_behind, under load."""
    locks = workers()

    async def holder() -> None:
        async with locks.hold(CHAT, wait=1):
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # delivered at the clean-up's first await

    holding = asyncio.create_task(holder())
    with pytest.raises(asyncio.CancelledError):
        await holding
    async with workers().hold(CHAT, wait=0.5) as lease:
        assert not lease.lost


async def test_a_sqlite_hold_cancelled_as_it_takes_the_chat_leaves_no_lease_behind(
    tmp_path: Path,
) -> None:
    """A request that goes away while it takes its chat (its task cancelled while it waits,
    or mid-transaction, when the lease may already be written) leaves nothing: the next one
    gets the chat at once, not after a stray lease's ttl (60 s)."""
    path = str(tmp_path / "sessions.db")
    taker, next_one = SqliteChatLocks(path, ttl=60), SqliteChatLocks(path, ttl=60)
    async with taker.hold(OTHER, wait=1):  # the tables exist
        pass
    outcomes = []
    for step in range(40):
        taking = asyncio.create_task(_hold_once(taker, [], "taker"))
        # the subject: the cancellation lands at every moment of the taking (0-20 ms, one
        # step each), or after it; no event marks those moments from outside
        await asyncio.sleep(step * 0.0005)
        taking.cancel()
        try:
            await taking
            outcomes.append("held")
        except asyncio.CancelledError:
            outcomes.append("cancelled")
        async with next_one.hold(CHAT, wait=0.5):
            pass
    assert "cancelled" in outcomes
    assert (len(taker), len(next_one)) == (0, 0)
