"""``AdkMiddleware``: put an ``AdkApp`` under a path prefix of any ASGI application.

Starlette and FastAPI can ``Mount`` an ``AdkApp``; frameworks without ASGI mounting cannot, and
Django's ASGI handler serves neither WebSocket nor lifespan scopes. Wrapping the host's ASGI
application routes the prefix around it instead, so the SSE stream never passes through the
host's own middleware (nothing there can buffer it) and the live WebSocket route works even when
the host only speaks HTTP.

Internal: not an import path of the public API; :mod:`adk_asgi` exports its public
names (docs/reference.md#import-paths).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adk_asgi.app import AdkApp

logger = logging.getLogger("adk_asgi")


class AdkMiddleware:
    """Serve an ``AdkApp`` under ``prefix``; pass everything else to the wrapped application.

    ``http`` and ``websocket`` scopes whose path is ``prefix`` or starts with ``prefix + "/"``
    go to the ``AdkApp`` with the scope a Starlette ``Mount(prefix, chat)`` would give it:
    ``root_path`` gains the prefix and ``path`` stays the full path (Starlette 1.x routes on the
    part of ``path`` after ``root_path``), so ``POST <prefix>/chat`` reaches the app's
    ``/chat``. ``/agentx`` is not under ``/agent``. Any other scope, including ``lifespan``,
    goes to the wrapped application unchanged.

    Lifespan: the wrapped application still gets it; the ``AdkApp`` is closed (``aclose()``)
    when the server shuts down, just before the wrapped app's shutdown is reported, so the host
    must not close it again. A wrapped app without lifespan support (Django raises on the
    scope) does not stop that: the middleware then answers the lifespan protocol itself.

    Pass either an ``AdkApp`` as ``chat=`` or the ``AdkApp`` arguments themselves
    (``AdkMiddleware(asgi_app, agent=agent)``, ``AdkMiddleware(asgi_app, app=adk_app)``).
    """

    def __init__(
        self,
        app: ASGIApp,
        /,
        *,
        prefix: str = "/agent",
        chat: AdkApp | None = None,
        **adk_app_options: Any,
    ) -> None:
        # `app` is positional-only so that `app=<google.adk App>` can reach AdkApp.
        if not prefix.startswith("/"):
            raise ValueError(f"prefix must start with '/': {prefix!r}")
        prefix = prefix.rstrip("/")
        if not prefix:
            raise ValueError("prefix must not be '/': the wrapped app would get nothing")
        if chat is not None and adk_app_options:
            raise TypeError("pass either chat=AdkApp(...) or AdkApp's arguments, not both")
        self.app = app
        self.prefix = prefix
        self.chat = chat if chat is not None else AdkApp(**adk_app_options)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            child = self._child_scope(scope)
            if child is not None:
                await self.chat(child, receive, send)
                return
            await self.app(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _child_scope(self, scope: Scope) -> Scope | None:
        """The scope ``Mount(prefix, chat)`` would pass on, or ``None`` outside the prefix."""
        root_path: str = scope.get("root_path", "")
        route_path = _route_path(scope["path"], root_path)
        if route_path != self.prefix and not route_path.startswith(self.prefix + "/"):
            return None
        return {
            **scope,
            # Request.url_for builds URLs from the outermost root path, as under Mount.
            "app_root_path": scope.get("app_root_path", root_path),
            "root_path": root_path + self.prefix,
        }

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the wrapped app's lifespan and close the ``AdkApp`` on shutdown.

        The close runs when the wrapped app reports its shutdown (complete or failed), so the
        host's own shutdown code runs first and the server sees one report, after both. When
        the wrapped app leaves the protocol without a word (it raised or returned before
        sending anything, as Django's handler does), the middleware finishes it itself.
        """
        startup_received = False
        answered = False

        async def wrapped_receive() -> Message:
            nonlocal startup_received
            message = await receive()
            if message["type"] == "lifespan.startup":
                startup_received = True
            return message

        async def wrapped_send(message: Message) -> None:
            nonlocal answered
            answered = True
            if message["type"] == "lifespan.startup.complete":
                failure = await self._prepare_chat()
                if failure is not None:
                    message = {"type": "lifespan.startup.failed", "message": failure}
            if message["type"] in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                failure = await self._close_chat()
                if failure is not None and message["type"] == "lifespan.shutdown.complete":
                    message = {"type": "lifespan.shutdown.failed", "message": failure}
            await send(message)

        try:
            await self.app(scope, wrapped_receive, wrapped_send)
        except Exception:
            if answered:
                raise
            logger.debug(
                "adk_asgi: the wrapped app does not support lifespan; AdkMiddleware answers it",
                exc_info=True,
            )
        if not answered:
            await self._own_lifespan(receive, send, startup_received=startup_received)

    async def _own_lifespan(self, receive: Receive, send: Send, *, startup_received: bool) -> None:
        """The lifespan protocol for a wrapped app that does not speak it."""
        if not startup_received:
            message = await receive()
            if message["type"] != "lifespan.startup":  # pragma: no cover - server bug
                return
        failure = await self._prepare_chat()
        if failure is not None:
            await send({"type": "lifespan.startup.failed", "message": failure})
            return
        await send({"type": "lifespan.startup.complete"})
        while (await receive())["type"] != "lifespan.shutdown":
            pass  # pragma: no cover - the protocol has no other message
        failure = await self._close_chat()
        if failure is None:
            await send({"type": "lifespan.shutdown.complete"})
        else:
            await send({"type": "lifespan.shutdown.failed", "message": failure})

    async def _prepare_chat(self) -> str | None:
        """Prepare the ``AdkApp`` (its session tables); the reason it failed, or ``None``."""
        try:
            await self.chat.prepare()
        except Exception as exc:
            logger.exception("adk_asgi: preparing the AdkApp failed")
            return f"preparing the AdkApp failed: {exc}"
        return None

    async def _close_chat(self) -> str | None:
        """Close the ``AdkApp``; the reason it failed, or ``None``."""
        try:
            await self.chat.aclose()
        except Exception as exc:
            logger.exception("adk_asgi: closing the AdkApp failed")
            return f"closing the AdkApp failed: {exc}"
        return None


def _route_path(path: str, root_path: str) -> str:
    """The part of ``path`` the app routes on: after ``root_path``, which servers include in
    ``path`` (ASGI spec; uvicorn's ``--root-path``). Mirrors Starlette 1.x's private
    ``get_route_path``, which also accepts a ``path`` that lacks the root path."""
    if not root_path or not path.startswith(root_path):
        return path
    if path == root_path:
        return ""
    if path[len(root_path)] == "/":
        return path[len(root_path) :]
    return path
