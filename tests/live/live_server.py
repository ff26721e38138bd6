"""What live tests read off the server rather than the socket: its connections' tasks ended,
and the chat as its session stores it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from google.adk.events.event import Event

from adk_asgi import AdkApp
from adk_asgi.convert.history import rebuild_messages


async def wait_until_closed(app: AdkApp) -> None:
    """Wait for every task of the server's live connections to end (they are named)."""
    tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("adk_asgi live")]
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
    assert len(app.locks) == 0, "the connection's lock outlived it"


async def leftover_tasks(baseline: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """The tasks started since ``baseline`` that do not end (within 10 s): waits for them, and
    for any they start meanwhile, instead of for some time."""
    deadline = asyncio.get_running_loop().time() + 10
    while pending := {t for t in asyncio.all_tasks() - baseline if not t.done()}:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return sorted(pending, key=lambda t: t.get_name())
        await asyncio.wait(pending, timeout=remaining)
    return []


async def until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``condition`` (state with no event to wait on) until it holds; fail after 10 s."""
    try:
        async with asyncio.timeout(10):
            while not await condition():  # noqa: ASYNC110 (a bounded poll on a condition)
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"not within 10 s: {what}") from None


def answers(events: list[Event]) -> int:
    """How many of the model's turns in ``events`` ended (``turn_complete``) with an answer: text
    or the transcript of speech, not tool calls waiting for their results."""
    count = 0
    last: str | None = None  # what the turn under way said last: "answer", "tool" or "user"
    for event in events:
        parts = (event.content.parts or []) if event.content is not None else []
        if any(p.function_call or p.function_response for p in parts):
            last = "tool"
        elif any(p.text for p in parts) or event.input_transcription:
            last = "user" if event.author == "user" or event.input_transcription else "answer"
        elif event.output_transcription and event.output_transcription.finished:
            last = "answer"
        if event.turn_complete:
            count += last == "answer"
            last = None
    return count


async def answered(app: AdkApp, chat_id: str, turns: int = 1) -> None:
    """Wait until the session of ``chat_id`` records ``turns`` answers of the model, each turn
    complete: the observable end of a turn nobody's request reads (ADK stores every finished
    live event, ``turn_complete`` ones too)."""

    async def done() -> bool:
        for user_id in chat_users(app, chat_id):
            session = await app.session_service.get_session(
                app_name=app.app_name, user_id=user_id, session_id=chat_id
            )
            if session is not None and answers(session.events) >= turns:
                return True
        return False

    await until(done, f"{turns} answered turn(s) stored in chat {chat_id}")


async def stored_history(app: AdkApp, chat_id: str) -> list[dict[str, Any]]:
    sessions = app.session_service
    for user_id in chat_users(app, chat_id):
        session = await sessions.get_session(
            app_name=app.app_name, user_id=user_id, session_id=chat_id
        )
        if session is not None:
            result: list[dict[str, Any]] = msgspec.to_builtins(
                rebuild_messages(
                    session.events, app.services.tools, speakers=app.services.converting.speakers
                )
            )
            return result
    raise AssertionError(f"no session for {chat_id}")


def chat_users(app: AdkApp, chat_id: str) -> list[str]:
    sessions = app.session_service.sessions  # type: ignore[attr-defined]
    return [user for user, chats in sessions.get(app.app_name, {}).items() if chat_id in chats]
