"""Which AI SDK version an app may serve its agent to, decided once at start-up.

AI SDK 5 clients have no approvals: ``tool-approval-request`` and ``tool-output-denied`` are
not in ai@5's ``uiMessageChunkSchema``, and ``useChat`` has no ``addToolApprovalResponse``. An
agent whose tools ask for approval would stop at its first such call with nothing the user can
answer, so ``AdkApp(ai_sdk_version=5)`` refuses it when it is built rather than when a user hits
the call (docs/ai-sdk-versions.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from adk_asgi.adk.private import confirmation_rule
from adk_asgi.hitl.tools import ClientTool
from adk_asgi.wire.encoding import SDK_VERSIONS, SdkVersion

__all__ = ["SdkVersion", "checked_sdk_version"]


def checked_sdk_version(version: object, *roots: object) -> SdkVersion:
    """``version`` when the app can serve the agent trees ``roots`` to clients of that AI SDK
    major version; ``ValueError`` saying why not otherwise."""
    if version not in SDK_VERSIONS or isinstance(version, bool):
        raise ValueError(f"ai_sdk_version must be one of 5, 6, 7; got {version!r}")
    if version == 5:
        asking = sorted({why for root in roots for why in _approvals(root)})
        if asking:
            raise ValueError(
                "ai_sdk_version=5: AI SDK 5 clients cannot approve or deny a tool call (ai@5 "
                "has no approval chunks), but these tools ask for approval: "
                + ", ".join(asking)
                + ". Serve this agent with ai_sdk_version=6 or 7, or take the approvals off "
                "(docs/ai-sdk-versions.md)."
            )
    return version


def _approvals(root: object) -> Iterator[str]:
    """``'name' (how it asks)`` for every tool, toolset and workflow node of the tree that asks
    the user for approval before it runs."""
    todo, seen = [root], set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for tool in getattr(node, "tools", None) or []:
            if isinstance(tool, ClientTool) and tool.require_approval is not False:
                yield f"{tool.name!r} (client_tool require_approval)"
            elif _set(confirmation_rule(tool)):
                yield f"{_name(tool)!r} (require_confirmation)"
        if _set(getattr(node, "require_confirmation", False)):  # a workflow FunctionNode
            yield f"{_name(node)!r} (require_confirmation)"
        todo.extend(getattr(node, "sub_agents", None) or [])
        graph = getattr(node, "graph", None)
        todo.extend(getattr(graph, "nodes", None) or [])
        wrapped = getattr(node, "agent", None)
        if wrapped is not None:
            todo.append(wrapped)


def _set(rule: Any) -> bool:
    """A rule that may ask: ``True``, or a function of the call's arguments."""
    return callable(rule) or rule is True


def _name(thing: object) -> str:
    return str(getattr(thing, "name", None) or type(thing).__name__)
