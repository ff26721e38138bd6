"""A history part as the AI SDK's client keeps a dynamic tool's (sans-I/O).

The stream marks a dynamic tool's chunks ``dynamic: true`` (:func:`.tool_looks.dynamic`), and
the client's reducer builds a ``dynamic-tool`` part from them, along a branch of its own that
keeps the input differently from a static part's: a result (an output or an error) keeps no
``rawInput``, and a ``tool-input-error`` (a call ADK refused, a call cut short while its
arguments streamed) leaves its input as ``input`` in ai@6 as in ai@7. History builds each part
as a static one (:mod:`.history`), then :func:`as_dynamic` makes it what the client holds.
"""

from __future__ import annotations

from adk_asgi.wire.messages import ToolPart


def as_dynamic(part: ToolPart, name: str) -> ToolPart:
    """``part``, built as a static ``tool-<name>`` part, as the client keeps it as a
    ``dynamic-tool`` part."""
    part.type, part.tool_name = "dynamic-tool", name
    if part.state in ("output-available", "output-error"):
        if part.input is None and part.raw_input is not None:  # a tool-input-error's input
            part.input = part.raw_input
        part.raw_input = None
    return part
