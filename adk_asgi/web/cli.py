"""``adk-asgi web AGENT``: your agent in the chat page, as ``adk web`` serves it in ADK's.

    adk-asgi web my_agents/              # the one agent there (--agent NAME: one of several)
    adk-asgi web my_agents/weather       # one agent's directory
    adk-asgi web my_package.agent:root_agent
    adk-asgi web my_agents/ --offline    # no key: Gemini answered by a local stand-in

Options: ``--host``/``--port`` (127.0.0.1:8000), ``--session-db URI`` (any ADK session URI, as
``adk web --session_service_uri`` takes: ``sqlite:///chats.db``, ``postgresql+asyncpg://…``;
in memory by default), ``--live-model`` (the model of live mode, when the agent's own cannot
open a Live API session), ``--reload`` (restart when the agent's code changes), ``--offline``.

Offline, ADK's own ``Gemini`` class and google-genai run unchanged against a Gemini stand-in in
this process (:mod:`adk_asgi.testing.gemini_server`) that echoes, and calls the agent's tools
when asked: ``call <tool> {"arg": …}`` (:mod:`adk_asgi.testing.echo`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, Final

from google.adk.agents.base_agent import BaseAgent
from google.adk.apps.app import App

from adk_asgi.testing.echo import offline_gemini
from adk_asgi.web.agents import AgentNotFound, Found, find_agent
from adk_asgi.web.page import PageMissing, page_app

SETTINGS: Final = "ADK_ASGI_WEB"
"""The environment variable that carries the command's options to the server process (which
``--reload`` starts anew on each change)."""
OFFLINE_EXAMPLES: Final = ("Hello!", "explode")


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="adk-asgi", description="Serve ADK agents to AI SDK chats."
    )
    commands = found.add_subparsers(dest="command", required=True)
    web = commands.add_parser(
        "web",
        help="your agent in the chat page",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    web.add_argument("agent", help="an agents directory, an agent's directory, or module:attribute")
    web.add_argument("--agent", dest="name", help="which agent of the directory (its folder name)")
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=8000)
    web.add_argument("--session-db", help="an ADK session service URI (in memory by default)")
    web.add_argument("--live-model", help="the model live mode runs (the agent's own by default)")
    web.add_argument("--reload", action="store_true", help="restart when the agent's code changes")
    web.add_argument("--offline", action="store_true", help="Gemini answered by a local stand-in")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = vars(args)
    try:
        found = find_agent(args.agent, args.name)
    except AgentNotFound as exc:
        print(f"adk-asgi web: {exc}", file=sys.stderr)
        return 2
    if args.offline:  # (its settings in the environment reach a --reload server process too)
        offline_gemini()
    elif not _has_gemini_settings():
        print(
            "adk-asgi web: no GOOGLE_API_KEY (nor Vertex AI settings) in the environment: a "
            "Gemini model will fail; --offline tries the page without one",
            file=sys.stderr,
        )
    os.environ[SETTINGS] = json.dumps(settings)
    import uvicorn

    print(f"adk-asgi web: {found.name} on http://{args.host}:{args.port}", file=sys.stderr)
    uvicorn.run(
        "adk_asgi.web.cli:app_from_environment",
        factory=True,
        host=args.host,
        port=args.port,
        reload=args.reload,
        reload_dirs=[str(found.watch)] if args.reload and found.watch else None,
        log_level="info",
    )
    return 0


def app_from_environment() -> Any:
    """The server process's app, from the options :func:`main` put in the environment."""
    settings = json.loads(os.environ[SETTINGS])
    found = find_agent(settings["agent"], settings["name"])
    try:
        return build(found, settings)
    except PageMissing as exc:
        raise SystemExit(f"adk-asgi web: {exc}") from None


def build(found: Found, settings: dict[str, Any]) -> Any:
    target = found.target
    live_agent: BaseAgent | None = None
    if settings.get("live_model"):
        agent = target.root_agent if isinstance(target, App) else target
        if not isinstance(agent, BaseAgent):
            raise SystemExit(f"adk-asgi web: --live-model needs an agent, not {agent!r}")
        live_agent = agent.model_copy(update={"model": settings["live_model"]})
    sessions = None
    if settings.get("session_db"):
        from google.adk.cli.utils.service_factory import create_session_service_from_options

        base = found.watch.parent if found.watch is not None else os.getcwd()
        sessions = create_session_service_from_options(
            base_dir=base, session_service_uri=settings["session_db"]
        )
    examples = OFFLINE_EXAMPLES if settings.get("offline") else ()
    return page_app(target, session_service=sessions, live_agent=live_agent, examples=examples)


def _has_gemini_settings() -> bool:
    vertex = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true")
    return bool(os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY") or vertex)


if __name__ == "__main__":
    raise SystemExit(main())
