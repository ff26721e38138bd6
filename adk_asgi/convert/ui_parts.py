"""The parts of a ``UIMessage`` as the AI SDK client reads and updates them (JSON dicts).

Shared by the client's reducer (:mod:`.ui_message`), its ``sendAutomaticallyWhen`` helpers
(:mod:`.auto_send`) and :class:`~.ChatClient`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

Chunk: TypeAlias = dict[str, Any]
"""One chunk of the UI message stream, as parsed from its ``data:`` line."""
UIMessageDict: TypeAlias = dict[str, Any]
"""A ``UIMessage`` as JSON: ``{"id", "role", "parts", "metadata"?}``."""

MISSING: Final[Any] = object()
"""A key the chunk does not have: JavaScript's ``undefined``, as opposed to JSON ``null``."""

OUTPUT_STATES: Final = ("output-available", "output-error")


def is_tool_part(part: Mapping[str, Any]) -> bool:
    """``isToolUIPart``: a static ``tool-<name>`` part or a ``dynamic-tool`` part."""
    kind = part.get("type", "")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def is_static_tool_part(part: Mapping[str, Any]) -> bool:
    kind = part.get("type", "")
    return isinstance(kind, str) and kind.startswith("tool-")


def tool_name(part: Mapping[str, Any]) -> str:
    """The tool of a tool part, static (``tool-<name>``) or dynamic (``toolName``)."""
    return str(part["toolName"] if part["type"] == "dynamic-tool" else part["type"][5:])


def put(target: dict[str, Any], key: str, value: Any) -> None:
    """``target[key] = value`` in JavaScript: assigning ``undefined`` leaves the key out."""
    if value is MISSING:
        target.pop(key, None)
    else:
        target[key] = value


def last_step(parts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    start = max((i for i, p in enumerate(parts) if p.get("type") == "step-start"), default=-1)
    return list(parts[start + 1 :])


def update_tool_part(
    parts: list[dict[str, Any]],
    call_id: str,
    tool_name: str,
    state: str,
    *,
    dynamic: bool,
    existing: dict[str, Any] | None = None,
    input: Any = MISSING,
    output: Any = MISSING,
    error_text: Any = MISSING,
    raw_input: Any = MISSING,
    input_encoding: Any = MISSING,
    preliminary: Any = MISSING,
    provider_executed: Any = MISSING,
    provider_metadata: Any = MISSING,
    title: Any = MISSING,
    tool_metadata: Any = MISSING,
) -> None:
    """``updateToolPart`` / ``updateDynamicToolPart``: update the call's part of the current
    step of ``parts`` in place, or append a new one (a field left :data:`MISSING` is
    ``undefined``: the part loses that key)."""
    part = existing
    if part is None:
        part = next(
            (
                p
                for p in last_step(parts)
                if p.get("toolCallId") == call_id
                and (p.get("type") == "dynamic-tool" if dynamic else is_static_tool_part(p))
            ),
            None,
        )
    metadata_key = "resultProviderMetadata" if state in OUTPUT_STATES else "callProviderMetadata"
    if part is None:
        part = (
            {"type": "dynamic-tool", "toolName": tool_name}
            if dynamic
            else {"type": f"tool-{tool_name}"}
        )
        part.update(toolCallId=call_id, state=state)
        for key, value in [
            ("title", title),
            ("toolMetadata", tool_metadata),
            ("input", input),
            ("inputEncoding", input_encoding),
            ("output", output),
            ("rawInput", raw_input),
            ("errorText", error_text),
            ("providerExecuted", provider_executed),
            ("preliminary", preliminary),
        ]:
            if value is not MISSING and (key != "inputEncoding" or value is not None):
                part[key] = value
        if provider_metadata is not MISSING and provider_metadata is not None:
            part[metadata_key] = provider_metadata
        parts.append(part)
        return
    part["state"] = state
    if dynamic:
        part["toolName"] = tool_name
    else:
        part["type"] = f"tool-{tool_name}"
    put(part, "input", input)
    put(part, "output", output)
    put(part, "errorText", error_text)
    put(part, "rawInput", raw_input)
    put(part, "inputEncoding", MISSING if input_encoding is None else input_encoding)
    put(part, "preliminary", preliminary)
    if title is not MISSING:
        part["title"] = title
    if tool_metadata is not MISSING:
        part["toolMetadata"] = tool_metadata
    if provider_executed is not MISSING and provider_executed is not None:
        part["providerExecuted"] = provider_executed
    if provider_metadata is not MISSING and provider_metadata is not None:
        part[metadata_key] = provider_metadata
