"""Coalesced SSE writes: same bytes, fewer writes, no added latency at either end, and the
disconnect / failure semantics of one write per chunk.

The pump is driven with bodies the test controls (a queue) and intervals far apart from the
test's own waits (an hour, so "held back" cannot be mistaken for "slow"); the real agent runs
check whole streams byte for byte against the uncoalesced output.

The pump's tests and the disconnect tests run on a virtual clock (``VirtualClockLoop`` in
``tests/support.py``): time passes only when no task can run, so "nothing was written within
50 ms" means that every task had its chance and every timer due within 50 ms fired, on a loaded
machine as on an idle one. The byte-for-byte tests keep the real clock: there the run's own
work takes time, which is what lets a wrong interval show.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from typing import Any

import httpx
import pytest
from google.adk.events.event import Event

from adk_asgi import AdkApp, Messages, Streaming
from adk_asgi.serving import load
from adk_asgi.serving.options import DEFAULT_WRITE_INTERVAL
from adk_asgi.sse.response import SSEResponse
from adk_asgi.testing import Call, Fail, Text
from adk_asgi.wire.encoding import SSE_KEEP_ALIVE
from tests.support import counter, on_virtual_clock, parse_sse, scripted_agent, user_body

HOUR = 3600.0
"""An interval no test waits out: a chunk held for it is visibly held."""

PATIENCE = 5.0
"""How long (virtual time) a test waits for something that should happen at once: it fails,
not hangs."""


@pytest.fixture(autouse=True)
def no_context_detach_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """OpenTelemetry logs this error (it is not a warning) when a context is detached in another
    task than the one that attached it. ADK 2.13 re-attaches its scopes around each step, so
    even a cross-task drive stays quiet there; ``test_the_body_runs_in_the_response_task``
    checks the single task itself."""
    caplog.set_level(logging.ERROR, logger="opentelemetry.context")
    yield
    assert "Failed to detach context" not in caplog.text


def http_scope() -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/chat",
        "raw_path": b"/chat",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"host", b"testserver")],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }


class Wire:
    """One ASGI HTTP exchange: feeds the request body, records what is sent and when, and
    disconnects when told to (``gone``). Nothing may be sent once the app has received the
    disconnect (before that, it cannot know)."""

    def __init__(self, request: bytes = b"") -> None:
        self.incoming = [{"type": "http.request", "body": request, "more_body": False}]
        self.gone = asyncio.Event()
        self.told = False
        self.messages: list[dict[str, Any]] = []
        self.times: list[float] = []
        self._changed = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        if self.incoming:
            return self.incoming.pop(0)
        await self.gone.wait()
        self.told = True
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if self.told:
            raise AssertionError(f"sent after the client left: {message}")
        self.messages.append(message)
        self.times.append(asyncio.get_running_loop().time())
        self._changed.set()

    @property
    def writes(self) -> list[bytes]:
        """The body writes (the response start excluded)."""
        return [m["body"] for m in self.messages if m["type"] == "http.response.body"]

    @property
    def body(self) -> bytes:
        return b"".join(self.writes)

    @property
    def ended(self) -> bool:
        return any(m.get("more_body") is False for m in self.messages)

    async def until_writes(self, n: int) -> None:
        async def wait() -> None:
            while len(self.writes) < n:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(wait(), PATIENCE)


class Feed:
    """A response body the test feeds chunk by chunk; ``None`` ends it."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.pulled = 0
        self.closed = False
        self.tasks: set[asyncio.Task[Any] | None] = set()
        self._asking = False  # the body waits for the test's next chunk
        self._changed = asyncio.Event()

    def put(self, *items: bytes | None) -> None:
        for item in items:
            self.queue.put_nowait(item)

    async def body(self) -> AsyncGenerator[bytes, None]:
        try:
            self.tasks.add(asyncio.current_task())
            while (item := await self._next()) is not None:
                self.tasks.add(asyncio.current_task())
                self.pulled += 1
                yield item
                self.tasks.add(asyncio.current_task())
        finally:
            self.tasks.add(asyncio.current_task())
            self.closed = True

    async def _next(self) -> bytes | None:
        self._asking = True
        self._changed.set()
        try:
            return await self.queue.get()
        finally:
            self._asking = False

    async def until_drained(self) -> None:
        """Until the pump has taken every chunk put so far and asks for the next one: each
        chunk it took has been through the writer (written, or held)."""

        async def wait() -> None:
            while not (self._asking and self.queue.empty()):
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(wait(), PATIENCE)


