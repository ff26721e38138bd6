"""Your agent behind the chat page this package ships: ``AdkApp`` at ``/agent``, the page at
``/`` (the demo's page, built from ``web/`` into ``adk_asgi/web/page/``), and ``/page.json``,
which tells the page whose it is (its title, example prompts, a line about it)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

from google.adk.agents.base_agent import BaseAgent
from google.adk.apps.app import App
from google.adk.sessions.base_session_service import BaseSessionService
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from adk_asgi.app import AdkApp

PAGE: Final = Path(__file__).with_name("page")
"""The built page (``make page`` copies ``web/dist`` here; the wheel carries it)."""


class PageMissing(Exception):
    """The package was installed without its page (a checkout where ``make page`` never ran)."""


def page_app(
    target: BaseAgent | App,
    *,
    session_service: BaseSessionService | None = None,
    live_agent: BaseAgent | None = None,
    examples: Sequence[str] = (),
    intro: str | None = None,
    **options: Any,
) -> Starlette:
    """``target`` (an agent, or a google-adk ``App``) served with the page. ``options`` go to
    :class:`~adk_asgi.AdkApp`."""
    if not (PAGE / "index.html").is_file():
        raise PageMissing(f"the chat page is not in {PAGE}: run `make page` in the checkout")
    if isinstance(target, App):
        chat = AdkApp(app=target, session_service=session_service, live_agent=live_agent, **options)
    else:
        chat = AdkApp(target, session_service=session_service, live_agent=live_agent, **options)
    name = target.name
    settings = {
        "title": f"{name} · adk-asgi",
        "examples": list(examples),
        "intro": intro or f"The agent {name}, served by adk_asgi at /agent to the AI SDK's chat.",
    }

    async def page_json(request: Request) -> JSONResponse:
        return JSONResponse(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await chat.prepare()
        try:
            yield
        finally:
            await chat.aclose()

    return Starlette(
        routes=[
            Route("/page.json", page_json, methods=["GET"]),
            Mount("/agent", app=chat),
            Mount("/", app=StaticFiles(directory=os.fspath(PAGE), html=True)),
        ],
        lifespan=lifespan,
    )
