"""The ``LiveRequestQueue`` of one live connection: what the client sends the model, in the
order the model must read it.

ADK's ``run_live`` reads one queue, written by two hands: the connection (the user's text,
speech, activity signals) and ADK itself, which sends each tool step's results back through it
once the step's event has passed downstream. A user who moves on while an approval or a
browser tool waits closes those calls, and their results reach the queue only after ADK's
tools return and its event is yielded; written at once, the new message would come first.
Gemini pairs every call with its response before the next turn and closes the session (1007)
when one is missing, so the message is held (:meth:`LiveQueue.send`) until ADK queues the
results of the calls it closed, and whatever the client sends meanwhile waits behind it, in
order. (Those results are the next ADK sends: the closed calls' tools return at once, and a
step's results go as one. A workflow's question is answered inside its tool: the tool's own
result follows.)
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final, Protocol

from google.adk.agents.live_request_queue import LiveRequest, LiveRequestQueue
from google.genai import types

from adk_asgi.live.outputs import Output
from adk_asgi.live.protocol import LiveProtocol
from adk_asgi.serving.data_parts import DataDelivery
from adk_asgi.wire.chunks import DataChunk

logger = logging.getLogger("adk_asgi")

RESULTS_WAIT: Final = 10.0
"""Seconds a new message waits, at most, for the results of the calls it closed."""


class _Waits(Protocol):
    """What the queue carries to the plugin: the connection's :class:`~.tools.ToolWaits`."""

    protocol: LiveProtocol

    def carry_out(self, outputs: list[Output]) -> None: ...


class LiveQueue(LiveRequestQueue, DataDelivery):
    """The ``LiveRequestQueue`` of one connection: it carries the connection's
    :class:`~.tools.ToolWaits` to the plugin (and to ``send_data``, which shows its parts
    through the machine), keeps the client's requests behind the results of the calls they
    close (module docstring), and counts the microphone audio the model has not taken.

    ``send_realtime`` never blocks (ADK's queue is unbounded), so a client that streams audio
    faster than the model takes it would grow the server's memory without limit; the reader
    waits on :meth:`room` instead.
    """

    def __init__(self, waits: _Waits | None = None) -> None:
        super().__init__()
        self.waits = waits
        self.audio_backlog = 0
        self._taken = asyncio.Event()
        self._holding = False
        """The client's requests wait for ADK's next tool results (:meth:`send`)."""
        self._held: list[LiveRequest] = []
        self._timer: asyncio.TimerHandle | None = None

    def deliver_data(self, chunk: DataChunk) -> str | None:
        waits = self.waits
        if waits is None:
            return None
        message_id, outputs = waits.protocol.tools.data(chunk)
        waits.carry_out(outputs)
        return message_id

    def send(self, req: LiveRequest, *, after_results: bool = False) -> None:
        """Queue ``req``; ``after_results``: once ADK has queued the next tool results (those
        of the calls a new message just closed), or after :data:`RESULTS_WAIT` at most, so
        that a tool that never answers cannot keep the user's message from the model."""
        if after_results and not self._holding:
            self._holding = True
            self._timer = asyncio.get_running_loop().call_later(RESULTS_WAIT, self._gave_up)
        if self._holding:
            self._held.append(req)
        else:
            super().send(req)

    def send_realtime(self, blob: types.Blob) -> None:
        self.audio_backlog += len(blob.data or b"")
        self.send(LiveRequest(blob=blob))

    def send_content(self, content: types.Content, partial: bool = False) -> None:
        """ADK's own hand: a tool step's results (never held), which release the client's
        requests held behind them."""
        super().send(LiveRequest(content=content, partial=partial))
        if any(part.function_response for part in content.parts or []):
            self._release()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        super().close()

    def _gave_up(self) -> None:
        logger.warning(
            "adk_asgi: no tool results came %s s after a new message closed the calls that"
            " waited; the message goes to the model without them",
            RESULTS_WAIT,
        )
        self._release()

    def _release(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._holding, self._timer = False, None
        held, self._held = self._held, []
        for request in held:
            super().send(request)

    async def get(self) -> LiveRequest:
        request = await super().get()
        if request.blob is not None:
            self.audio_backlog -= len(request.blob.data or b"")
            self._taken.set()
        return request

    async def room(self, limit: int) -> None:
        """Return once no more than ``limit`` bytes of audio wait for the model."""
        while self.audio_backlog > limit:
            self._taken.clear()
            await self._taken.wait()
