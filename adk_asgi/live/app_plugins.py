"""The app's own plugins, as the live gate must see what they make of a tool's result.

ADK runs the plugins' ``after_tool_callback`` in order and stops at the first that answers: the
app's plugins come before the bridge's, so a plugin of the app that replaces a result (one that
redacts it) kept the live gate (:mod:`.tools`) from seeing that the call returned. Next to a call
waiting for the user, the step then never paused: the approval was never shown, and closed
unanswered once its wait ran out. Each of the app's plugins that has an ``after_tool_callback``
is registered in a :class:`ReportedPlugin`, which tells the gate the result it answered with.
"""

from __future__ import annotations

from typing import Any

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi.live.tools import LiveToolGate
from adk_asgi.serving.plugin_chain import CALLBACKS, defines


class ReportedPlugin(BasePlugin):
    """``plugin`` as it is, but for its answers to ``after_tool_callback``, told to ``gate``.
    Its name, callbacks and attributes are the plugin's."""

    def __init__(self, plugin: BasePlugin, gate: LiveToolGate) -> None:
        super().__init__(name=plugin.name)
        self.plugin = plugin
        self.gate = gate
        for name in CALLBACKS:
            if name != "after_tool_callback":
                setattr(self, name, getattr(plugin, name))

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        answer = await self.plugin.after_tool_callback(
            tool=tool, tool_args=tool_args, tool_context=tool_context, result=result
        )
        if answer is not None:
            await self.gate.answered_by_a_plugin(tool, tool_context, answer)
        return answer

    async def close(self) -> None:
        await self.plugin.close()

    def __getattr__(self, name: str) -> Any:
        """What ``BasePlugin`` does not declare (the plugin's own attributes) is the plugin's."""
        if name == "plugin":  # (not set yet: a copy being made)
            raise AttributeError(name)
        return getattr(self.plugin, name)


def reported(plugins: list[BasePlugin], gate: LiveToolGate) -> list[BasePlugin]:
    """``plugins``, each that answers ``after_tool_callback`` in a :class:`ReportedPlugin`."""
    return [
        ReportedPlugin(plugin, gate) if defines(plugin, "after_tool_callback") else plugin
        for plugin in plugins
    ]
