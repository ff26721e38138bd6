"""What the endpoints need from an ``AdkApp``, as one frozen object.

``AdkApp`` builds a :class:`Services` once and hands it to each endpoint; no endpoint ever sees
the app. This module imports no endpoint, so nothing here can form an import cycle.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from google.adk.agents.run_config import RunConfig
from google.adk.artifacts.base_artifact_service import BaseArtifactService
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session
from google.genai import types
from starlette.requests import HTTPConnection
from starlette.types import Scope

from adk_asgi.convert.adk_values import client_signals_activity
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.options import ConverterOptions
from adk_asgi.errors import ClientError
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.serving.app_hooks import hook_failure
from adk_asgi.serving.file_urls import AllowFileUrl, FileUrlRule
from adk_asgi.serving.identity import (
    BrowserCookieIdentity,
    Identify,
    Identity,
    Unauthorized,
    resolve_identity,
)
from adk_asgi.serving.options import Limits, Streaming
from adk_asgi.serving.request_state import RequestState
from adk_asgi.serving.user_bounds import UserLoad
from adk_asgi.stores.claims import Claims
from adk_asgi.stores.locks import ChatKey, ChatLocks
from adk_asgi.stores.resumable import StreamStore
from adk_asgi.wire.encoding import SdkVersion

logger = logging.getLogger("adk_asgi")

STORE_ATTEMPTS = 4
"""How often opening a session is tried while the database reports itself busy."""


def _transient(exc: BaseException) -> bool:
    """A database error worth trying again: DB-API's ``OperationalError`` (SQLite's "database
    is locked", a dropped connection), raw or wrapped by SQLAlchemy, named so that neither
    driver needs importing."""
    return any(type(e).__name__ == "OperationalError" for e in (exc, exc.__cause__))


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    runner: Runner
    live_runner: Runner
    """The runner of ``WS /live``: ``runner`` itself unless a live agent was given."""
    session_service: BaseSessionService
    artifact_service: BaseArtifactService | None
    """Where uploads are kept when the app moves them out of the messages
    (:mod:`adk_asgi.routes.files`)."""
    app_name: str
    author: str
    """The author of the events the bridge records itself (approval markers)."""
    tools: ToolPolicy
    locks: ChatLocks
    claims: Claims
    streams: StreamStore | None
    """Where SSE streams are kept for resuming (:mod:`adk_asgi.stores.resumable`), or ``None``:
    off."""
    limits: Limits
    streaming: Streaming
    run_config: RunConfig
    """The SSE run options (``StreamingMode.SSE``)."""
    live_run_config: RunConfig
    identify: Identify | None
    browser_identity: BrowserCookieIdentity
    ai_sdk_version: SdkVersion
    converting: ConverterOptions
    """How every response is shown: usage, metadata, failures, speakers
    (:mod:`adk_asgi.convert.options`)."""
    new_message_id: Callable[[], str]
    user_load: UserLoad
    """What each user holds in this worker now, against ``AdkApp``'s ``user_bounds``."""
    live_refusal: str | None = None
    """Why ``WS /live`` cannot serve this app's agent (a workflow), or ``None``."""
    allowed_file_url: AllowFileUrl | None = None
    """Which other file URLs than ``data:`` and the chat's uploads pass (:mod:`.file_urls`)."""
    request_state: RequestState | None = None
    """What the request's extras write into the session state (:mod:`.request_state`)."""

    async def identity_of(self, conn: HTTPConnection) -> Identity:
        """Who is asking, or a 401 :class:`ClientError`."""
        try:
            return await resolve_identity(conn, self.identify, self.browser_identity)
        except Unauthorized as exc:
            raise ClientError(401, str(exc) or "authentication required") from None
        except ClientError:
            raise
        except Exception as exc:  # the app's identify raised (serving/app_hooks.py)
            raise hook_failure(self.converting.on_error, "identify", exc) from None

    def file_url_rule(self, user_id: str, scope: Scope) -> FileUrlRule:
        """The file URLs ``user_id`` may send through the app mounted where ``scope`` says."""
        root: str = scope.get("root_path", "")
        failed = functools.partial(hook_failure, self.converting.on_error, "allowed_file_url")
        return FileUrlRule(user_id=user_id, root=root, allow=self.allowed_file_url, failed=failed)

    def chat_key(self, user_id: str, chat_id: str) -> ChatKey:
        return (self.app_name, user_id, chat_id)

    async def session(self, user_id: str, chat_id: str) -> Session | None:
        return await self.session_service.get_session(
            app_name=self.app_name, user_id=user_id, session_id=chat_id
        )

    async def open_session(self, user_id: str, chat_id: str) -> Session:
        """The chat's session, created on its first run. Two workers creating it at once is not
        an error: the one that loses the race reads the winner's. A database that is busy
        (SQLite's "database is locked" while another process writes) is tried again."""
        for attempt in range(1, STORE_ATTEMPTS + 1):
            try:
                return await self._open_session(user_id, chat_id)
            except Exception as exc:
                if not _transient(exc) or attempt == STORE_ATTEMPTS:
                    raise
                logger.info("adk_asgi: the session store is busy; again", exc_info=True)
                await asyncio.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _open_session(self, user_id: str, chat_id: str) -> Session:
        session = await self.session(user_id, chat_id)
        if session is not None:
            return session
        try:
            return await self.session_service.create_session(
                app_name=self.app_name, user_id=user_id, session_id=chat_id
            )
        except AlreadyExistsError:
            session = await self.session(user_id, chat_id)
            if session is None:
                raise
            return session

    def converter(self, message_id: str, known_calls: Iterable[str] = ()) -> EventConverter:
        """The converter of one SSE response, started now, with the app's options."""
        return self.converting.converter(
            message_id, policy=self.tools, known_calls=known_calls, started_at=time.time()
        )

    def sse_run_config(
        self, converter: EventConverter, user_message_id: str | None, user_metadata: Any = None
    ) -> RunConfig:
        """The run options of one request: the app's, tagged with the ids the client knows, the
        user message's metadata and the time its response started."""
        tagged = bookkeeping.with_tags(
            self.run_config.custom_metadata,
            message_id=converter.message_id,
            user_message_id=user_message_id,
            user_metadata=user_metadata,
            started_at=converter.facts.started_at,
        )
        return self.run_config.model_copy(update={"custom_metadata": tagged})

    def live_run_config_for(self, *, audio: bool) -> RunConfig:
        """The run options of a live connection: text replies, or speech with transcripts.

        A connection that speaks (``audio=1``) is push-to-talk: its client says when the user
        starts and stops talking (``activity-start`` / ``activity-end``), and the Live API takes
        those signals only with its own voice activity detection off, so the setup asks for
        that, unless the app's ``live_run_config`` chose a ``realtime_input_config`` itself."""
        modality = types.Modality.AUDIO if audio else types.Modality.TEXT
        update: dict[str, object] = {"response_modalities": [modality]}
        if audio and self.live_run_config.realtime_input_config is None:
            detection = types.AutomaticActivityDetection(disabled=True)
            update["realtime_input_config"] = types.RealtimeInputConfig(
                automatic_activity_detection=detection
            )
        return self.live_run_config.model_copy(update=update)

    def client_activity(self, *, audio: bool) -> bool:
        """Whether a live connection's client signals the user's activity (push to talk): the
        model's own voice activity detection is off in its setup."""
        return client_signals_activity(self.live_run_config_for(audio=audio).realtime_input_config)
