"""How an app shows every response: the converter's options, as one value (sans-I/O).

Every response of an app — over SSE, live, or a back office's answer — is converted with the
same options. One frozen value carries them from ``AdkApp`` through the app's services to each
transport, so an option is added in one place, not in every constructor on the way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.failures import ErrorHandler, show_errors
from adk_asgi.convert.metadata import MessageMetadata
from adk_asgi.hitl.policy import ToolPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class ConverterOptions:
    send_usage: bool = False
    """``finish`` carries the response's token counts (``messageMetadata.usage``)."""
    message_metadata: MessageMetadata | None = None
    """The app's hook for the metadata of ``start``, ``finish-step`` and ``finish``
    (:mod:`.metadata`)."""
    on_error: ErrorHandler = show_errors
    """The text the client is shown for a failure (``Messages(on_error=)``)."""
    speakers: bool = False
    """A tree of agents: text and reasoning parts name the agent that wrote them."""
    model: str | None = None
    """The model the app's agent is configured with: the metadata hook's moments say it
    (:func:`.metadata.agent_model`)."""

    def converter(
        self,
        message_id: str,
        *,
        policy: ToolPolicy | None,
        known_calls: Iterable[str] = (),
        started_at: float | None = None,
        live: bool = False,
        files_at: str | None = None,
    ) -> EventConverter:
        """The converter of one response; ``files_at``: the chat's path, where its files are
        served (:attr:`.EventConverter.files_at`)."""
        return EventConverter(
            message_id=message_id,
            known_calls=known_calls,
            send_usage=self.send_usage,
            message_metadata=self.message_metadata,
            started_at=started_at,
            model=self.model,
            policy=policy,
            live=live,
            on_error=self.on_error,
            speakers=self.speakers,
            files_at=files_at,
        )
