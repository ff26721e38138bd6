"""The request streams of one live connection: responses over one never-ending session (sans-I/O).

The AI SDK asks for a response per request (``send`` → ``start``, ``chunk``…, ``end``) while a
live session never stops. :class:`Streams` keeps the response under way, gives it to the
request that reads it, keeps what ended while no request was open for a ``resume``, and drains
the end of a turn a new message cut short into its own response. Text deltas are coalesced into
fewer frames (:mod:`.coalesce`); a ``resume`` replays them one by one, as they were made.

Frames go to the ``out`` list of the protocol machine that owns it (:mod:`.protocol`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import msgspec

from adk_asgi.convert.events import EventConverter
from adk_asgi.live.coalesce import DeltaCoalescer
from adk_asgi.live.outputs import Output, Record, Send
from adk_asgi.wire.chunks import Finish, UIMessageChunk
from adk_asgi.wire.encoding import ChunkEncoder, SdkVersion

VOICE_ANSWER_WAIT = 10.0
"""How long a ``resume`` after the user stopped talking waits for the model's answer to start."""
_FRAME = msgspec.json.Encoder()


@dataclass(slots=True)
class Response:
    """One assistant response: its converter, and its chunks so far (for a resume replay).

    ``earlier`` holds the chunks of the earlier responses of the same message (this one
    continues a paused turn): every AI SDK client rebuilds a resumed message from scratch, so a
    replay must start at the message's beginning, not at this response's.
    """

    converter: EventConverter
    request_id: str | None = None
    chunks: list[UIMessageChunk] = field(default_factory=list)
    sent: int = 0
    earlier: list[UIMessageChunk] = field(default_factory=list)
    key: str = field(default_factory=lambda: secrets.token_hex(4))
    """Tells this response's steps from those of the message's other responses (history)."""
    answered: bool = False
    """The model has said something into it (an ``interrupted`` can only cut that short)."""

    @property
    def message_id(self) -> str:
        return self.converter.message_id


@dataclass(slots=True)
class _ParkedResume:
    request_id: str
    deadline: float


