"""Why ``WS /live`` cannot serve an agent tree, read once from the tree when the app is built.

Its users are sent to ``POST /chat`` with the reason, instead of a live session that fails:
a workflow has no live model connection (ADK runs it once through and ends the session),
ADK 2.13's ``ParallelAgent`` and ``LoopAgent`` raise ``NotImplementedError`` live, and its
``run_live`` never runs a ``mode="task"`` sub-agent: the call that delegates to it stays open
(ADK's workflow runs it only in ``run_async``). Sans-I/O.
"""

from __future__ import annotations

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.loop_agent import LoopAgent
from google.adk.agents.parallel_agent import ParallelAgent
from google.adk.workflow import BaseNode


def live_refusal(root: BaseNode) -> str | None:
    """Why ``WS /live`` cannot serve ``root``, so its users are sent to ``POST /chat`` with a
    reason instead of a failed session (the module's docstring says what ADK cannot run)."""
    if not isinstance(root, BaseAgent):
        kind = "a workflow"
    else:
        agents = _agents(root)
        unable = [a for a in agents if isinstance(a, ParallelAgent | LoopAgent)]
        tasks = [a for a in agents if a is not root and getattr(a, "mode", None) == "task"]
        if unable:
            kind = f"a tree with the {type(unable[0]).__name__} {unable[0].name!r}"
        elif tasks:
            kind = f"a tree with the task agent {tasks[0].name!r} (mode='task')"
        else:
            return None
    return (
        f"{root.name!r} is {kind}, which ADK cannot run live: use POST /chat, or give AdkApp"
        " a live_agent"
    )


def _agents(root: BaseAgent) -> list[BaseAgent]:
    found, todo = [], [root]
    while todo:
        agent = todo.pop()
        found.append(agent)
        todo.extend(agent.sub_agents)
    return found
