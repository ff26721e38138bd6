"""A call the server's policy denies without asking the user: an automatic denial (sans-I/O).

ADK has no such decision: ``require_confirmation``'s function only answers whether to *ask*,
and anything but ``True`` lets the call run (ADK's ``apply_confirmation_gate``). A policy that
refuses outright answers the call itself, from a ``before_tool_callback`` (or the tool), and
ADK gives that answer to the model as the call's result. :func:`deny` is that answer, in the
words the AI SDK gives its own model for a denied call (``{"type": "execution-denied",
"reason": …}``), so the bridge can tell it from a tool's failure in the stream and in the
stored session alike: an ai@7 client is shown an automatic denial (``output-denied``, the
approval ``{isAutomatic: true, approved: false, reason}``), an ai@6 client the call's error
with the reason (docs/hitl.md#denied-without-asking).
"""

from __future__ import annotations

from typing import Any, Final

DENIED_TYPE: Final = "execution-denied"


def deny(reason: str | None = None) -> dict[str, Any]:
    """The answer that denies a call without asking the user: return it from a
    ``before_tool_callback`` (ADK then runs neither the tool nor its confirmation)::

        def only_admins(tool, args, tool_context):
            if tool.name == "pay" and tool_context.state.get("role") != "admin":
                return deny("Only admins can send payments")

    The model reads it as the call's result; ``reason`` is shown to the user."""
    if reason is not None and not isinstance(reason, str):
        raise TypeError(f"a denial's reason is a string, not {type(reason).__name__}")
    return {"type": DENIED_TYPE} if reason is None else {"type": DENIED_TYPE, "reason": reason}


def denial(response: Any) -> tuple[str | None] | None:
    """``(reason,)`` when ``response`` (a call's result) is :func:`deny`'s answer, else
    ``None``."""
    if not isinstance(response, dict) or response.get("type") != DENIED_TYPE:
        return None
    if not set(response) <= {"type", "reason"}:
        return None
    reason = response.get("reason")
    if reason is not None and not isinstance(reason, str):
        return None
    return (reason,)