def respond(
    feed: Feed, wire: Wire, abort: asyncio.Event | None = None, **options: Any
) -> asyncio.Task[None]:
    response = SSEResponse(feed.body(), abort=abort or asyncio.Event(), **options)
    return asyncio.create_task(response(http_scope(), wire.receive, wire.send))


async def spin(seconds: float = 0.05) -> None:
    """Give a wrong implementation every chance to write what it should hold.

    A negative check has no event to wait for: what it waits out is a write that should not
    happen. On the virtual clock this sleep is not a guess: it returns once no task can go on
    and every timer due within ``seconds`` has fired, so a wrong implementation that writes at
    once, or after a shorter interval than the one it was given, has written by then. (Waiting
    for the body to be drained and then one loop turn would catch only the first kind.)"""
    await asyncio.sleep(seconds)


# --- the pump, driven step by step -----------------------------------------------------------


@on_virtual_clock
async def test_the_first_delta_goes_out_at_once_then_deltas_wait_out_the_interval() -> None:
    feed, wire = Feed(), Wire()
    task = respond(feed, wire, write_interval=HOUR)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await wire.until_writes(2)  # the start chunk's write did not start the interval
    feed.put(b"d2;", b"d3;")
    await spin()
    assert wire.writes == [b"start;", b"d1;"]  # d2, d3: within the interval of d1's write
    feed.put(b"end;", None)
    await asyncio.wait_for(task, PATIENCE)  # the end is not held for the rest of the hour
    assert wire.messages[-1] == {
        "type": "http.response.body",
        "body": b"d2;d3;end;",
        "more_body": False,
    }
    assert len(wire.writes) == 3
    assert feed.closed


@on_virtual_clock
async def test_a_due_write_happens_before_the_run_goes_on() -> None:
    """``start`` and the first delta are written by the task that produced them before it
    resumes the run: not even a task switch (the run can go on for a whole ADK step before it
    yields to the loop) stands between a due chunk and its write."""
    wire = Wire()
    seen: list[int] = []

    async def body() -> AsyncGenerator[bytes, None]:
        yield b"start;"
        seen.append(len(wire.writes))
        yield b"d1;"
        seen.append(len(wire.writes))
        yield b"d2;"  # within the interval of d1's write: held
        seen.append(len(wire.writes))

    response = SSEResponse(body(), abort=asyncio.Event(), write_interval=HOUR)
    await asyncio.wait_for(response(http_scope(), wire.receive, wire.send), PATIENCE)
    assert seen == [1, 2, 2]
    assert wire.writes == [b"start;", b"d1;", b"d2;"]
    assert wire.ended


@on_virtual_clock
async def test_held_chunks_go_out_when_the_interval_is_over_without_more_input() -> None:
    interval = 0.05
    feed, wire = Feed(), Wire()
    task = respond(feed, wire, write_interval=interval)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await wire.until_writes(2)
    feed.put(b"d2;", b"d3;")
    await wire.until_writes(3)  # the body is still open: the interval ran out
    assert wire.writes == [b"start;", b"d1;", b"d2;d3;"]
    assert not wire.ended
    # times can only make the gap longer than the interval the writer waited
    assert wire.times[3] - wire.times[2] >= interval - 0.001
    feed.put(None)
    await asyncio.wait_for(task, PATIENCE)
    assert wire.messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


@on_virtual_clock
async def test_the_first_chunk_after_a_pause_goes_out_at_once_though_the_last_write_is_recent() -> (
    None
):
    """A pause longer than the interval (counted from the last chunk, not the last write) ends
    the flow: the next chunk is the first words after it and is written at once, even 30 ms
    after the write of held chunks; the ones right after it merge again."""
    interval = 0.05
    feed, wire = Feed(), Wire()
    task = respond(feed, wire, write_interval=interval)
    feed.put(b"start;", b"d1;", b"d2;")
    await wire.until_writes(3)  # d2: held, written when d1's interval ends
    await asyncio.sleep(0.03)  # 0.08 s after d2 came, 0.03 s after it was written
    feed.put(b"d3;")
    await feed.until_drained()
    assert wire.writes == [b"start;", b"d1;", b"d2;", b"d3;"]  # at once, not in 0.02 s
    feed.put(b"d4;", b"d5;")
    await spin(interval - 0.001)
    assert len(wire.writes) == 4  # d4, d5: within the interval of d3's write
    await wire.until_writes(5)
    assert wire.writes[4] == b"d4;d5;"
    assert wire.times[5] - wire.times[4] >= interval - 0.001
    feed.put(None)
    await asyncio.wait_for(task, PATIENCE)
    assert wire.writes == [b"start;", b"d1;", b"d2;", b"d3;", b"d4;d5;", b""]


