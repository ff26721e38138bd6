"""``bench.throughput``'s last part: the per-chunk cost of turning an ADK partial event into
bytes, ours against ADK's server's.

Timed on real events captured from a run of the benchmark agent, so the converter sees exactly
what it sees in production. The whole stream is fed in order to one converter, because its
cost may depend on how much was streamed before (it keeps the text streamed so far).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import pydantic_core
from google.adk.events.event import Event

from adk_asgi import ChunkEncoder, EventConverter

try:  # what ADK's /run_sse does per event (private helpers; the reference is optional)
    from google.adk.auth.auth_credential import _redact_credential_secrets
    from google.adk.events._internal_metadata import public_event

    HAVE_RUN_SSE_HELPERS = True
except ImportError:  # pragma: no cover - a later ADK may move them
    HAVE_RUN_SSE_HELPERS = False


def _adk_asgi(partials: Sequence[Event]) -> None:
    converter = EventConverter(message_id="msg_bench")
    encoder = ChunkEncoder()
    converter.start()
    for event in partials:
        b"".join([encoder.sse(chunk) for chunk in converter.feed(event)])


def _model_dump_json(partials: Sequence[Event]) -> None:
    for event in partials:
        b"data: " + event.model_dump_json(exclude_none=True, by_alias=True).encode() + b"\n\n"


def _adk_run_sse(partials: Sequence[Event]) -> None:
    for event in partials:
        data = public_event(event).model_dump(exclude_none=True, by_alias=True, mode="json")
        f"data: {pydantic_core.to_json(_redact_credential_secrets(data)).decode()}\n\n"


def _per_event_us(work: Callable[[Sequence[Event]], None], partials: Sequence[Event]) -> float:
    """Median over repeated passes (the whole stream each time), in µs per partial event."""
    passes = max(3, 20_000 // len(partials))
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        work(partials)
        times.append(time.perf_counter() - start)
    return statistics.median(times) / len(partials) * 1e6


def encode_costs(events: Sequence[Event]) -> dict[str, float]:
    """µs per partial event for each encoding, keyed by a label for the table."""
    partials = [event for event in events if event.partial]
    costs = {
        "adk_asgi: converter.feed + ChunkEncoder.sse": _per_event_us(_adk_asgi, partials),
        "ADK: event.model_dump_json(exclude_none, by_alias)": _per_event_us(
            _model_dump_json, partials
        ),
    }
    if HAVE_RUN_SSE_HELPERS:
        costs["ADK /run_sse: public_event + model_dump + redact + to_json"] = _per_event_us(
            _adk_run_sse, partials
        )
    return costs
