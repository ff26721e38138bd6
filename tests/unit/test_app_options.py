"""``AdkApp``'s option groups: the common case is one line, each group is defaulted as a whole,
and a wrong value fails where the group is built, with the option's name."""

from __future__ import annotations

from typing import Any

import pytest

from adk_asgi import (
    AdkApp,
    InMemoryStreamStore,
    Limits,
    Messages,
    Security,
    Stores,
    Streaming,
    UserBounds,
)
from tests.support import counter, scripted_agent


def test_an_agent_alone_is_a_whole_app_with_every_default() -> None:
    app = AdkApp(scripted_agent([]))
    limits = app.services.limits
    assert limits == Limits()
    assert (limits.max_body_size, limits.frame_size) == (4 * 1024 * 1024, 4 * 1024 * 1024)
    assert (limits.busy_timeout, limits.approval_timeout) == (30.0, 300.0)
    assert app.services.streaming == Streaming()
    assert app.services.streams is None
    assert app.services.user_load.bounds == UserBounds()


def test_each_group_reaches_the_app() -> None:
    store = InMemoryStreamStore()
    ids = counter("m")
    app = AdkApp(
        scripted_agent([]),
        limits=Limits(max_body_size=1000, busy_timeout=2.5),
        streaming=Streaming(sse_write_interval=0, sse_keep_alive=None),
        messages=Messages(message_id_factory=ids, send_usage=True),
        stores=Stores(streams=store),
        security=Security(allowed_origins=["https://app.example"]),
    )
    services = app.services
    assert (services.limits.max_body_size, services.limits.frame_size) == (1000, 1000)
    assert services.limits.busy_timeout == 2.5
    assert (services.streaming.sse_write_interval, services.streaming.sse_keep_alive) == (0, None)
    assert (services.new_message_id(), services.converting.send_usage) == ("m1", True)
    assert services.streams is store


def test_the_frame_limit_is_the_body_limit_unless_given() -> None:
    assert Limits(max_body_size=10).frame_size == 10
    assert Limits(max_body_size=10, max_frame_size=20).frame_size == 20


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Limits(max_body_size=0), "limits.max_body_size must be > 0 bytes: 0"),
        (lambda: Limits(max_frame_size=-1), "limits.max_frame_size must be > 0 bytes: -1"),
        (lambda: Limits(busy_timeout=-1), "limits.busy_timeout must be >= 0 seconds: -1"),
        (lambda: Limits(approval_timeout=float("nan")), "limits.approval_timeout must be >= 0"),
        (lambda: Streaming(sse_write_interval=-0.1), "streaming.sse_write_interval must be >= 0"),
        (lambda: Streaming(live_write_interval=-1), "streaming.live_write_interval must be >= 0"),
        (lambda: Streaming(sse_keep_alive=0), "streaming.sse_keep_alive must be > 0 seconds or"),
    ],
)
def test_a_wrong_value_fails_where_its_group_is_built(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        build()


@pytest.mark.parametrize("name", ["limits", "streaming", "messages", "stores", "security"])
def test_a_group_given_as_a_dict_is_refused_with_its_name(name: str) -> None:
    cls = name.capitalize()
    with pytest.raises(TypeError, match=rf"^{name} must be a {cls}\(\.\.\.\): \{{\}}$"):
        AdkApp(scripted_agent([]), **{name: {}})


def test_an_option_of_a_group_is_no_keyword_of_the_app() -> None:
    with pytest.raises(TypeError, match="busy_timeout"):
        AdkApp(scripted_agent([]), busy_timeout=3)  # type: ignore[call-arg]


def test_the_groups_are_frozen() -> None:
    limits = Limits()
    with pytest.raises(AttributeError):
        limits.busy_timeout = 1  # type: ignore[misc]