@pytest.mark.parametrize("end", ["normal", "disconnect"])
@on_virtual_clock
async def test_the_body_runs_in_the_response_task(end: str) -> None:
    """The body (``run_async`` inside) is started, iterated and closed by the task that runs
    the response, never by the writer."""
    feed, wire, abort = Feed(), Wire(), asyncio.Event()
    task = respond(feed, wire, abort, write_interval=HOUR)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await wire.until_writes(2)
    feed.put(b"d2;")
    if end == "disconnect":
        wire.gone.set()
        await asyncio.wait_for(abort.wait(), PATIENCE)  # the response saw the disconnect
    feed.put(b"d3;", None)
    await asyncio.wait_for(task, PATIENCE)
    assert feed.closed
    assert feed.tasks == {task}


@on_virtual_clock
async def test_once_abort_is_set_nothing_more_is_sent() -> None:
    """Whoever sets ``abort``: what the writer holds is dropped, the body is drained."""
    feed, wire, abort = Feed(), Wire(), asyncio.Event()
    task = respond(feed, wire, abort, write_interval=0.05)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await wire.until_writes(2)
    feed.put(b"d2;")
    await feed.until_drained()
    abort.set()  # d2 is held for the rest of the interval
    await spin(0.2)
    feed.put(b"d3;", None)
    await asyncio.wait_for(task, PATIENCE)
    assert wire.body == b"start;d1;"
    assert not wire.ended
    assert feed.pulled == 4 and feed.closed


@on_virtual_clock
async def test_an_interval_of_zero_writes_every_chunk() -> None:
    feed, wire = Feed(), Wire()
    task = respond(feed, wire, write_interval=0)
    feed.put(b"a;", b"b;", b"c;", None)
    await asyncio.wait_for(task, PATIENCE)
    assert wire.writes == [b"a;", b"b;", b"c;", b""]
    assert wire.ended


@on_virtual_clock
@pytest.mark.parametrize("interval", [0, DEFAULT_WRITE_INTERVAL])
async def test_a_silent_stream_gets_a_keep_alive_comment_per_quiet_interval(
    interval: float,
) -> None:
    """A proxy cuts a response that sends nothing for 30 to 60 s (a slow tool, a model
    thinking): an SSE comment, which every client skips, goes out after each quiet stretch."""
    feed, wire = Feed(), Wire()
    task = respond(feed, wire, write_interval=interval, keep_alive=15)
    feed.put(b"a;")
    await wire.until_writes(1)
    await asyncio.sleep(31)
    assert wire.writes == [b"a;", SSE_KEEP_ALIVE, SSE_KEEP_ALIVE]
    feed.put(b"b;")
    await asyncio.sleep(14)  # a write restarts the count
    feed.put(b"c;", None)
    await asyncio.wait_for(task, PATIENCE)
    assert wire.writes == [b"a;", SSE_KEEP_ALIVE, SSE_KEEP_ALIVE, b"b;", b"c;", b""]


