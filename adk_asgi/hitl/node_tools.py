"""Workflows run as an agent's tool (ADK's ``NodeTool``) that wait for the user (sans-I/O).

An ``LlmAgent`` may take a ``Workflow`` (or any node) as a tool. ADK runs it on a branch of
the calling agent's own, ``<caller's branch>.<tool name>@<call id>``
(``tools/_node_tool.py`` ``_run_node_in_tool_context``). When a node in it yields
``RequestInput`` (or a node that requires confirmation asks), the question is an
``adk_request_input`` call on that branch, and the tool stops with ``NodeInterruptedError``:
the agent's call gets no response. The user's answer resumes the same invocation, which
resumes the workflow, and the tool's call gets its output then.

So an agent's call with no response is not always one a crashed server left: while a question
asked on its branch waits for the page, the call waits with it. It is neither closed as
interrupted nor answered by anyone but ADK; a new message that closes the question closes the
call too (the model must read an answer to every call it made).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Protocol, TypeVar


class _Call(Protocol):
    """A call as :class:`~.pending.ToolCall` holds it (not imported: that module uses this)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def long_running(self) -> bool: ...
    @property
    def branch(self) -> str: ...
    @property
    def answered_as(self) -> str: ...


def run_by_a_tool(path: str) -> bool:
    """Whether a node path with no parent is that of a node a tool ran: a tool runs its node
    under its call's id (``<name>@<call id>``), the runner under a number (``wf@1``: ADK keeps
    numeric run ids for those it makes). Over SSE a tool's node lies under the calling agent's
    path, never at the top; a live run gives its agent no path, and this tells."""
    _, _, run_id = path.rpartition("@")
    return not run_id.isdigit()


def runs_within(inner: _Call, outer: _Call) -> bool:
    """Whether ``inner`` was made inside the node that the tool call ``outer`` runs."""
    segment = f"{outer.name}@{outer.answered_as}"
    return segment in inner.branch.split(".")


C = TypeVar("C", bound=_Call)


def suspended(calls: Iterable[C], waiting: Iterable[_Call], responded: Collection[str]) -> list[C]:
    """The ``calls`` with no response whose node waits for the page: a question asked inside
    them is ``waiting`` (:meth:`~.pending.ChatState.waiting`)."""
    asked = [call for call in waiting if call.branch]
    if not asked:
        return []
    return [
        call
        for call in calls
        if call.id not in responded
        and not call.long_running
        and any(runs_within(inner, call) for inner in asked)
    ]
