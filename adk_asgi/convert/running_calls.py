"""The calls the server is running in one response, failed when the run raises (sans-I/O).

A run that raises leaves a call it was running without a result, and none will come: the tool
card (:mod:`.tool_cards`) ends with the error the client is shown for the answer
(:meth:`.ToolCards.fail_running`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from adk_asgi.convert.failures import FailedCall
from adk_asgi.convert.tool_looks import dynamic, waits_for_approval
from adk_asgi.hitl.interrupts import ASKING_THE_USER
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import ToolOutputError


class RunningCalls:
    """The calls the server runs in one response, until their result (sans-I/O).

    Part of :class:`~.tool_cards.ToolCards`: a run that raises leaves each of these without a
    result, and none will come (ADK stores none for a tool that raised, nor for the step's calls
    cut with it), so they ran and failed: each ends with the error the client is shown for the
    answer, and is kept for the answer's record (:mod:`.failures`). A call runs from the moment it
    is announced with nothing asked of the page (not a browser tool, not its approval, not ADK's
    questions for the user, not a long-running call) until its result, or from the request that
    approved it (ADK's confirmation, live mode's gate); a call whose tool asks the user waits
    instead.
    """

    def __init__(self, policy: ToolPolicy | None) -> None:
        self.policy = policy
        self._running: dict[str, FailedCall] = {}
        """By the id the client knows each call by."""
        self.failed: list[FailedCall] = []
        """The calls the run was running when it raised (:meth:`fail`)."""

    def announced(self, call: FailedCall, args: dict[str, Any]) -> None:
        """A call announced (not long-running): it runs now unless the page answers it."""
        name = call.name
        if name in ASKING_THE_USER or waits_for_approval(self.policy, name, args):
            return
        if self.policy is None or not self.policy.is_client_tool(name):
            self._running[call.id] = call

    def approved(self, call: FailedCall) -> None:
        """A call approved in this request: the server runs it now."""
        self._running[call.id] = call

    def asked(self, call_id: str) -> None:
        """The call's tool asks the user first: it waits, it does not run."""
        self._running.pop(call_id, None)

    def fail(self, error_text: str, settled: Collection[str]) -> list[ToolOutputError]:
        """The run raised: the calls still running (not ``settled``, those with a result shown)
        end with ``error_text``."""
        failed = [c for i, c in self._running.items() if i not in settled]
        self._running.clear()
        self.failed += failed
        return [
            ToolOutputError(
                tool_call_id=c.id, error_text=error_text, dynamic=dynamic(self.policy, c.name)
            )
            for c in failed
        ]
