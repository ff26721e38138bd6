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


class PluginChain(BasePlugin):
    """``members`` as one plugin, in their order."""

    def __init__(self, name: str, members: Sequence[BasePlugin]) -> None:
        super().__init__(name=name)
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
