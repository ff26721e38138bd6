"""Over SSE, a step's later calls held until the next event says whether they ask (sans-I/O).

The tool cards (:mod:`.tool_cards`) decide *what* the client is shown of a call; this is part
of *when*: each approval request right after its own call, as the AI SDK's own server sends it.
"""

from __future__ import annotations

from google.adk.events.event import Event

from adk_asgi.convert.tool_cards import ToolCards
from adk_asgi.hitl.pending import CONFIRMATION_TOOL
from adk_asgi.wire.chunks import ToolApprovalRequest, UIMessageChunk


class HeldCalls:
    """Over SSE, a step's later calls held until the next event says whether they ask (sans-I/O).

    The AI SDK's own server requests each approval right after its call. ADK records a step's
    calls in one event and their confirmation requests in the next, so the converter
    (:class:`~.events.EventConverter`) holds the chunks of a step's second and later calls until
    that next event: when it asks approvals, each request goes out right after its call; when it
    does not, the calls go out as they were.
    """

    def __init__(self) -> None:
        self.held: list[tuple[str, list[UIMessageChunk]]] = []
        """Each held call's id and its chunks, in call order (an app's data part sent
        meanwhile joins them with no id, :mod:`.data_parts`)."""

    def __bool__(self) -> bool:
        return bool(self.held)

    def hold(self, call_id: str, chunks: list[UIMessageChunk]) -> None:
        self.held.append((call_id, chunks))

    def release(self) -> list[UIMessageChunk]:
        held, self.held = self.held, []
        return [chunk for _, chunks in held for chunk in chunks]

    def with_approvals(self, event: Event, cards: ToolCards) -> list[UIMessageChunk] | None:
        """If ``event`` asks approvals for the step's calls: the held calls released, each
        followed by its request. ``None`` when it asks none."""
        asks = [c for c in event.get_function_calls() if c.name == CONFIRMATION_TOOL]
        if event.partial or not asks:
            return None
        requests: dict[str, list[UIMessageChunk]] = {}
        for ask in asks:
            chunks: list[UIMessageChunk] = []
            cards.call(ask, event, chunks)
            for chunk in chunks:
                if isinstance(chunk, ToolApprovalRequest):
                    requests.setdefault(chunk.tool_call_id, []).append(chunk)
        held, self.held = self.held, []
        held_ids = {call_id for call_id, _ in held}
        out: list[UIMessageChunk] = []
        for call_id in [c for c in requests if c not in held_ids]:
            out.extend(requests.pop(call_id))  # a call sent before the held ones
        for call_id, chunks in held:
            out.extend(chunks + requests.pop(call_id, []))
        for rest in requests.values():
            out.extend(rest)
        return out
