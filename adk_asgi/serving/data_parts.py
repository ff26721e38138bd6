"""``send_data``: a tool or a callback sends the page a ``data-<name>`` part as it runs.

The part must reach the stream in order — a progress card a tool sends shows before the tool's
result — and, unless it is transient, be stored where it was shown, so history rebuilds it in
place (docs/data-parts.md). Both come from one move: the part becomes an event of its own
(:mod:`adk_asgi.convert.data_parts`), put on the invocation's event queue, the one ADK's runner
drains in order — the events a tool or a callback makes are already on it, so the part comes
after the call that runs the tool and before the tool's result. The runner stores the event
(not a transient one: a partial event is never stored) and hands it to the transport, whose
converter shows it.

Live mode shows the part at once instead, from the tool pipeline: ADK hands a live tool's
result to the plugin before its event reaches the connection (:mod:`adk_asgi.live.tools`), so
an event would come after the result. The connection's ``LiveRequestQueue`` delivers it
(:class:`DataDelivery`) into the response under way, and names that response's message, which
the stored event is tagged with; its converter then does not show the event again.

ADK runs a root ``ParallelAgent``, ``SequentialAgent`` or ``LoopAgent`` (its classic, deprecated
agent trees) with no queue: the agents' events come straight from their generators, and a
part could be neither put in order among them nor stored where it was sent, so ``send_data``
refuses there. A root ``LlmAgent`` (its sub-agents, transfers included) and workflows have one.

The event is put on the queue without waiting for the runner to store it (as ADK's own
``_enqueue_event`` would for a complete event): ``send_data`` is a plain function, for sync
tools too; the queue keeps the order all the same.
"""

from __future__ import annotations

import asyncio
from typing import Any

from google.adk.agents.context import Context
from google.adk.events.event import Event

from adk_asgi.adk.private import event_queue, invocation_of
from adk_asgi.convert.data_parts import DataPartError, data_chunk, record
from adk_asgi.hitl import bookkeeping
from adk_asgi.wire.chunks import DataChunk

__all__ = ["DataDelivery", "DataPartError", "send_data"]


class DataDelivery:
    """What a transport's ``LiveRequestQueue`` is when it shows data parts itself (live mode)."""

    def deliver_data(self, chunk: DataChunk) -> str | None:
        """Show ``chunk`` in the response under way; the id of its message (``None``: no
        response is under way, and the part is not shown)."""
        raise NotImplementedError


def send_data(
    context: Context, name: str, data: Any, *, id: str | None = None, transient: bool = False
) -> None:
    """Send the page a ``data-<name>`` part from a tool (its ``ToolContext``) or a callback
    (its ``CallbackContext``), shown before whatever the agent does next.

    ``id``: a later part with the same name and id replaces this one in the message (a card
    that changes: loading, then done). ``transient``: only the page's ``onData`` sees it; it is
    not added to the message, nor stored. ``data``: any JSON value but ``null``, at most
    64 KiB of JSON. Raises :class:`DataPartError` for what no client could take, and
    ``RuntimeError`` outside a run of an ``AdkApp`` or off its event loop (a tool run in a
    thread pool).
    """
    chunk = data_chunk(name, data, id=id, transient=transient)
    invocation = invocation_of(context)  # (not get_invocation_context(): it copies)
    queue = event_queue(invocation)
    if queue is None:  # (ADK runs the classic agent trees without one: see the module)
        raise RuntimeError(
            "send_data is called from a tool or a callback of an agent that ADK runs on its event"
            " queue: an LlmAgent or a workflow at the root, not a classic ParallelAgent,"
            " SequentialAgent or LoopAgent tree"
        )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError("send_data is called on the agent's event loop") from None
    tags: dict[str, Any] = {"data_part": record(chunk)}
    live = invocation.live_request_queue
    if isinstance(live, DataDelivery):
        message_id = live.deliver_data(chunk)
        if chunk.transient or message_id is None:
            return
        tags["message_id"] = message_id
    run_config = invocation.run_config
    run_tags = (run_config.custom_metadata or {}).get(bookkeeping.KEY) if run_config else None
    event = Event(
        invocation_id=invocation.invocation_id,
        author=context.agent_name or "model",
        branch=invocation.branch,
        partial=bool(chunk.transient),
        # (the run's tags, the message ids, are merged into an event's only where it has none)
        custom_metadata=bookkeeping.with_tags({bookkeeping.KEY: run_tags or {}}, **tags),
    )
    # a complete event's signal, which nobody waits for (see the module)
    queue.put_nowait((event, None if event.partial else asyncio.Event()))
