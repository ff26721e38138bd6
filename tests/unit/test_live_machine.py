"""The live protocol machine's phase table (adk_asgi/live/phases.py), driven sans-I/O through
the machine's own methods (tests/unit/live_machine.py): every legal move leads to the phase the
table names, and every other move raises :class:`LiveProtocolError` before any effect."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from adk_asgi.hitl.continuation import Continuation
from adk_asgi.hitl.pending import ToolCall
from adk_asgi.live.phases import (
    MOVES,
    PHASES,
    TRANSITIONS,
    LiveProtocolError,
    Move,
    Phase,
    Phases,
)
from adk_asgi.serving.checks import decode_send_frame
from adk_asgi.wire.chunks import DataChunk
from tests.unit.live_machine import Machine, send_frame, text_event, user_message
from tests.unit.test_architecture import PACKAGE, imports_of, io_imports, module_name

CALL = ToolCall("c1", "get_weather", {}, "i", None, False)


def to_opening(live: Machine) -> None:
    live.take(live.protocol.bind("chat-1"))


def to_answering(live: Machine) -> None:
    to_opening(live)
    live.take(live.protocol.session_waiting())


def to_open(live: Machine) -> None:
    to_opening(live)
    live.take(live.protocol.session_started(answers_history=False))


def to_closed(live: Machine) -> None:
    to_opening(live)
    live.take(live.protocol.session_busy())


REACH: dict[Phase, Callable[[Machine], None]] = {
    "unbound": lambda live: None,
    "opening": to_opening,
    "answering": to_answering,
    "open": to_open,
    "closed": to_closed,
}
"""How a new machine reaches each phase, through legal moves only."""

SEND = json.dumps(send_frame("r1", [user_message("u1", "hi")]))

MAKE: dict[Move, Callable[[Machine], object]] = {
    "bind": lambda live: live.protocol.bind("chat-1"),
    "session_waiting": lambda live: live.protocol.session_waiting(),
    "session_started": lambda live: live.protocol.session_started(answers_history=False),
    "session_busy": lambda live: live.protocol.session_busy(),
    "session_ended": lambda live: live.protocol.session_ended(None),
    "answered": lambda live: live.protocol.answered("r1", Continuation("m0"), waiting=True),
    "refused": lambda live: live.protocol.refused("r1", "answers no waiting call"),
    "dispatch": lambda live: live.protocol.dispatch("r1", decode_send_frame(SEND)),
    "event": lambda live: live.protocol.event(text_event("hi", partial=True)),
    "tool": lambda live: live.protocol.tools.tool_finished("c1", {"ok": True}),
}
"""One call of the machine for each move."""

TOOL_METHODS: dict[str, Callable[[Machine], object]] = {
    "call": lambda live: live.protocol.tools.call("c1", "get_weather", {}, "i"),
    "early_result": lambda live: live.protocol.tools.early_result("c1"),
    "asked": lambda live: live.protocol.tools.asked("c1", {"hint": "sure?"}),
    "confirmed_payload": lambda live: live.protocol.tools.confirmed_payload("c1", None),
    "decision_reason": lambda live: live.protocol.tools.decision_reason("c1"),
    "wait": lambda live: live.protocol.tools.wait(CALL, "approval"),
    "timed_out": lambda live: live.protocol.tools.timed_out("c1"),
    "decided": lambda live: live.protocol.tools.decided(CALL, True),
    "tool_finished": lambda live: live.protocol.tools.tool_finished("c1", {"ok": True}),
    "stored_result": lambda live: live.protocol.tools.stored_result(
        "c1", "agent", {"ok": True}, ["c1"]
    ),
    "data": lambda live: live.protocol.tools.data(DataChunk(type="data-card", data=1)),
}
"""The plugin's wait API (adk_asgi/live/tools.py): every method is the ``tool`` move."""


@pytest.mark.parametrize("phase", PHASES)
def test_each_phase_is_reached_through_legal_moves(phase: Phase) -> None:
    live = Machine()
    REACH[phase](live)
    assert live.protocol.phase == phase


@pytest.mark.parametrize(("phase", "move"), sorted(TRANSITIONS))
def test_every_legal_move_leads_to_the_phase_the_table_names(phase: Phase, move: Move) -> None:
    live = Machine()
    REACH[phase](live)
    MAKE[move](live)
    assert live.protocol.phase == TRANSITIONS[phase, move]


ILLEGAL = sorted({(p, m) for p in PHASES for m in MOVES} - set(TRANSITIONS))


@pytest.mark.parametrize(("phase", "move"), ILLEGAL)
def test_every_other_move_raises_the_protocol_error_before_any_effect(
    phase: Phase, move: Move
) -> None:
    live = Machine()
    REACH[phase](live)
    with pytest.raises(LiveProtocolError) as refused:
        MAKE[move](live)
    assert (refused.value.code, refused.value.reason) == (
        1011,
        f"live protocol: {move} is not allowed while {phase}",
    )
    assert live.protocol.phase == phase
    assert live.protocol.tick() == []  # nothing was asked for


@pytest.mark.parametrize("method", sorted(TOOL_METHODS))
def test_each_method_of_the_wait_api_is_the_tool_move(method: str) -> None:
    opening = Machine()
    to_opening(opening)
    with pytest.raises(LiveProtocolError) as refused:
        TOOL_METHODS[method](opening)
    assert refused.value.reason == "live protocol: tool is not allowed while opening"
    live = Machine()
    to_open(live)
    TOOL_METHODS[method](live)
    assert live.protocol.phase == "open"


def test_the_table_names_only_phases_and_moves_there_are() -> None:
    assert {p for p, _ in TRANSITIONS} | set(TRANSITIONS.values()) == set(PHASES)
    assert {m for _, m in TRANSITIONS} == set(MOVES)
    phases = Phases()
    assert [phases.move(m) for m in ("bind", "session_started", "session_ended")] == [
        "opening",
        "open",
        "closed",
    ]


@pytest.mark.parametrize(
    "module",
    ["live.context", "live.events", "live.phases", "live.replay", "live.turns", "live.waits"],
)
def test_the_machines_modules_do_no_io(module: str) -> None:
    """Each job of the machine is sans-I/O, through whatever it imports."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges = {name: imports_of(path, set(paths)) for name, path in paths.items()}
    assert io_imports(f"adk_asgi.{module}", edges, set(paths)) == {}
