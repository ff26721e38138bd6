"""Reading an SSE body back: its ``data:`` payloads, each with where its event ends."""

from __future__ import annotations


def sse_payloads(data: bytes) -> list[tuple[str, int]]:
    """The ``data:`` payloads of an SSE body, each with the offset where its event ends
    (comments, such as keep-alives, skipped)."""
    found: list[tuple[str, int]] = []
    start = 0
    while True:
        end = data.find(b"\n\n", start)
        if end < 0:
            return found
        for line in data[start:end].split(b"\n"):
            if line.startswith(b"data: "):
                found.append((line[6:].decode(), end + 2))
        start = end + 2
