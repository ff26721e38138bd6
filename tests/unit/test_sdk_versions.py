"""``AdkApp(ai_sdk_version=...)``: which versions it takes, and the agents an ai@5 app refuses
(ai@5 cannot answer an approval, docs/ai-sdk-versions.md)."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.workflow import START, Workflow, node

from adk_asgi import AdkApp, client_tool
from adk_asgi.serving.sdk_versions import checked_sdk_version
from adk_asgi.testing import ScriptedLlm
from adk_asgi.wire.encoding import named_sdk_version


def get_weather(city: str) -> str:
    """The weather in a city."""
    return "windy"


def pay(amount: int) -> str:
    """Pay an amount."""
    return "paid"


@client_tool
def change_bgm(track: int) -> None:
    """Play a track."""


@client_tool(require_approval=True)
def get_location() -> None:
    """Where the user is."""


@client_tool(require_approval=lambda amount: amount > 10)
def tip(amount: int) -> None:
    """Tip the waiter."""


class ConfirmingToolset(BaseToolset):
    """A toolset whose tools ask for confirmation, kept where ADK's ``McpToolset`` keeps its
    ``require_confirmation`` (``_require_confirmation``; the mcp package is not installed)."""

    def __init__(self) -> None:
        super().__init__()
        self._require_confirmation = True

    async def get_tools(self, readonly_context: Any = None) -> list[Any]:
        return []


def agent(*tools: Any, name: str = "assistant", sub_agents: Any = ()) -> LlmAgent:
    return LlmAgent(
        name=name, model=ScriptedLlm(turns=[]), tools=list(tools), sub_agents=list(sub_agents)
    )


@node
def plan(node_input: Any) -> int:
    return 5


@node(require_confirmation=True)
def transfer(node_input: int) -> str:
    return "sent"


def refusal(*asking: str) -> str:
    return (
        "ai_sdk_version=5: AI SDK 5 clients cannot approve or deny a tool call (ai@5 has no "
        f"approval chunks), but these tools ask for approval: {', '.join(asking)}. Serve this "
        "agent with ai_sdk_version=6 or 7, or take the approvals off (docs/ai-sdk-versions.md)."
    )


@pytest.mark.parametrize("version", [5, 6, 7])
def test_an_agent_without_approvals_is_served_to_every_version(version: Any) -> None:
    app = AdkApp(agent(get_weather, change_bgm), ai_sdk_version=version)
    assert app.services.ai_sdk_version == version


def test_the_default_is_ai6() -> None:
    assert AdkApp(agent()).services.ai_sdk_version == 6


@pytest.mark.parametrize("version", [4, 8, "5", True, None])
def test_another_version_is_refused(version: Any) -> None:
    with pytest.raises(ValueError) as refused:
        AdkApp(agent(), ai_sdk_version=version)
    assert str(refused.value) == f"ai_sdk_version must be one of 5, 6, 7; got {version!r}"


@pytest.mark.parametrize(
    ("tools", "asking"),
    [
        ([FunctionTool(pay, require_confirmation=True)], ["'pay' (require_confirmation)"]),
        (
            [FunctionTool(pay, require_confirmation=lambda amount: amount > 10)],
            ["'pay' (require_confirmation)"],
        ),
        ([get_location], ["'get_location' (client_tool require_approval)"]),
        ([tip, get_weather], ["'tip' (client_tool require_approval)"]),
        (
            [get_location, FunctionTool(pay, require_confirmation=True), change_bgm],
            ["'get_location' (client_tool require_approval)", "'pay' (require_confirmation)"],
        ),
    ],
    ids=["confirmation", "confirmation-rule", "client-approval", "client-rule", "two"],
)
def test_an_ai5_app_refuses_tools_that_ask_for_approval(
    tools: list[Any], asking: list[str]
) -> None:
    with pytest.raises(ValueError) as refused:
        AdkApp(agent(*tools), ai_sdk_version=5)
    assert str(refused.value) == refusal(*asking)
    for version in (6, 7):  # which can answer them
        assert AdkApp(agent(*tools), ai_sdk_version=version).services.ai_sdk_version == version


def test_a_toolset_that_asks_for_confirmation_is_refused_for_ai5() -> None:
    # Checked alone: AdkApp itself fails earlier on such a toolset (ToolPolicy reads a ``name``
    # that toolsets lack), whatever the version.
    with pytest.raises(ValueError) as refused:
        checked_sdk_version(5, agent(ConfirmingToolset()))
    assert str(refused.value) == refusal("'ConfirmingToolset' (require_confirmation)")
    assert checked_sdk_version(6, agent(ConfirmingToolset())) == 6


def test_an_ai5_app_looks_at_every_agent_of_the_tree_and_the_live_agent() -> None:
    nested = agent(get_weather, sub_agents=[agent(get_location, name="finder")])
    with pytest.raises(ValueError) as refused:
        AdkApp(nested, ai_sdk_version=5)
    assert str(refused.value) == refusal("'get_location' (client_tool require_approval)")
    with pytest.raises(ValueError) as refused:
        AdkApp(agent(get_weather), live_agent=agent(tip), ai_sdk_version=5)
    assert str(refused.value) == refusal("'tip' (client_tool require_approval)")


def test_an_ai5_app_refuses_a_workflow_node_that_asks_for_confirmation() -> None:
    workflow = Workflow(name="paying", edges=[(START, plan, transfer)])
    with pytest.raises(ValueError) as refused:
        AdkApp(workflow, ai_sdk_version=5)
    assert str(refused.value) == refusal("'transfer' (require_confirmation)")
    assert AdkApp(workflow, ai_sdk_version=6).services.ai_sdk_version == 6
    plain = Workflow(name="planning", edges=[(START, plan)])
    assert AdkApp(plain, ai_sdk_version=5).services.ai_sdk_version == 5


@pytest.mark.parametrize(
    ("name", "served", "version"),
    [
        (None, 6, 7),  # the stock v7 WebSocketChatTransport names nothing
        ("6", 6, 6),
        ("5", 6, 5),
        ("7", 6, 7),
        ("6", 7, 6),
        (None, 5, 5),  # an app serving ai@5 speaks ai@5 to every live client
        ("6", 5, 5),
        ("7", 5, 5),
    ],
)
def test_the_version_of_a_live_client(name: str | None, served: Any, version: int) -> None:
    assert named_sdk_version(name, served) == version
