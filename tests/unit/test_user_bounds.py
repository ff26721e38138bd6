"""The per-user counts alone (adk_asgi/serving/user_bounds.py): bounds, release, the log."""

from __future__ import annotations

import asyncio
import logging

import pytest

from adk_asgi.errors import ClientError
from adk_asgi.serving.user_bounds import LOG_EVERY, PAUSED, OverBound, UserBounds, UserLoad


def test_a_count_is_released_when_its_block_ends_even_by_an_exception() -> None:
    load = UserLoad(UserBounds(requests=1))
    with pytest.raises(RuntimeError), load.request("u"):
        assert load.held("u") == (0, 1)
        raise RuntimeError
    with load.request("u"), pytest.raises(OverBound), load.request("u"):  # one at a time
        pass
    assert load.held("u") == (0, 0)
    assert load._requests == {}  # a user with nothing open is not kept


def test_no_bound_is_no_bound() -> None:
    load = UserLoad(UserBounds(live_sockets=None, chat_files=None))
    with load.live_socket("u"), load.live_socket("u"), load.live_socket("u"):
        assert load.held("u") == (3, 0)
    load.check_chat_files("u", 10**12, 10**12)


@pytest.mark.parametrize("value", [0, -1])
def test_a_bound_must_be_positive(value: int) -> None:
    with pytest.raises(ValueError, match=r"user_bounds\.requests must be > 0 or None"):
        UserBounds(requests=value)


def test_a_chats_files_are_bounded_in_all() -> None:
    load = UserLoad(UserBounds(chat_files=3 * 1024 * 1024))
    load.check_chat_files("u", 2 * 1024 * 1024, 1024 * 1024)  # exactly the bound
    load.check_chat_files("u", 5 * 1024 * 1024, 0)  # a message without files always passes
    with pytest.raises(ClientError) as refused:
        load.check_chat_files("u", 2 * 1024 * 1024, 1024 * 1024 + 1)
    assert (refused.value.status_hint, refused.value.reason) == (
        413,
        "this chat holds 2.0 MiB of files and a chat may hold 3.0 MiB: send fewer or smaller "
        "files, or start a new chat",
    )


def test_refusals_are_logged_once_a_minute_per_user_and_bound_with_their_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    load = UserLoad(UserBounds(live_sockets=1), clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="adk_asgi"), load.live_socket("u"):
        for at in (0.0, 1.0, 2.0, LOG_EVERY + 1, LOG_EVERY + 2):
            now[0] = at
            with pytest.raises(OverBound), load.live_socket("u"):
                pass
    assert [r.getMessage() for r in caplog.records] == [
        "adk_asgi: refused a user over a bound (1 live sockets at once): user 'u'; "
        f"{n} other refusals since the last line"
        for n in (0, 2)
    ]


async def test_a_refusal_waits_its_pause_unless_too_many_wait_already() -> None:
    load = UserLoad(UserBounds(pause=0.05))
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.gather(*(load.pause("u") for _ in range(3)))
    assert loop.time() - start >= 0.05  # together, not one after another
    load._pausing = PAUSED  # the worker holds as many refusals as it keeps waiting
    start = loop.time()
    await load.pause("u")
    assert loop.time() - start < 0.05
    assert UserBounds().pause == 1.0
    await UserLoad(UserBounds(pause=0)).pause("u")  # at once


def test_a_user_refused_over_and_over_waits_longer_up_to_four_pauses() -> None:
    now = [0.0]
    load = UserLoad(UserBounds(requests=1), clock=lambda: now[0])
    waits = []
    with load.request("u"):
        for _ in range(40):
            with pytest.raises(OverBound), load.request("u"):
                pass
            waits.append(load.pause_for("u"))
        assert load.pause_for("someone else") == 1.0
        now[0] = LOG_EVERY + 1  # a minute on: the next refusal starts a new count
        with pytest.raises(OverBound), load.request("u"):
            pass
    assert waits == [1.0] * 8 + [2.0] * 8 + [3.0] * 8 + [4.0] * 16
    assert load.pause_for("u") == 1.0


def test_a_pause_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match=r"user_bounds\.pause must be >= 0 seconds"):
        UserBounds(pause=-1)
