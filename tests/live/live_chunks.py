"""The demo's live answers as tests compare them: text deltas folded (live coalesces them as
load goes), ids normalized."""

from __future__ import annotations

from typing import Any

from tests.support import normalize_ids

HELLO = (
    'You said: "hello". I can try "weather in Paris", "pay 5 to alice", "play track 3" or'
    ' "where am i" (join them with "and" or "then").'
)
"""The demo model's whole answer to "hello" (docs/testing.md#the-demo-grammar)."""


def closing(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        *([{"type": "text-delta", "id": "<block1>", "delta": "~"}]),
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
    ]


def squash(chunks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Chunks with the text deltas folded into one marker, and the text they spelled."""
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    folded: list[dict[str, Any]] = []
    for chunk in normalize_ids(chunks):
        if chunk["type"] == "text-delta":
            if folded[-1]["type"] == "text-delta":
                continue
            chunk = {**chunk, "delta": "~"}
        folded.append(chunk)
    return folded, text


def joined(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``chunks`` with each run of text deltas of one block joined into one delta."""
    result: list[dict[str, Any]] = []
    for chunk in chunks:
        last = result[-1] if result else {}
        if chunk["type"] == last.get("type") == "text-delta" and chunk["id"] == last["id"]:
            result[-1] = {**last, "delta": last["delta"] + chunk["delta"]}
        else:
            result.append(chunk)
    return result
