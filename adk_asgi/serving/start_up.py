"""What ``AdkApp.prepare()`` does when the server starts: warn about a deployment that cannot
keep its promises across workers, say which stores it picked, and create the tables once.

Creating the session tables lazily, in the first requests, fails when two workers race to
create them; so it is done here, serialized by the chat locks (which every worker shares when
they are worth anything), and retried where the locks are in-process: the other worker's
creation is what made an attempt fail.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os

from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from adk_asgi.stores.claims import Claims, InMemoryClaims
from adk_asgi.stores.defaults import describe
from adk_asgi.stores.locks import ChatLocks, InMemoryChatLocks

logger = logging.getLogger("adk_asgi")

ATTEMPTS = 5


def several_workers() -> bool:
    """Whether this process is one of several workers (uvicorn's are multiprocessing children;
    ``WEB_CONCURRENCY`` is the worker count uvicorn and gunicorn read)."""
    concurrency = os.environ.get("WEB_CONCURRENCY", "1")
    return multiprocessing.parent_process() is not None or concurrency not in ("", "1")


def start_up_logger() -> logging.Logger:
    """Where ``prepare()`` says what it picked: the ``adk_asgi`` logger when the host app's
    logging shows its ``INFO``; else uvicorn's own logger, which plain ``uvicorn`` shows (its
    log config gives ``adk_asgi`` no handler, so the line was lost under it)."""
    if logger.isEnabledFor(logging.INFO) and logger.hasHandlers():
        return logger
    server = logging.getLogger("uvicorn.error")
    if server.isEnabledFor(logging.INFO) and server.hasHandlers():
        return server
    return logger


def warn_unshared(sessions: BaseSessionService, locks: ChatLocks, claims: Claims) -> None:
    """Log what several workers would each keep to themselves."""
    if isinstance(sessions, InMemorySessionService):
        logger.warning(
            "adk_asgi: several workers share nothing with in-memory sessions: a chat's "
            "requests must all reach one worker. Use a database session service "
            "(docs/deployment.md)."
        )
        return
    if isinstance(locks, InMemoryChatLocks):
        logger.warning(
            "adk_asgi: several workers lock chats each in its own memory: two messages "
            "of one chat on two workers at once fail. Use RedisChatLocks or "
            "PostgresChatLocks (docs/deployment.md)."
        )
    if isinstance(claims, InMemoryClaims):
        logger.warning(
            "adk_asgi: several workers claim answers each in its own memory: an "
            "approval may be acted on once per worker, not once. Pass stores=Stores(claims=...), "
            "a store the workers share (docs/deployment.md#exactly-once)."
        )


async def prepare(
    app_name: str, sessions: BaseSessionService, locks: ChatLocks, claims: Claims
) -> None:
    """Check the deployment, log the stores, and create the session and claim tables."""
    if several_workers():
        warn_unshared(sessions, locks, claims)
    start_up_logger().info(
        "adk_asgi: chats are locked with %s; answers are claimed with %s",
        describe(locks),
        describe(claims),
    )
    prepare_tables = getattr(sessions, "prepare_tables", None)
    async with locks.hold((app_name, "", "adk_asgi:prepare"), wait=120):
        for attempt in range(1, ATTEMPTS + 1):
            try:
                if prepare_tables is not None:
                    await prepare_tables()
                await claims.prepare()
                return
            except Exception:
                if attempt == ATTEMPTS:
                    raise
                logger.info("adk_asgi: creating the session tables failed; again", exc_info=True)
                await asyncio.sleep(0.2 * attempt)
