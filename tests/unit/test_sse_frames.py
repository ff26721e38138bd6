"""The one SSE reader and writer (adk_asgi.wire.sse_frames): it reads a body as the AI SDK client's
``eventsource-parser`` does, however the body is cut into pieces."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from adk_asgi.testing import parse_sse_chunks
from adk_asgi.wire.encoding import SSE_CUT_SHORT, SSE_DONE, sse_events
from adk_asgi.wire.sse_frames import DONE, SSEParser, sse_data, sse_event

BODY = (
    "\ufeff: keep-alive\r\n\r\n"
    'data: {"type":"start"}\r\n\r\n'
    "event: ignored\nid: 7\nretry: 10\n"
    'data:{"type":"text-delta",\n'
    'data:  "delta":"é€"}\r\r'
    "data\n\n"
    "data: [DONE]\n\n"
    'data: {"type":"after"}\n\n'
    'data: {"type":"unfinished"}\n'
)
EVENTS = [
    '{"type":"start"}',
    '{"type":"text-delta",\n "delta":"é€"}',
    "",
    DONE,
    '{"type":"after"}',
]


def test_a_body_reads_as_the_ai_sdk_client_reads_it() -> None:
    """LF, CR and CRLF end lines; ``data`` lines join with LF, one leading space dropped;
    comments, other fields and a byte-order mark are skipped; an unfinished event is none."""
    assert sse_data(BODY) == EVENTS
    assert sse_data(BODY.encode()) == EVENTS


@given(st.lists(st.integers(0, len(BODY.encode())), max_size=8))
def test_a_body_cut_anywhere_reads_the_same(cuts: list[int]) -> None:
    """Between any two bytes: inside a UTF-8 character, between the CR and LF of a line end."""
    data = BODY.encode()
    bounds = [0, *sorted(cuts), len(data)]
    parser = SSEParser()
    events = [e for a, b in itertools.pairwise(bounds) for e in parser.feed(data[a:b])]
    assert events == EVENTS


def test_what_is_written_reads_back() -> None:
    """The framing the server writes, read by the parser every reader uses."""
    assert sse_event(b'{"type":"start"}') == b'data: {"type":"start"}\n\n'
    assert SSE_DONE == b"data: [DONE]\n\n"
    assert sse_data(SSE_CUT_SHORT + SSE_DONE) == [
        '{"type":"error","errorText":"The answer was cut short: the server stopped writing it'
        ' before it ended."}',
        '{"type":"finish"}',
        DONE,
        DONE,
    ]
    assert sse_events([]) == b""


def test_the_test_client_reads_the_chunks_up_to_done() -> None:
    body = ': keep-alive\n\ndata: {"type":"start"}\r\n\r\ndata: [DONE]\n\ndata: {"type":"x"}\n\n'
    assert parse_sse_chunks(body) == [{"type": "start"}]
