"""What the live protocol machine asks its connection to do (:mod:`.protocol`).

The machine does no I/O: each of its methods returns a list of these, in order, and the
connection (:mod:`.connection`) carries them out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from google.adk.agents.live_request_queue import LiveRequest
from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.failures import FailedCall
from adk_asgi.wire.chunks import UIMessageChunk
from adk_asgi.wire.messages import ChatRequest


@dataclass(frozen=True, slots=True)
class Send:
    """A frame for the socket: JSON text, or model speech as binary PCM."""

    data: str | bytes


@dataclass(frozen=True, slots=True)
class ToModel:
    """A request for the model (``LiveRequestQueue.send``); ``after_results``: once ADK has
    queued the results of the calls it closed (:mod:`.queue`)."""

    request: LiveRequest
    after_results: bool = False


@dataclass(frozen=True, slots=True)
class OpenSession:
    """The connection is bound to ``chat_id``: lock the chat and start ``run_live``."""

    chat_id: str


@dataclass(frozen=True, slots=True)
class Resolve:
    """A tool call waiting for the user (or the browser) gets its answer."""

    call_id: str
    value: Any


@dataclass(frozen=True, slots=True)
class Settle:
    """A request to a chat whose stored calls wait (``answering``): the connection checks and
    records it against the session before the model runs (:meth:`LiveProtocol.answered`)."""

    request_id: str
    chat: ChatRequest


@dataclass(frozen=True, slots=True)
class Close:
    """Send what is queued, then close the socket with ``code`` and ``reason`` (the words the
    ``error`` frames gave, so a client that reads only the close still learns why)."""

    code: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Record:
    """What the chat's active response showed, for the stream store (resumable streams):
    ``begin`` a new stream with ``chunks`` (the message so far), append ``chunks``, or append
    them and ``end`` the stream."""

    chunks: list[UIMessageChunk]
    begin: bool = False
    end: bool = False


@dataclass(frozen=True, slots=True)
class Replay:
    """A ``resume`` this connection has nothing for: the stream store may (another connection,
    maybe on another worker, is writing the chat's answer). Read it into
    :meth:`LiveProtocol.replayed`."""

    request_id: str


@dataclass(frozen=True, slots=True)
class StopReplay:
    """The client aborted a :class:`Replay`'s request: stop reading the store for it."""

    request_id: str


@dataclass(frozen=True, slots=True)
class KeepFailure:
    """The session failed mid-answer: keep what the client was shown of the answer
    (:func:`adk_asgi.convert.failures.shown_answer`), the calls it was running as failed
    (:func:`adk_asgi.convert.failures.failed_calls_answer`), and the results it showed that
    ADK did not store."""

    message_id: str
    shown: list[types.Part]
    error_text: str
    started_at: float | None = None
    """When the failed response started (its message metadata, :mod:`adk_asgi.convert.metadata`)."""
    failed: tuple[FailedCall, ...] = ()
    results: tuple[Event, ...] = ()
    """The events that store the results the stream showed (every one of the connection's:
    those in the session already are not stored again)."""


Output = (
    Send
    | ToModel
    | OpenSession
    | Resolve
    | Settle
    | Close
    | Record
    | Replay
    | StopReplay
    | KeepFailure
)

SPEECH: Final[dict[str, Callable[[], LiveRequest]]] = {
    "activity-start": lambda: LiveRequest(activity_start=types.ActivityStart()),
    "activity-end": lambda: LiveRequest(activity_end=types.ActivityEnd()),
    "audio-end": lambda: LiveRequest(audio_stream_end=True),
}
"""The client's voice activity frames, as the model's requests."""
