"""A live frame's head (``type`` and ``requestId``) is read the same way on every Python: how
deep msgspec decodes is the interpreter's recursion limit (about 1,000 levels on 3.11, 1,500
on 3.12, 10,000 on 3.13), so the bridge bounds the nesting it reads itself."""

from __future__ import annotations

import json

import pytest

from adk_asgi.serving.checks import FrameRefused, frame_head
from adk_asgi.wire.decoding import MAX_DEPTH, READABLE_DEPTH

DEEP = f"the JSON is nested deeper than {MAX_DEPTH} levels"


def frame_nested(depth: int) -> str:
    """A ``send`` frame whose nesting is ``depth`` levels, its own object counted."""
    head = json.dumps({"type": "send", "requestId": "r0"})[:-1]
    return head + ', "x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def refused(frame: str) -> FrameRefused:
    with pytest.raises(FrameRefused) as caught:
        frame_head(frame)
    return caught.value


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, READABLE_DEPTH])
def test_a_frame_too_deep_but_readable_is_refused_naming_its_request(depth: int) -> None:
    refusal = refused(frame_nested(depth))
    assert (refusal.request_id, refusal.reason) == ("r0", DEEP)


@pytest.mark.parametrize("depth", [READABLE_DEPTH + 1, 1_200, 5_000, 100_000])
def test_a_frame_deeper_than_the_readable_depth_is_refused_unread_on_every_python(
    depth: int,
) -> None:
    """1,200 and 5,000 levels decode on 3.12 and 3.13 (not on 3.11): a frame was named by
    its requestId there and not on 3.11."""
    refusal = refused(frame_nested(depth))
    assert (refusal.request_id, refusal.reason) == ("", DEEP)


def test_a_frame_within_the_depth_limit_has_its_head_read() -> None:
    assert frame_head(frame_nested(MAX_DEPTH)) == ("send", "r0")
