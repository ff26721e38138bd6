"""The session a request has just read, handed to ADK's ``Runner`` instead of read again.

A chat request reads its session for the bridge's checks, under the chat's lock. ADK's
``Runner`` takes a session *id*, and reads the session again as the run starts: with a
database session service that is every event of the chat, twice per message (measured: 2.2 ms
of CPU for a new chat, 5.6 ms at 50 turns on PostgreSQL; docs/internals/performance-notes.md, "Two
workers"). Nothing can change the session in between: the chat's lock keeps other requests out, and
the bridge's own writes before the run go through the object it read (ADK's ``append_event``
keeps that object equal to storage). So the ``Runner``'s first read of that session is
answered with the object itself.

The runners are built on :class:`HandingOver`, a delegating wrapper of the app's session
service; :func:`hand_over` names the session for the rest of the current task (the request's,
or a live connection's ``run_live`` task), once. A read with a ``GetSessionConfig`` (a run
config that asks for fewer events) goes to storage as before.

Every event a runner appends is reported to :func:`.finish_tools.stored` once it is stored: a
run a client left stops only after the results of the tools that ran are recorded. The bridge's
own reads and writes go through this wrapper too, so a value no one could read back is never
stored, and one stored before is repaired where the service cannot read it
(:mod:`adk_asgi.convert.safe_history`).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session

from adk_asgi.convert.safe_history import make_readable
from adk_asgi.serving.finish_tools import stored

_handed: ContextVar[list[Session] | None] = ContextVar("adk_asgi_handed_session", default=None)


def hand_over(session: Session) -> None:
    """The next read of ``session`` by a runner in this task gets ``session`` itself."""
    _handed.set([session])


class HandingOver(BaseSessionService):
    """``inner``, but a read of the session :func:`hand_over` named gets that object."""

    def __init__(self, inner: BaseSessionService) -> None:
        self.inner = inner

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        handed = _handed.get()
        if handed and config is None:
            session = handed[0]
            if (session.app_name, session.user_id, session.id) == (app_name, user_id, session_id):
                handed.clear()  # once: a later read is of what the run has written since
                return session
        try:
            return await self.inner.get_session(
                app_name=app_name, user_id=user_id, session_id=session_id, config=config
            )
        except RecursionError:
            if not _repair_in_memory(self.inner, app_name, user_id, session_id):
                raise
        return await self.inner.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        return await self.inner.create_session(
            app_name=app_name, user_id=user_id, state=state, session_id=session_id
        )

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return await self.inner.list_sessions(app_name=app_name, user_id=user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self.inner.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self.inner.get_user_state(app_name=app_name, user_id=user_id)

    async def append_event(self, session: Session, event: Event) -> Event:
        make_readable(event)  # a value no one could read back is stored as its error
        appended = await self.inner.append_event(session, event)
        stored(event)  # the results it holds are recorded: the run may stop now
        return appended

    async def flush(self) -> None:
        await self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        """What ADK's base class does not declare (a service's own methods) is the inner's."""
        return getattr(self.inner, name)


def _repair_in_memory(
    inner: BaseSessionService, app_name: str, user_id: str, session_id: str
) -> bool:
    """ADK's in-memory service copies a session for every read, recursively: one value nested
    too deeply (stored before this bridge, or by another writer) makes every read of its chat
    fail. Such a value can never be read again, so it is replaced where it is stored by the
    error it is shown as (:mod:`adk_asgi.convert.safe_history`); whether anything was replaced."""
    if not isinstance(inner, InMemorySessionService):
        return False
    stored_session = inner.sessions.get(app_name, {}).get(user_id, {}).get(session_id)
    if stored_session is None:
        return False
    repaired = [make_readable(event) for event in stored_session.events]  # every one
    return any(repaired)
