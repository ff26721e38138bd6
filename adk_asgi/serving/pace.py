"""A run streams no faster than its reader reads: back-pressure from the socket to the model.

ADK's runner hands events from the agent's task to the caller through an unbounded queue, and
does not wait for a partial event to be taken (it waits for final ones only). A reader that
stops reading — a stalled client, a slow link — stops the SSE body, but not the model: every
partial event it streams meanwhile waits in that queue, about 1.5 KiB each
(docs/internals/performance-notes.md, "Slow clients"). So the SSE writer says when its reader keeps
up (:attr:`RunSignal.reader_ready`), and :class:`PaceToReader`, a plugin, holds the model's next
response in the agent's own task until it does: the model's stream then waits in its HTTP
connection, as any unread stream does, and the server's memory stays bounded.

The plugin finds its run's signal in a context variable (:func:`paced_by`), set by the request
around the run: ADK runs the agent in the request's task or in a task started from it, and a
task starts with a copy of its creator's context. It is read for every streamed response, so
it must cost nothing: asking ADK for the invocation context instead
(``CallbackContext.get_invocation_context``) copies it, which was a third of the bridge's own
CPU per delta with fifty chats on one worker (docs/internals/performance-notes.md; pinned by
tests/e2e/test_slow_readers.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin


class RunSignal(asyncio.Event):
    """The abort signal of an SSE run, which also says whether the run's reader keeps up.

    Setting it (aborting the run) releases a model held for the reader: an aborted run must
    reach its end.

    An abort can be *held* (:meth:`hold`) while a tool that may have run waits for its result
    to be stored: ADK reads the signal as set only once every hold is released, so the run
    stops after the truth is recorded, never between a tool's run and its stored result
    (:mod:`.finish_tools`).
    """

    def __init__(self) -> None:
        super().__init__()
        self.reader_ready = asyncio.Event()
        """Set while the reader keeps up; the SSE writer clears it while its bytes wait."""
        self.reader_ready.set()
        self._holds: set[str] = set()
        self._asked = False

    def set(self) -> None:
        self._asked = True
        self.reader_ready.set()
        if not self._holds:
            super().set()

    @property
    def stop_asked(self) -> bool:
        """The run was asked to stop (it stops once nothing holds it)."""
        return self._asked

    def hold(self, *keys: str) -> None:
        """ADK does not see an abort until every one of ``keys`` is released."""
        if not self.is_set():
            self._holds.update(keys)

    def release(self, *keys: str) -> None:
        """``keys`` no longer hold the abort; an abort asked meanwhile takes effect now."""
        self._holds.difference_update(keys)
        if self._asked and not self._holds and not self.is_set():
            super().set()

    def release_all(self) -> None:
        self.release(*self._holds)


_run_signal: ContextVar[RunSignal | None] = ContextVar("adk_asgi_run_signal", default=None)


@contextmanager
def paced_by(signal: RunSignal) -> Iterator[None]:
    """Runs started in this block (their agent tasks included) wait for ``signal``'s reader."""
    token = _run_signal.set(signal)
    try:
        yield
    finally:
        _run_signal.reset(token)


def run_signal() -> RunSignal | None:
    """The signal of the SSE run this task belongs to (``None`` outside one: live, tests)."""
    return _run_signal.get()


class PaceToReader(BasePlugin):
    """Holds each model response of an SSE run until the run's reader keeps up."""

    def __init__(self) -> None:
        super().__init__(name="adk_asgi_pace_to_reader")

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        signal = _run_signal.get()
        if signal is not None and not signal.reader_ready.is_set():
            await signal.reader_ready.wait()
        return None
