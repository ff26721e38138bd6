"""Serve Google ADK agents to Vercel AI SDK chat UIs over SSE and WebSocket.

What an application needs is importable from here. The package is layered, each layer a
subpackage that imports only the layers below it (docs/internals/architecture.md#layers):
:mod:`adk_asgi.wire` (chunks, requests, SSE frames) → :mod:`adk_asgi.hitl` (the server's truth
about tool calls) → :mod:`adk_asgi.convert` (events ↔ UI messages) — these three do no I/O —
then :mod:`adk_asgi.stores` (locks, claims, stream stores), :mod:`adk_asgi.serving` (what both
transports share), the transports :mod:`adk_asgi.sse` and :mod:`adk_asgi.live`,
:mod:`adk_asgi.routes`, and the application (:mod:`adk_asgi.app`, :mod:`adk_asgi.middleware`).
:mod:`adk_asgi.testing` serves tests and offline demos.
"""

from adk_asgi.app import AdkApp
from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.failures import AgentError, show_errors
from adk_asgi.convert.metadata import MessageMetadata, MessageMoment
from adk_asgi.convert.progress import PreliminaryOutputError, preliminary
from adk_asgi.convert.translate import TranslationError, user_content
from adk_asgi.errors import AdkAsgiError, ClientError
from adk_asgi.hitl.denials import deny
from adk_asgi.hitl.tools import ClientTool, client_tool
from adk_asgi.middleware import AdkMiddleware
from adk_asgi.server_answers import CallAlreadyAnswered, CallNotOpen, UnknownCall
from adk_asgi.serving.data_parts import DataPartError, send_data
from adk_asgi.serving.identity import Identify, Unauthorized
from adk_asgi.serving.options import Limits, Messages, Security, Stores, Streaming
from adk_asgi.serving.user_bounds import OverBound, UserBounds
from adk_asgi.stores.claims import Claims, InMemoryClaims
from adk_asgi.stores.locks import ChatBusy, ChatLocks, InMemoryChatLocks, Lease
from adk_asgi.stores.resumable import InMemoryStreamStore, StreamStore
from adk_asgi.wire.encoding import ChunkEncoder
from adk_asgi.wire.messages import ChatRequest, RequestError, UIMessage, decode_chat_request

__version__ = "0.1.0"
"""This release's version (CHANGELOG.md); the distribution's too (pyproject.toml reads it)."""

__all__ = [
    "AdkApp",
    "AdkAsgiError",
    "AdkMiddleware",
    "AgentError",
    "CallAlreadyAnswered",
    "CallNotOpen",
    "ChatBusy",
    "ChatLocks",
    "ChatRequest",
    "ChunkEncoder",
    "Claims",
    "ClientError",
    "ClientTool",
    "DataPartError",
    "EventConverter",
    "Identify",
    "InMemoryChatLocks",
    "InMemoryClaims",
    "InMemoryStreamStore",
    "Lease",
    "Limits",
    "MessageMetadata",
    "MessageMoment",
    "Messages",
    "OverBound",
    "PreliminaryOutputError",
    "RequestError",
    "Security",
    "Stores",
    "StreamStore",
    "Streaming",
    "TranslationError",
    "UIMessage",
    "Unauthorized",
    "UnknownCall",
    "UserBounds",
    "client_tool",
    "decode_chat_request",
    "deny",
    "preliminary",
    "send_data",
    "show_errors",
    "user_content",
]
