"""The bridge's plugins as one ADK plugin (``serving/plugin_chain.py``): ADK's rules kept, with
only the members that define a callback called."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.plugins.plugin_manager import PluginManager

from adk_asgi import AdkApp
from adk_asgi.serving.plugin_chain import BRIDGE_ORDER, PluginChain
from adk_asgi.testing import ScriptedLlm


class Recorder(BasePlugin):
    def __init__(self, name: str, log: list[str], answer: Any = None) -> None:
        super().__init__(name=name)
        self.log = log
        self.answer = answer

    async def on_event_callback(self, **kwargs: Any) -> Any:
        self.log.append(f"{self.name} event")
        return self.answer

    async def on_run_error_callback(self, **kwargs: Any) -> None:
        self.log.append(f"{self.name} run error")
        if self.answer == "raise":
            raise RuntimeError("boom")

    async def close(self) -> None:
        self.log.append(f"{self.name} close")
        if self.answer == "raise":
            raise RuntimeError("close failed")


class ModelOnly(BasePlugin):
    def __init__(self, log: list[str]) -> None:
        super().__init__(name="model_only")
        self.log = log

    async def before_model_callback(self, **kwargs: Any) -> None:
        self.log.append("model_only before model")


async def test_a_callback_stops_at_the_first_member_that_answers_as_adk_stops() -> None:
    log: list[str] = []
    chain = PluginChain("c", [Recorder("a", log), Recorder("b", log, "b's"), Recorder("c", log)])
    manager = PluginManager(plugins=[chain])
    got = await manager.run_on_event_callback(invocation_context=None, event=None)  # type: ignore[arg-type]
    assert got == "b's"
    assert log == ["a event", "b event"]


async def test_only_the_members_that_define_a_callback_are_called() -> None:
    log: list[str] = []
    model_only = ModelOnly(log)
    chain = PluginChain("c", [Recorder("a", log), model_only])
    assert chain.before_model_callback == model_only.before_model_callback  # no layer between
    assert chain.after_model_callback.__func__ is BasePlugin.after_model_callback  # type: ignore[attr-defined]
    manager = PluginManager(plugins=[chain])
    await manager.run_before_model_callback(callback_context=None, llm_request=None)  # type: ignore[arg-type]
    await manager.run_after_model_callback(callback_context=None, llm_response=None)  # type: ignore[arg-type]
    assert log == ["model_only before model"]


async def test_a_notification_reaches_every_member_even_after_one_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[str] = []
    chain = PluginChain("c", [Recorder("a", log, "raise"), Recorder("b", log)])
    manager = PluginManager(plugins=[chain])
    with caplog.at_level(logging.ERROR, "adk_asgi"):
        await manager.run_on_run_error_callback(invocation_context=None, error=ValueError())  # type: ignore[arg-type]
    assert log == ["a run error", "b run error"]
    assert [r.getMessage() for r in caplog.records] == [
        "adk_asgi: a plugin failed in on_run_error_callback: RuntimeError: boom"
    ]


async def test_closing_closes_every_member_and_raises_the_first_failure() -> None:
    log: list[str] = []
    chain = PluginChain("c", [Recorder("a", log, "raise"), Recorder("b", log)])
    with pytest.raises(RuntimeError, match="close failed"):
        await chain.close()
    assert log == ["a close", "b close"]


def test_an_app_registers_its_own_plugins_and_then_the_bridge_as_one() -> None:
    log: list[str] = []
    own = Recorder("own", log)
    agent = LlmAgent(name="assistant", model=ScriptedLlm(turns=[]))
    app = AdkApp(agent, plugins=[own])
    plugins = app.runner.plugin_manager.plugins
    assert plugins[0] is own
    assert [type(p).__name__ for p in plugins[1:]] == ["PluginChain"]
    chain = plugins[1]
    assert isinstance(chain, PluginChain)
    assert [type(m).__name__ for m in chain.members] == [
        "InvalidCalls",
        "AsReturned",
        "ReadableRequests",
        "ResultsInCallOrder",
        "PauseForClientTools",
        "LiveToolGate",
        "FinishRanTools",
        "PaceToReader",
    ]
    # ADK sends a cancelled call's on_tool_error_callback to every plugin whatever they return;
    # the chain stops at the first answer, which is the same only while one member defines it
    defining = [m for m in chain.members if "on_tool_error_callback" in type(m).__dict__]
    assert [type(m).__name__ for m in defining] == ["InvalidCalls"]
    assert chain.on_tool_error_callback == defining[0].on_tool_error_callback


def test_the_bridge_runs_in_bridge_order_whatever_order_it_is_given_in() -> None:
    agent = LlmAgent(name="assistant", model=ScriptedLlm(turns=[]))
    bridge = AdkApp(agent).runner.plugin_manager.plugins[-1]
    assert isinstance(bridge, PluginChain)
    shuffled = PluginChain("adk_asgi", bridge.members[::-1], order=BRIDGE_ORDER)
    assert [m.name for m in shuffled.members] == [name for name, _ in BRIDGE_ORDER]
    assert all(why for _, why in BRIDGE_ORDER)


@pytest.mark.parametrize("change", ["missing", "extra", "twice"])
def test_an_order_that_does_not_name_each_member_once_is_refused(change: str) -> None:
    log: list[str] = []
    a, b = Recorder("a", log), Recorder("b", log)
    members = {"missing": [a], "extra": [a, b, Recorder("c", log)], "twice": [a, a, b]}[change]
    with pytest.raises(ValueError, match="are not those ordered"):
        PluginChain("chain", members, order=[("a", "first"), ("b", "second")])
