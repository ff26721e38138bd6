"""The agent ``adk-asgi web AGENT`` serves, found the way ``adk web`` finds it.

``AGENT`` is ``module:attribute`` (an agent or a google-adk ``App``, imported from the current
directory), or a directory in ADK's own layouts, loaded by ADK's ``AgentLoader`` (its ``.env``
files and ``root_agent.yaml`` configs included): one agent's directory (``agent.py`` or an
``__init__.py`` defining ``root_agent``), or a directory of such directories, of which
``--agent`` names one (or the only one is taken).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

from google.adk.agents.base_agent import BaseAgent
from google.adk.apps.app import App


class AgentNotFound(Exception):
    """What ``AGENT`` names is not an agent: the message says what was looked for."""


@dataclass(frozen=True, slots=True)
class Found:
    target: BaseAgent | App
    name: str
    """The agent's name (the app's, for an ``App``)."""
    watch: Path | None
    """The directory its code lives in (what ``--reload`` watches), when it is one."""


def find_agent(spec: str, name: str | None = None) -> Found:
    """The agent ``spec`` names (see the module docstring); :class:`AgentNotFound` else."""
    path = Path(spec)
    if path.is_dir():
        return _from_directory(path.resolve(), name)
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise AgentNotFound(
            f"{spec!r} is neither a directory nor module:attribute (e.g. my_agents/ or "
            "my_package.agent:root_agent)"
        )
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # as `python -m` and uvicorn import apps
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentNotFound(f"cannot import {module_name!r}: {exc}") from exc
    target = getattr(module, attribute, None)
    if not isinstance(target, BaseAgent | App):
        raise AgentNotFound(
            f"{module_name}.{attribute} is not an ADK agent or App: {type(target).__name__}"
        )
    watch = Path(module.__file__).parent if module.__file__ else None
    return Found(target, target.name, watch)


def _from_directory(path: Path, name: str | None) -> Found:
    from google.adk.cli.utils.agent_loader import AgentLoader

    # One agent's directory, or a directory of them (a package of agents has an __init__.py
    # too: it is one agent only when no directory in it is one).
    single = any((path / f).is_file() for f in ("agent.py", "root_agent.yaml"))
    if single or ((path / "__init__.py").is_file() and not _agents(path)):
        loader, agents_dir = AgentLoader(str(path.parent)), path.parent
        names = [path.name]
    else:
        loader, agents_dir = AgentLoader(str(path)), path
        names = _agents(path)
    if name is not None:
        if name not in names:
            raise AgentNotFound(f"no agent {name!r} in {path}: {_listed(names)}")
        names = [name]
    if len(names) != 1:
        raise AgentNotFound(
            f"{path} holds {_listed(names)}: name one with --agent"
            if names
            else f"no agent in {path}: a directory with agent.py (or __init__.py) defining "
            "root_agent, or a directory of them, as `adk web` takes"
        )
    try:
        target = loader.load_agent(names[0])
    except (ValueError, RuntimeError, ImportError) as exc:
        raise AgentNotFound(f"the agent {names[0]!r} in {agents_dir} did not load: {exc}") from exc
    return Found(target, target.name, agents_dir / names[0])


def _agents(path: Path) -> list[str]:
    return sorted(
        child.name
        for child in path.iterdir()
        if child.is_dir()
        and not child.name.startswith((".", "_"))
        and any((child / f).is_file() for f in ("agent.py", "__init__.py", "root_agent.yaml"))
    )


def _listed(names: list[str]) -> str:
    return "agents " + ", ".join(names) if names else "no agent"