@on_virtual_clock
async def test_a_busy_stream_arms_one_keep_alive_timer_not_one_per_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The keep-alive is one timer that waits again from the last write when it fires, not a
    timeout per write, which cost more than the rest of the writer's cycle
    (docs/internals/performance-notes.md)."""
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at = loop.call_at

    def counted(when: float, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        if when >= loop.time() + 10:  # a keep-alive's, not an interval's
            armed.append(when)
        return call_at(when, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counted)
    feed, wire = Feed(), Wire()
    task = respond(feed, wire, write_interval=0.01, keep_alive=15)
    for i in range(100):  # every other chunk held for the rest of an interval
        feed.put(b"%d;" % i)
        await asyncio.sleep(0.006)
    await asyncio.sleep(16)  # then quiet: one comment
    feed.put(None)
    await asyncio.wait_for(task, PATIENCE)
    assert len(wire.writes) > 50
    assert wire.writes[-2:] == [SSE_KEEP_ALIVE, b""]
    assert len(armed) <= 3  # the first, once from the last write, once after the comment


class StalledWire(Wire):
    """A wire whose reader stops reading after the first body write, until ``unstall``: the
    writes after it wait in ``send``, as behind a full socket."""

    def __init__(self) -> None:
        super().__init__()
        self.open = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0

    def unstall(self) -> None:
        self.open.set()

    async def send(self, message: dict[str, Any]) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if message["type"] == "http.response.body" and self.writes:
                await self.open.wait()
            await super().send(message)
        finally:
            self.in_flight -= 1


@on_virtual_clock
async def test_no_keep_alive_comment_goes_out_beside_a_stalled_write() -> None:
    """A write that waits for a reader that stopped reading is the one write in flight: the
    keep-alive that falls due meanwhile waits for it, and goes out after it, not beside it."""
    feed, wire = Feed(), StalledWire()
    task = respond(feed, wire, write_interval=0.01, keep_alive=15)
    feed.put(b"a;")
    await wire.until_writes(1)
    feed.put(b"b;")  # written at once by the body's task: it waits in send
    await asyncio.sleep(40)
    assert wire.writes == [b"a;"]
    wire.unstall()
    await wire.until_writes(2)
    await asyncio.sleep(16)
    feed.put(None)
    await asyncio.wait_for(task, PATIENCE)
    assert wire.most_in_flight == 1
    assert wire.writes == [b"a;", b"b;", SSE_KEEP_ALIVE, b""]


@on_virtual_clock
async def test_no_keep_alive_when_it_is_off() -> None:
    feed, wire = Feed(), Wire()
    task = respond(feed, wire, keep_alive=None)
    feed.put(b"a;")
    await asyncio.sleep(100)
    feed.put(None)
    await asyncio.wait_for(task, PATIENCE)
    assert wire.writes == [b"a;", b""]


@on_virtual_clock
async def test_a_disconnect_while_the_writer_waits_drains_the_body_and_sends_nothing() -> None:
    feed, wire, abort = Feed(), Wire(), asyncio.Event()
    before = asyncio.all_tasks()
    task = respond(feed, wire, abort, write_interval=HOUR)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await wire.until_writes(2)
    feed.put(b"d2;")
    await spin()
    wire.gone.set()  # the writer is sitting out its hour with d2
    await spin()
    assert abort.is_set()
    assert not task.done()  # still draining the body
    feed.put(b"d3;", b"end;", None)
    await asyncio.wait_for(task, PATIENCE)
    assert wire.body == b"start;d1;"
    assert not wire.ended
    assert feed.pulled == 5 and feed.closed
    assert asyncio.all_tasks() <= before


@on_virtual_clock
async def test_the_run_waits_while_too_much_is_unsent() -> None:
    """Backpressure: a write that does not return holds the run once ``max_buffer`` bytes
    wait, as it did when the run awaited each write."""
    feed, wire, abort = Feed(), Wire(), asyncio.Event()
    release = asyncio.Event()
    plain_send = wire.send

    async def slow_send(message: dict[str, Any]) -> None:
        await plain_send(message)
        if message.get("body") == b"d2;":
            await release.wait()

    wire.send = slow_send  # type: ignore[method-assign]
    task = respond(feed, wire, abort, write_interval=0.01, max_buffer=6)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await wire.until_writes(2)
    feed.put(b"d2;")
    await wire.until_writes(3)  # held, then written by the flusher, which is stuck in it
    feed.put(b"d3;", b"d4;", b"d5;", b"d6;", None)
    await spin()
    assert feed.pulled == 5  # d3 + d4 = 6 bytes wait: d5 is not pulled
    release.set()
    await asyncio.wait_for(task, PATIENCE)
    assert wire.body == b"start;d1;d2;d3;d4;d5;d6;"
    assert wire.ended


@on_virtual_clock
async def test_the_body_ends_while_held_bytes_are_being_written() -> None:
    feed, wire = Feed(), Wire()
    release = asyncio.Event()
    plain_send = wire.send

    async def slow_send(message: dict[str, Any]) -> None:
        await plain_send(message)
        if message.get("body") == b"d2;":
            await release.wait()

    wire.send = slow_send  # type: ignore[method-assign]
    task = respond(feed, wire, write_interval=0.01)
    feed.put(b"start;", b"d1;", b"d2;")
    await wire.until_writes(3)  # d2: held, then written by the flusher, which is stuck in it
    feed.put(None)
    await spin()
    assert not task.done()  # the end waits for the write in flight…
    release.set()
    await asyncio.wait_for(task, PATIENCE)  # … and no longer
    assert wire.messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


@pytest.mark.parametrize("stuck", ["sleeping out the interval", "in a write"])
@on_virtual_clock
async def test_a_cancelled_response_does_not_wait_for_the_flusher(stuck: str) -> None:
    feed, wire = Feed(), Wire()
    never = asyncio.Event()
    plain_send = wire.send

    async def stuck_send(message: dict[str, Any]) -> None:
        await plain_send(message)
        if message.get("body") == b"d2;":
            await never.wait()

    wire.send = stuck_send  # type: ignore[method-assign]
    before = asyncio.all_tasks()
    task = respond(feed, wire, write_interval=HOUR if stuck.startswith("sleeping") else 0.01)
    feed.put(b"start;", b"d1;", b"d2;")
    if stuck == "in a write":
        await wire.until_writes(3)
    await spin()
    task.cancel()
    await asyncio.wait([task], timeout=PATIENCE)
    assert task.cancelled()
    assert asyncio.all_tasks() <= before
    assert feed.closed


@on_virtual_clock
async def test_a_disconnect_frees_a_run_waiting_for_room() -> None:
    feed, wire, abort = Feed(), Wire(), asyncio.Event()
    task = respond(feed, wire, abort, write_interval=HOUR, max_buffer=1)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await wire.until_writes(2)
    feed.put(b"d2;", b"d3;")
    await spin()
    assert feed.pulled == 3  # d2 waits for the writer, which sits out its hour
    wire.gone.set()
    feed.put(None)
    await asyncio.wait_for(task, PATIENCE)
    assert feed.pulled == 4 and feed.closed
    assert wire.body == b"start;d1;"


@pytest.mark.parametrize("interval", [0, DEFAULT_WRITE_INTERVAL, HOUR])
@on_virtual_clock
async def test_an_oserror_from_send_stops_sending_and_drains(interval: float) -> None:
    feed, wire, abort = Feed(), Wire(), asyncio.Event()
    plain_send = wire.send

    async def failing_send(message: dict[str, Any]) -> None:
        if message.get("body") == b"d1;":
            raise ConnectionResetError("peer gone")
        await plain_send(message)

    wire.send = failing_send  # type: ignore[method-assign]
    task = respond(feed, wire, abort, write_interval=interval)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await asyncio.wait_for(abort.wait(), PATIENCE)
    feed.put(b"d2;", None)
    await asyncio.wait_for(task, PATIENCE)  # no exception
    assert wire.writes == [b"start;"]
    assert feed.pulled == 3 and feed.closed


@on_virtual_clock
async def test_another_send_failure_is_raised_after_the_drain() -> None:
    feed, wire, abort = Feed(), Wire(), asyncio.Event()
    plain_send = wire.send

    async def broken_send(message: dict[str, Any]) -> None:
        if message.get("body") == b"d1;":
            raise RuntimeError("server bug")
        await plain_send(message)

    wire.send = broken_send  # type: ignore[method-assign]
    task = respond(feed, wire, abort, write_interval=HOUR)
    feed.put(b"start;")
    await wire.until_writes(1)
    feed.put(b"d1;")
    await asyncio.wait_for(abort.wait(), PATIENCE)  # the run is told to stop…
    await spin()
    assert not task.done()  # … and drained
    feed.put(b"d2;", None)
    with pytest.raises(BaseException) as raised:
        await asyncio.wait_for(task, PATIENCE)
    assert "server bug" in repr(raised.value)
    assert feed.pulled == 3 and feed.closed
    assert wire.writes == [b"start;"]


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="write_interval"):
        SSEResponse(Feed().body(), abort=asyncio.Event(), write_interval=-1)
    with pytest.raises(ValueError, match="sse_write_interval"):
        AdkApp(scripted_agent([]), streaming=Streaming(sse_write_interval=-0.01))


# --- whole requests through AdkApp and ADK --------------------------------------------------


def get_weather(city: str) -> dict[str, Any]:
    """Weather for a city."""
    return {"city": city, "forecast": "sunny"}


def long_turns() -> list[Any]:
    words = "the quick brown fox jumps over a lazy dog " * 20
    return [[Text(words), Call("get_weather", {"city": "Paris"})], [Text(words)]]


async def run_chat(app: AdkApp, text: str = "hi") -> Wire:
    wire = Wire(json.dumps(user_body(text)).encode())
    await asyncio.wait_for(app(http_scope(), wire.receive, wire.send), 30)
    return wire


def chat_app(interval: float, *, delay: float = 0.0, turns: list[Any] | None = None) -> AdkApp:
    agent = scripted_agent(
        long_turns() if turns is None else turns,
        tools=[get_weather],
        chunk_size=4,
        delay=delay,
    )
    return AdkApp(
        agent,
        identify=lambda conn: "u",
        messages=Messages(message_id_factory=counter("msg")),
        streaming=Streaming(sse_write_interval=interval),
    )


@pytest.mark.parametrize(
    ("interval", "delay"), [(DEFAULT_WRITE_INTERVAL, 0.0), (0.01, 0.002), (HOUR, 0.0)]
)
async def test_the_stream_is_byte_for_byte_the_uncoalesced_one(
    interval: float, delay: float
) -> None:
    plain = await run_chat(chat_app(0, delay=delay))
    coalesced = await run_chat(chat_app(interval, delay=delay))
    assert coalesced.body == plain.body
    assert coalesced.ended
    chunks = parse_sse(coalesced.body)
    assert sum(c["type"] == "text-delta" for c in chunks) > 100
    assert len(coalesced.writes) < len(plain.writes)
    if interval == HOUR:  # start, the first delta, then everything else with the end
        assert len(coalesced.writes) <= 3


async def test_a_model_failure_is_an_error_chunk_then_finish_and_done() -> None:
    turns = [[Text("Partial answer, then"), Fail("backend exploded")]]
    plain = await run_chat(chat_app(0, turns=turns))
    coalesced = await run_chat(chat_app(HOUR, turns=turns))  # the end is not held
    assert coalesced.body == plain.body
    chunks = parse_sse(coalesced.body)
    assert chunks[-4:] == [
        {"type": "data-error", "id": "msg1-error", "data": {"errorText": "An error occurred."}},
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]


async def test_a_run_that_raises_is_an_error_chunk_then_finish_and_done(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failure ADK does not report itself (``run_async`` raising mid-answer) ends the body
    with the generic ``error`` chunk; the exception is logged, not shown."""

    def make(interval: float) -> AdkApp:
        app = chat_app(interval)
        run_async = app.runner.run_async

        def failing_run_async(**kwargs: Any) -> AsyncGenerator[Event, None]:
            async def run() -> AsyncGenerator[Event, None]:
                async with aclosing(run_async(**kwargs)) as events:
                    async for n, event in aenumerate(events):
                        if n == 40:
                            raise RuntimeError("run bug")
                        yield event

            return run()

        app.runner.run_async = failing_run_async  # type: ignore[method-assign]
        return app

    caplog.set_level(logging.ERROR, logger="adk_asgi")
    plain = await run_chat(make(0))
    coalesced = await run_chat(make(HOUR))  # the error and the end are not held
    assert coalesced.body == plain.body
    chunks = parse_sse(coalesced.body)
    assert sum(c["type"] == "text-delta" for c in chunks) > 30
    assert chunks[-5:] == [
        {"type": "text-end", "id": "msg1-txt1"},
        {"type": "data-error", "id": "msg1-error", "data": {"errorText": "An error occurred."}},
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]
    assert "the run failed" in caplog.text


