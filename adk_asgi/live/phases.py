"""The phases of a live connection and the moves between them, as a table (sans-I/O).

In h11's manner: every input of the protocol machine (:mod:`.protocol`) that depends on
the connection's phase is a *move*, and :data:`TRANSITIONS` says, for each phase, which moves
are legal and the phase each leads to. A move the table does not list is the connection's own
tasks out of order (a session that starts twice, a model event before the session opened), not
something a client can cause — client frames are legal in every phase and answered per phase —
so it raises :class:`LiveProtocolError`, which the transport turns into a close with its code
and reason instead of a state nobody designed for.

The phases: ``unbound`` (no chat yet), ``opening`` (the chat's lock and session are being
acquired; ``send`` frames wait), ``answering`` (calls of the stored session wait for the user,
left by a connection that is gone: each ``send`` is settled against the session before the
model runs), ``open``, ``closed`` (the session ended or never started; a ``send`` gets the
reason and the socket closes).
"""

from __future__ import annotations

from typing import Final, Literal, get_args

Phase = Literal["unbound", "opening", "answering", "open", "closed"]
Move = Literal[
    "bind",
    "session_waiting",
    "session_started",
    "session_busy",
    "session_ended",
    "answered",
    "refused",
    "dispatch",
    "event",
    "tool",
]
"""The machine's methods that are moves (``tool``: the plugin's wait API, every method)."""

PHASES: Final[tuple[Phase, ...]] = get_args(Phase)
MOVES: Final[tuple[Move, ...]] = get_args(Move)

TRANSITIONS: Final[dict[tuple[Phase, Move], Phase]] = {
    ("unbound", "bind"): "opening",
    ("opening", "session_waiting"): "answering",
    ("opening", "session_started"): "open",
    ("answering", "session_started"): "open",
    ("opening", "session_busy"): "closed",
    # The lock's backend or the session store failed before the model ran, or run_live ended.
    ("opening", "session_ended"): "closed",
    ("answering", "session_ended"): "closed",
    ("open", "session_ended"): "closed",
    # A second failure as the session ends (keeping the failed answer, closing its recording).
    ("closed", "session_ended"): "closed",
    ("answering", "answered"): "answering",
    ("answering", "refused"): "answering",
    ("open", "dispatch"): "open",
    ("open", "event"): "open",
    ("open", "tool"): "open",
    # A tool ADK runs in a task of its own may finish after run_live raised.
    ("closed", "tool"): "closed",
}

INTERNAL_ERROR: Final = 1011


class LiveProtocolError(Exception):
    """A move the phase does not allow: the connection closes with ``code`` and ``reason``
    (1011: the server's own tasks went out of order, not the client's doing)."""

    def __init__(self, reason: str, code: int = INTERNAL_ERROR) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


class Phases:
    """The phase of one connection, moved only through :data:`TRANSITIONS`."""

    __slots__ = ("phase",)

    def __init__(self) -> None:
        self.phase: Phase = "unbound"

    def move(self, move: Move) -> Phase:
        """Make ``move`` (before any of its effects): the new phase, or
        :class:`LiveProtocolError` when this phase does not allow it."""
        after = TRANSITIONS.get((self.phase, move))
        if after is None:
            raise LiveProtocolError(f"live protocol: {move} is not allowed while {self.phase}")
        self.phase = after
        return after
