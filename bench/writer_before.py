"""The SSE writer as it was before the first words after a pause went out at once, for the A/B
in ``bench.throughput`` and ``bench.concurrency`` (``BENCH_WRITER=before`` in
``bench.harness.serve``).

Then a chunk went out at once only when the last *write* was an interval old; now also when the
last *chunk* came an interval ago (:mod:`adk_asgi.sse.writer`). Everything else is the same
class.
"""

from __future__ import annotations

from adk_asgi.sse import response as sse
from adk_asgi.sse.writer import CoalescedWriter


class WriterBefore(CoalescedWriter):
    async def put(self, data: bytes) -> None:
        self._held.append(data)
        self._size += len(data)
        if not self._due.is_set():
            if self._loop.time() >= self._not_before:
                await self.write()
                return
            self._due.set()
        if self._size >= self.max_buffer and not self._closed:
            self._room.clear()
            self.ready.clear()
            await self._room.wait()


def install() -> None:
    """Every ``SSEResponse`` of this process writes with :class:`WriterBefore`."""
    setattr(sse, "CoalescedWriter", WriterBefore)  # noqa: B010 - sse/response.py's own name for it
