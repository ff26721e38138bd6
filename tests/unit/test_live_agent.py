"""``AdkApp(agent, live_agent=...)``: which runner each route uses, and closing both."""

from __future__ import annotations

from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset

from adk_asgi import AdkApp
from adk_asgi.serving.session_handover import HandingOver
from tests.support import scripted_agent


class CountedToolset(BaseToolset):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    async def get_tools(self, readonly_context: Any = None) -> list[BaseTool]:
        return []

    async def close(self) -> None:
        self.closed += 1


async def test_the_live_agent_runs_live_on_the_same_sessions_and_each_toolset_closes_once() -> None:
    shared, chat_only, live_only = CountedToolset(), CountedToolset(), CountedToolset()
    agent = scripted_agent([], tools=[shared, chat_only], name="assistant")
    live_agent = scripted_agent([], tools=[shared, live_only], name="assistant")
    app = AdkApp(agent, live_agent=live_agent)
    assert app.runner.agent is agent and app.live_runner.agent is live_agent
    assert app.live_runner.app_name == app.app_name == "assistant"
    assert app.live_runner.session_service is app.runner.session_service  # one hand-over
    handing = app.runner.session_service
    assert isinstance(handing, HandingOver) and handing.inner is app.session_service
    assert app.live_runner.plugin_manager.plugins == app.runner.plugin_manager.plugins
    await app.aclose()
    assert (shared.closed, chat_only.closed, live_only.closed) == (1, 1, 1)


async def test_without_a_live_agent_both_routes_share_one_runner() -> None:
    app = AdkApp(scripted_agent([]))
    assert app.live_runner is app.runner
    await app.aclose()
