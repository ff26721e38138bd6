"""The bridge's ADK plugins, registered as one.

ADK's ``PluginManager`` awaits each callback of every plugin in turn, the base class's no-ops
included: with the bridge's seven plugins, a streamed delta went through 14 callback calls
(``after_model_callback`` and ``on_event_callback`` of each), 10 of them no-ops, about
2 µs a delta, 1.7 % of a 1,000-delta answer in process (docs/internals/performance-notes.md). As one
plugin, ADK calls the chain once per callback, and the chain calls only the members that define it.

The members keep their order and ADK's rules: a callback that may answer (``before_tool``,
``on_event``...) stops at the first member that returns something, as ADK stops at the first
plugin; a notification (``on_agent_error``, ``on_run_error``) reaches every member, one that
raises being logged, as ADK does. (ADK also sends ``on_tool_error_callback`` to every plugin,
whatever they return, for a tool call cancelled mid-run; the chain would stop at a member that
answers. Only one member defines it, and the chain calls that one directly.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, get_args

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.plugins.plugin_manager import PluginCallbackName

from adk_asgi.errors import log_failure

CALLBACKS: Final[tuple[str, ...]] = get_args(PluginCallbackName)
NOTIFICATIONS: Final = frozenset({"on_agent_error_callback", "on_run_error_callback"})
"""The callbacks ADK sends to every plugin whatever they return or raise."""

Callback = Callable[..., Awaitable[Any]]

BRIDGE_ORDER: Final[tuple[tuple[str, str], ...]] = (
    (
        "adk_asgi_invalid_calls",
        "before_tool, first: it marks a call ADK will refuse, which the live gate reads",
    ),
    (
        "adk_asgi_as_returned",
        "after_tool, before any member that may answer: it sees what the tool itself returned;"
        " it never answers, so the chain goes on",
    ),
    (
        "adk_asgi_readable_requests",
        "before_model, first: what it makes readable is what the next two read",
    ),
    (
        "adk_asgi_results_in_call_order",
        "before_model, after readable_requests: it orders the request as it will be sent",
    ),
    (
        "adk_asgi_pause_for_client_tools",
        "before_model, after the request is made: it answers (ends an SSE run) while a browser"
        " call is open, which stops the chain",
    ),
    (
        "adk_asgi_live_tool_gate",
        "before_tool, after invalid_calls: it holds a call until the user answers",
    ),
    (
        "adk_asgi_finish_ran_tools",
        "before_tool, after the live gate: a call that awaits the user holds no abort",
    ),
    ("adk_asgi_pace_to_reader", "after_model, alone: it holds the model's next response"),
)
"""The bridge's plugins in the order they run, each with why it stands there: the constraints
between members that define the same callback (a member that answers stops the chain for those
after it). :class:`PluginChain` runs its members in the order it is given."""


class PluginChain(BasePlugin):
    """``members`` as one plugin, in the order of ``order`` (``(name, why)`` rows, as
    :data:`BRIDGE_ORDER`) when it is given, else in theirs. With an ``order``, the members'
    names must be its names, each once."""

    def __init__(
        self,
        name: str,
        members: Sequence[BasePlugin],
        order: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(name=name)
        if order is not None:
            members = in_order(members, [row[0] for row in order])
        self.members = tuple(members)
        for callback in CALLBACKS:
            defined = [getattr(m, callback) for m in self.members if defines(m, callback)]
            if len(defined) == 1:
                setattr(self, callback, defined[0])  # called as it is: no layer in between
            elif callback in NOTIFICATIONS:
                setattr(self, callback, _notify_all(callback, defined))
            elif defined:
                setattr(self, callback, _first_answer(defined))
            # none: the base class's no-op, as for any plugin

    async def close(self) -> None:
        """Close every member; the first failure is raised after all were closed."""
        failures: list[BaseException] = []
        for member in self.members:
            try:
                await member.close()
            except Exception as exc:  # (a cancellation is not one: it goes on up at once)
                failures.append(exc)
        if failures:
            raise failures[0]


def in_order(members: Sequence[BasePlugin], names: Sequence[str]) -> list[BasePlugin]:
    """``members`` in the order of ``names``, which must name each of them once."""
    by_name = {member.name: member for member in members}
    if len(by_name) != len(members) or sorted(by_name) != sorted(names):
        raise ValueError(
            f"the plugins {sorted(m.name for m in members)} are not those ordered: {sorted(names)}"
        )
    return [by_name[name] for name in names]


def defines(plugin: BasePlugin, callback: str) -> bool:
    """Whether ``plugin``'s class has a ``callback`` of its own (not the base class's no-op)."""
    return getattr(type(plugin), callback) is not getattr(BasePlugin, callback)


def _first_answer(members: Sequence[Callback]) -> Callback:
    async def chained(**kwargs: Any) -> Any:
        for member in members:
            answer = await member(**kwargs)
            if answer is not None:
                return answer
        return None

    return chained


def _notify_all(callback: str, members: Sequence[Callback]) -> Callback:
    async def notified(**kwargs: Any) -> None:
        for member in members:
            try:
                await member(**kwargs)
            except Exception as exc:
                log_failure(f"a plugin failed in {callback}", exc)

    return notified
