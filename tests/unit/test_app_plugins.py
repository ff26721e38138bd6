"""The app's plugins as the live gate must see their results (``live/app_plugins.py``): a
plugin that replaces a tool's result is reported to the gate, and stays the app's plugin in
everything else."""

from __future__ import annotations

import copy
from typing import Any

from google.adk.plugins.base_plugin import BasePlugin

from adk_asgi.live.app_plugins import ReportedPlugin, reported
from adk_asgi.live.tools import LiveToolGate


class Gate(LiveToolGate):
    def __init__(self) -> None:
        super().__init__()
        self.reported: list[Any] = []

    async def answered_by_a_plugin(self, tool: Any, tool_context: Any, result: Any) -> None:
        self.reported.append((tool, tool_context, result))


class Replacing(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="replacing")
        self.setting = "kept"

    async def before_model_callback(self, **kwargs: Any) -> Any:
        return "the plugin's own"

    async def after_tool_callback(self, *, tool: Any, result: Any, **kwargs: Any) -> Any:
        return {"replaced": result} if tool == "replace" else None


class Quiet(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="quiet")


async def test_a_replaced_result_is_reported_to_the_gate_and_answers_adk() -> None:
    gate = Gate()
    plugin = ReportedPlugin(Replacing(), gate)
    kept = await plugin.after_tool_callback(tool="keep", tool_args={}, tool_context="ctx", result=1)
    replaced = await plugin.after_tool_callback(
        tool="replace",
        tool_args={},
        tool_context="ctx",
        result=2,
    )
    assert (kept, replaced) == (None, {"replaced": 2})
    assert gate.reported == [("replace", "ctx", {"replaced": 2})]


async def test_in_everything_else_it_is_the_apps_plugin() -> None:
    inner = Replacing()
    plugin = ReportedPlugin(inner, Gate())
    assert (plugin.name, plugin.setting, plugin.plugin) == ("replacing", "kept", inner)
    assert await plugin.before_model_callback(callback_context=None, llm_request=None) == (
        "the plugin's own"
    )
    assert copy.deepcopy(plugin).setting == "kept"  # (a copy looks for attributes early)


def test_only_plugins_that_answer_after_a_tool_are_wrapped() -> None:
    quiet, replacing = Quiet(), Replacing()
    wrapped = reported([quiet, replacing], Gate())
    assert wrapped[0] is quiet
    assert isinstance(wrapped[1], ReportedPlugin) and wrapped[1].plugin is replacing