async def aenumerate(items: AsyncIterator[Event]) -> AsyncGenerator[tuple[int, Event], None]:
    n = 0
    async for item in items:
        yield n, item
        n += 1


@pytest.mark.parametrize(
    ("interval", "after"),
    [
        (0, 3),
        *[(DEFAULT_WRITE_INTERVAL, after) for after in (1, 2, 3, 6)],
        *[(HOUR, after) for after in (1, 2, 3, None)],
    ],
)
@on_virtual_clock
async def test_a_disconnect_mid_stream_aborts_the_run_and_leaves_no_task(
    interval: float, after: int | None
) -> None:
    """The client leaves once ``after`` messages were sent (the response start, ``start``,
    the first delta …); ``None``: while the writer holds deltas for the hour."""
    app = AdkApp(
        scripted_agent([[Text("word " * 400)]], chunk_size=5, delay=0.005),
        identify=lambda conn: "u",
        messages=Messages(message_id_factory=counter("msg")),
        streaming=Streaming(sse_write_interval=interval),
    )
    wire = Wire(json.dumps(user_body("hi")).encode())
    plain_send = wire.send

    async def send(message: dict[str, Any]) -> None:
        await plain_send(message)
        if len(wire.messages) == after:
            wire.gone.set()

    before = asyncio.all_tasks()
    request = asyncio.create_task(app(http_scope(), wire.receive, send))
    if after is None:
        await wire.until_writes(2)  # start, the first delta; then nothing for an hour
        await spin(0.1)  # the model streams 20 more deltas meanwhile (one per 5 ms)
        assert len(wire.writes) == 2
        wire.gone.set()
    await asyncio.wait_for(request, 10)
    assert asyncio.all_tasks() <= before
    assert len(app.locks) == 0
    assert wire.messages[0]["status"] == 200
    assert not wire.ended
    session = await app.session_service.get_session(
        app_name=app.app_name, user_id="u", session_id="chat-1"
    )
    assert session is not None
    recorded = [(e.author, e.error_code) for e in session.events]
    # ADK's record of the abort, then the text streamed before it (ADK keeps no partials),
    # when any was: the client that left after the start had been sent none
    kept = [] if after in (1, 2) else [("test_agent", None)]
    assert recorded == [("user", None), ("test_agent", "INVOCATION_ABORTED"), *kept]