class Streams:
    def __init__(
        self,
        out: list[Output],
        *,
        sdk: SdkVersion,
        deltas: DeltaCoalescer[Response],
        record: bool = False,
    ) -> None:
        self.out = out
        self.record = record
        """Each response's chunks also go out as :class:`~.outputs.Record`, for a
        stream store: a client on another connection can resume it."""
        self.encoder = ChunkEncoder(sdk)
        self.deltas = deltas
        self.response: Response | None = None
        self.unclaimed: list[Response] = []
        """Responses that ended while no request was open, oldest first, for ``resume``."""
        self.draining: Response | None = None
        """A response whose turn a new message cut short: the turn's last events are its own."""
        self.last_message: tuple[str, list[UIMessageChunk]] = ("", [])
        """The id and chunks so far of the message the last response belonged to."""
        self.voice_answer_due = False
        self.parked: _ParkedResume | None = None

    @property
    def deadline(self) -> float | None:
        """When :meth:`tick` is due next, or ``None``."""
        held = self.deltas.deadline  # (asked after every event: no list, no min())
        if self.parked is None:
            return held
        return self.parked.deadline if held is None else min(held, self.parked.deadline)

    def tick(self, now: float) -> None:
        self._send_due(self.deltas.tick(now))
        if self.parked is not None and now >= self.parked.deadline:
            self.unpark(answer=True)

    # --- frames ------------------------------------------------------------------------------

    def send(self, data: str | bytes) -> None:
        self._send_due(self.deltas.flush())  # a held delta goes first: frames keep their order
        self.out.append(Send(data))

    def frame(self, **fields: Any) -> None:
        self.send(_FRAME.encode(fields).decode())

    def emit(self, chunks: list[UIMessageChunk], now: float) -> None:
        response = self.response
        if response is None:
            return
        recorded: list[UIMessageChunk] = []
        for chunk in chunks:
            admitted = self.encoder.admit(chunk)
            if admitted is None:
                continue
            response.chunks.append(admitted)
            recorded.append(admitted)
            if response.request_id is not None:
                self._send_due(self.deltas.deliver(response, admitted, now))
        if self.record and recorded:
            self.out.append(Record(recorded))

    def _send_due(self, due: list[tuple[Response, UIMessageChunk]]) -> None:
        for response, chunk in due:
            self._send_chunk(response, chunk)

    def _send_chunk(self, response: Response, chunk: UIMessageChunk) -> None:
        frame = {
            "type": "chunk",
            "requestId": response.request_id,
            "sequence": response.sent,
            "chunk": chunk,
        }
        self.out.append(Send(_FRAME.encode(frame).decode()))
        response.sent += 1

    # --- responses ---------------------------------------------------------------------------

    def begin(self, converter: EventConverter) -> Response:
        """A new response under way (of a new message, or going on with the last one)."""
        last_id, last_chunks = self.last_message
        earlier = list(last_chunks) if last_id == converter.message_id else []
        self.response = Response(converter, earlier=earlier)
        if self.record:
            self.out.append(Record(earlier, begin=True))
        return self.response

    def open(self, request_id: str, lead: list[UIMessageChunk], now: float) -> None:
        """The response under way streams to ``request_id``, from its ``start``."""
        assert self.response is not None
        self.response.request_id = request_id
        self.frame(type="start", requestId=request_id)
        self.emit(self.response.converter.start() + lead, now)

    def end(self, chunks: list[UIMessageChunk], now: float) -> None:
        """The response under way ends with ``chunks``."""
        response = self.response
        if response is None:
            return
        self.emit(chunks, now)
        if self.record:
            self.out.append(Record([], end=True))
        if response.request_id is not None:
            self.frame(type="end", requestId=response.request_id)
        else:
            self.unclaimed.append(response)  # nobody read it yet: kept for a ``resume``
        # The message so far, without its ``finish``: a continuation may follow.
        so_far: list[UIMessageChunk] = [c for c in response.chunks if not isinstance(c, Finish)]
        self.last_message = (response.message_id, response.earlier + so_far)
        self.response = None

    def busy(self) -> bool:
        return self.response is not None and self.response.request_id is not None

    def cut_short(self) -> None:
        """A new message: the response under way drains the rest of its turn (see
        :meth:`LiveProtocol.event`); what nobody claimed stays in the session, not the stream."""
        if self.response is not None:
            self.draining, self.response = self.response, None
            if self.record:  # its stream ends here: the rest of its turn is not shown
                self.out.append(Record([], end=True))
        self.unclaimed.clear()
        self.unpark(answer=True)

    # --- client requests ---------------------------------------------------------------------

    def resume(self, request_id: str, last_sequence: int | None, now: float) -> bool:
        """Replay the message in progress, from its first chunk (or the oldest one that was
        answered while no request was open), skipping the chunks up to ``last_sequence``;
        False when this connection has nothing to replay."""
        response = self.response
        if response is None and self.unclaimed:
            response = self.unclaimed[0]
        if response is None and self.voice_answer_due:
            self.unpark(answer=True)  # a newer resume replaces an older one
            self.parked = _ParkedResume(request_id, now + VOICE_ANSWER_WAIT)
            return True
        if response is None:
            return False
        skip = 0 if last_sequence is None else last_sequence + 1
        self._attach(request_id, response, response.earlier + response.chunks, skip)
        return True

    def claim(self, request_id: str, message_id: str) -> bool:
        """Stream, as the continuation of ``message_id``, the response the turn went on with
        while no request was open; False if there is none."""
        response = self.response
        if response is None or response.request_id is not None:
            response = next((r for r in self.unclaimed if r.message_id == message_id), None)
        if response is None or response.message_id != message_id:
            return False
        self._attach(request_id, response, response.chunks)
        return True

    def _attach(
        self,
        request_id: str,
        response: Response,
        replay: list[UIMessageChunk],
        skip: int = 0,
    ) -> None:
        """Send ``replay`` under ``request_id`` (but its first ``skip`` chunks, which the client
        has); the response goes on there if under way.

        A request that was reading the response (a ``resume`` sent while a typed answer
        streams) gets what is held and its ``end``: it hands over, it is not left hanging."""
        self._send_due(self.deltas.flush())
        if response.request_id not in (None, request_id):
            self.frame(type="end", requestId=response.request_id)
        response.request_id = request_id
        response.sent = min(skip, len(replay))
        self.frame(type="start", requestId=request_id)
        for chunk in replay[response.sent :]:
            self._send_chunk(response, chunk)
        if response is not self.response:  # it has ended
            self.unclaimed.remove(response)
            self.frame(type="end", requestId=request_id)

    def abort(self, request_id: str) -> None:
        """The client stopped reading this response; the rest of the turn is dropped."""
        if self.parked is not None and self.parked.request_id == request_id:
            self.unpark(answer=False)
        if self.response is not None and self.response.request_id == request_id:
            self.deltas.drop(self.response)
            self.response.request_id = None

    def speech_ended(self) -> None:
        """The user stopped talking (``activity-end``/``audio-end``): the model's answer is due.

        The client asks for it with ``resume`` at once, usually before the model has heard
        anything, so until the answer starts a ``resume`` waits for it instead of finding
        nothing to replay.
        """
        self.voice_answer_due = True

    def unpark(self, answer: bool) -> str | None:
        """Release the parked resume; ``answer`` tells its client there is nothing to replay."""
        if self.parked is None:
            return None
        request_id = self.parked.request_id
        self.parked = None
        self.voice_answer_due = False
        if answer:
            self.frame(type="no-active", requestId=request_id)
        return request_id
