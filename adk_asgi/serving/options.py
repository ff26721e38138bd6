"""``AdkApp``'s options, grouped by what they are for: each group one frozen, typed object.

``AdkApp(agent)`` is the common case, and what ADK's ``Runner`` itself takes (the session,
artifact and memory services, plugins, run configs) stays a plain keyword argument, as do
``identify``, ``request_state`` and ``ai_sdk_version``. The rest come in groups, each with
every default filled in, so a deployment names only what it changes::

    AdkApp(agent, limits=Limits(busy_timeout=10), security=Security(allowed_origins=[...]))

The groups check their values when built, so a wrong one fails where it was written, not at
the first request. docs/reference.md documents every field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from adk_asgi.convert.failures import ErrorHandler
from adk_asgi.convert.metadata import MessageMetadata
from adk_asgi.hitl.dynamic_tools import DynamicTools
from adk_asgi.serving.file_urls import AllowFileUrl
from adk_asgi.stores.claims import Claims
from adk_asgi.stores.locks import ChatLocks
from adk_asgi.stores.resumable import StreamStore

DEFAULT_WRITE_INTERVAL: Final = 0.01
"""Seconds: at most one body write per interval (finer than a 60 Hz frame)."""

DEFAULT_KEEP_ALIVE: Final = 15.0
"""Seconds of silence after which a comment is written: proxies (nginx, Next.js rewrites,
load balancers) cut a response that sends nothing for 30 to 60 s, and a tool or the model can
think that long."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """``AdkApp(limits=Limits(...))``: how much a request may bring, and how long each wait
    lasts (docs/security.md, docs/hitl.md)."""

    max_body_size: int = 4 * 1024 * 1024
    """Bytes a ``POST /chat`` body may hold (a larger one gets ``413``)."""
    max_frame_size: int | None = None
    """Bytes a ``WS /live`` frame may hold (a larger one closes with ``1009``); ``None``: the
    same as ``max_body_size``."""
    body_timeout: float = 15.0
    """Seconds a request body may pause mid-way before it gets ``408``."""
    busy_timeout: float = 30.0
    """Seconds a request waits for its chat while another run holds it, before ``409``."""
    approval_timeout: float = 300.0
    """Seconds a live tool call waits for the user's approval."""
    client_tool_timeout: float = 300.0
    """Seconds a live tool call waits for the browser's result."""
    live_detached_timeout: float = 25.0
    """Seconds a live answer goes on after its socket closed, with a stream store."""

    def __post_init__(self) -> None:
        for name in ("max_body_size", "max_frame_size"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"limits.{name} must be > 0 bytes: {value!r}")
        for name in (
            "body_timeout",
            "busy_timeout",
            "approval_timeout",
            "client_tool_timeout",
            "live_detached_timeout",
        ):
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"limits.{name} must be >= 0 seconds: {value!r}")

    @property
    def frame_size(self) -> int:
        """The largest live frame, in bytes."""
        return self.max_body_size if self.max_frame_size is None else self.max_frame_size


@dataclass(frozen=True, slots=True, kw_only=True)
class Streaming:
    """``AdkApp(streaming=Streaming(...))``: how chunks are written to the socket
    (docs/sse.md#write-coalescing)."""

    sse_write_interval: float = DEFAULT_WRITE_INTERVAL
    """Seconds: chunks that come within it of the last SSE write go out together; ``0``:
    every chunk as it comes."""
    sse_keep_alive: float | None = DEFAULT_KEEP_ALIVE
    """Seconds without a write before a ``: keep-alive`` comment; ``None``: never."""
    live_write_interval: float = DEFAULT_WRITE_INTERVAL
    """``sse_write_interval`` for ``WS /live``: text deltas within it merge into one."""

    def __post_init__(self) -> None:
        for name in ("sse_write_interval", "live_write_interval"):
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"streaming.{name} must be >= 0 seconds: {value!r}")
        if self.sse_keep_alive is not None and not self.sse_keep_alive > 0:
            raise ValueError(
                f"streaming.sse_keep_alive must be > 0 seconds or None: {self.sse_keep_alive!r}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Messages:
    """``AdkApp(messages=Messages(...))``: what the assistant's UI messages carry besides the
    agent's own parts (docs/metadata.md, docs/tools.md#dynamic-tools)."""

    send_usage: bool = False
    """The answer's summed token usage in its ``finish`` chunk's ``messageMetadata.usage``."""
    message_metadata: MessageMetadata | None = None
    """``message_metadata(moment) -> dict | None``: the ``messageMetadata`` of ``start``, each
    ``finish-step`` and ``finish``."""
    message_id_factory: Callable[[], str] | None = None
    """Makes each new assistant message's id; by default ``msg_`` and 24 random hex digits."""
    on_error: ErrorHandler | None = None
    """``on_error(error) -> str``: the text the client is shown when the agent fails; by
    default the error is logged and the client reads "An error occurred."."""
    dynamic_tools: DynamicTools | None = None
    """The tools sent as ``dynamic-tool`` parts (names, or a predicate of a name); by default
    the tools of the agents' toolsets."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Stores:
    """``AdkApp(stores=Stores(...))``: what the workers share (docs/deployment.md)."""

    locks: ChatLocks | None = None
    """Where one-run-per-chat is kept; by default next to the sessions."""
    claims: Claims | None = None
    """Where answers are claimed, so each is acted on once; by default next to the sessions."""
    streams: StreamStore | None = None
    """Where each answer under way is kept, so a reload or another connection resumes it;
    ``None``: answers are not resumable."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Security:
    """``AdkApp(security=Security(...))``: which pages may talk to the app, and which file
    URLs a message may carry (docs/security.md)."""

    allowed_origins: Sequence[str] = ()
    """Web origins besides the request's own that may open ``WS /live`` and send ``POST`` /
    ``DELETE``; ``["*"]``: any (only with an ``identify`` of your own)."""
    trust_forwarded: bool = False
    """The request's own origin is what a proxy's ``Forwarded`` / ``X-Forwarded-Host`` say."""
    allowed_file_url: AllowFileUrl | None = None
    """``allowed_file_url(url, user_id) -> bool``: file URLs a user message may carry besides
    ``data:`` and the chat's own uploads."""