@pytest.mark.parametrize("interval", [0, DEFAULT_WRITE_INTERVAL])
@on_virtual_clock
async def test_an_oserror_mid_stream_aborts_the_run(interval: float) -> None:
    app = AdkApp(
        scripted_agent([[Text("word " * 400)]], chunk_size=5, delay=0.005),
        identify=lambda conn: "u",
        messages=Messages(message_id_factory=counter("msg")),
        streaming=Streaming(sse_write_interval=interval),
    )
    wire = Wire(json.dumps(user_body("hi")).encode())
    plain_send = wire.send
    failed: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        if failed:
            raise AssertionError(f"sent after a failed send: {message}")
        if len(wire.messages) == 3:
            failed.append(message)
            raise BrokenPipeError("client gone")
        await plain_send(message)

    before = asyncio.all_tasks()
    await asyncio.wait_for(app(http_scope(), wire.receive, send), 10)
    assert asyncio.all_tasks() <= before
    assert len(app.locks) == 0
    assert len(wire.messages) == 3
    session = await app.session_service.get_session(
        app_name=app.app_name, user_id="u", session_id="chat-1"
    )
    assert session is not None
    assert [e.error_code for e in session.events] == [None, "INVOCATION_ABORTED", None]


@pytest.mark.parametrize(
    ("streams", "interval"),
    [(0, 0.01), (16, 0.01), (32, 0.02), (48, 0.03), (500, 0.05)],
)
def test_the_write_interval_grows_with_the_streams_of_the_process(
    monkeypatch: pytest.MonkeyPatch, streams: int, interval: float
) -> None:
    """Past 16 streams a stream's deltas come further apart than 10 ms, and each would be a
    write of its own: the interval grows with them, up to 50 ms
    (docs/internals/performance-notes.md)."""
    monkeypatch.setattr(load, "_streaming", streams)
    assert load.under_load(0.01) == pytest.approx(interval)
    assert load.under_load(0) == 0  # writes that are not coalesced stay so


async def test_a_stream_counts_while_it_streams_and_not_after() -> None:
    app = AdkApp(scripted_agent([[Text("Hello there.")]]), identify=lambda c: "u")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        await asyncio.gather(
            *(client.post("/chat", json=user_body("hi", f"c{i}")) for i in range(5))
        )
    assert load.streams() == 0
