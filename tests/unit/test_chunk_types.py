"""Every chunk type has its reducer branch and its encoder decision: a new struct in
``adk_asgi/wire/chunks.py`` fails here until it is modelled by the client's state machine
(``adk_asgi/convert/ui_message.py``) and decided for each AI SDK version (``ChunkEncoder``), as
docs/internals/architecture.md's recipe for a new chunk type says."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import msgspec

from adk_asgi.convert import ui_message
from adk_asgi.convert.ui_message import NOT_MODELLED, StreamingMessage
from adk_asgi.wire import chunks as c
from adk_asgi.wire.encoding import ChunkEncoder
from tests.chunk_samples import EVERY_CHUNK

PACKAGE = Path(ui_message.__file__).resolve().parents[1]


def tag(chunk_type: type[Any]) -> str:
    if chunk_type is c.DataChunk:
        return "data-*"
    tagged: str = chunk_type.__struct_config__.tag
    return tagged


TAGS = {tag(t) for t in c.UIMessageChunk.__args__}  # type: ignore[attr-defined]


def reducer_branches() -> set[str]:
    """The chunk types ``StreamingMessage.apply`` names in a branch of its own: ``kind ==
    "x"``, ``kind in ("x", …)``, and ``kind.startswith("data-")`` as ``data-*``."""
    tree = ast.parse(inspect.getsource(StreamingMessage.apply).lstrip())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name):
            if node.left.id != "kind":
                continue
            for right in node.comparators:
                values = right.elts if isinstance(right, ast.Tuple) else [right]
                found |= {v.value for v in values if isinstance(v, ast.Constant)}
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "kind"
            and [a.value for a in node.args if isinstance(a, ast.Constant)] == ["data-"]
        ):
            found.add("data-*")
    return {f for f in found if isinstance(f, str)}


def test_the_samples_hold_every_chunk_type() -> None:
    assert {tag(type(chunk)) for chunk in EVERY_CHUNK} == TAGS


def test_every_chunk_type_has_a_reducer_branch_or_is_named_not_modelled() -> None:
    branches = reducer_branches()
    assert branches - TAGS == set(), "a branch for a type that is no chunk type"
    assert TAGS - branches == NOT_MODELLED
    assert branches & NOT_MODELLED == set()


def test_a_type_not_modelled_leaves_the_message_as_it_was() -> None:
    state = StreamingMessage.begin(None, "m1")
    state.apply({"type": "start-step"})
    before = msgspec.json.encode(state.message)
    for chunk in EVERY_CHUNK:
        if tag(type(chunk)) in NOT_MODELLED:
            assert state.apply(msgspec.to_builtins(chunk)) is False
    assert msgspec.json.encode(state.message) == before


def test_the_package_sends_no_type_the_reducer_does_not_model() -> None:
    """``abort`` aside (the client reads it without changing the message), a type in
    ``NOT_MODELLED`` is constructed nowhere in the package but where it is defined."""
    names = {t.__name__ for t in c.UIMessageChunk.__args__ if tag(t) in NOT_MODELLED - {"abort"}}  # type: ignore[attr-defined]
    made = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "wire" / "chunks.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                called = node.func
                name = (
                    called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
                )
                if name in names:
                    made.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {name}")
    assert made == []


DECISIONS: dict[str, tuple[str, str, str]] = {
    # type: what an ai@5, ai@6 and ai@7 client gets of the sample (tests/chunk_samples.py)
    "start": ("sent", "sent", "sent"),
    "finish": ("as other", "as other", "sent"),  # the sample's finish reason is "interrupted"
    "abort": ("sent", "sent", "sent"),
    "start-step": ("sent", "sent", "sent"),
    "finish-step": ("sent", "sent", "sent"),
    "error": ("sent", "sent", "sent"),
    "message-metadata": ("sent", "sent", "sent"),
    "text-start": ("sent", "sent", "sent"),
    "text-delta": ("sent", "sent", "sent"),
    "text-end": ("sent", "sent", "sent"),
    "reasoning-start": ("sent", "sent", "sent"),
    "reasoning-delta": ("sent", "sent", "sent"),
    "reasoning-end": ("sent", "sent", "sent"),
    "reasoning-file": ("dropped", "dropped", "sent"),
    "source-url": ("sent", "sent", "sent"),
    "source-document": ("sent", "sent", "sent"),
    "file": ("sent", "sent", "sent"),
    "data-*": ("sent", "sent", "sent"),
    "custom": ("dropped", "dropped", "sent"),
    "tool-input-start": ("sent", "sent", "sent"),
    "tool-input-delta": ("sent", "sent", "sent"),
    "tool-input-available": ("sent", "sent", "sent"),
    "tool-input-error": ("sent", "sent", "sent"),
    "tool-approval-request": ("as error", "sent", "sent"),
    "tool-approval-response": ("dropped", "dropped", "sent"),
    "tool-output-denied": ("as tool-output-error", "sent", "sent"),
    "tool-output-available": ("sent", "sent", "sent"),
    "tool-output-error": ("sent", "sent", "sent"),
    "reset-step": ("dropped", "dropped", "sent"),
    "steering-message": ("dropped", "dropped", "sent"),
}


def decision(encoder: ChunkEncoder, chunk: c.UIMessageChunk) -> str:
    admitted = encoder.admit(chunk)
    if admitted is chunk:
        return "sent"
    if admitted is None:
        return "dropped"
    if isinstance(admitted, c.Finish):
        return f"as {admitted.finish_reason}"
    return f"as {tag(type(admitted))}"


def test_every_chunk_type_has_an_encoder_decision_for_each_ai_sdk_version() -> None:
    assert set(DECISIONS) == TAGS
    made = {}
    for chunk in EVERY_CHUNK:
        encoders = [ChunkEncoder(5), ChunkEncoder(6), ChunkEncoder(7)]
        made.setdefault(tag(type(chunk)), tuple(decision(e, chunk) for e in encoders))
    assert made == DECISIONS
