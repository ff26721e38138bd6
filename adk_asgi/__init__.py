"""Serve Google ADK agents to Vercel AI SDK chat UIs over SSE and WebSocket."""

from .app import AdkApp
from .claims import Claims, InMemoryClaims
from .convert import EventConverter
from .encoding import ChunkEncoder
from .errors import AdkAsgiError, ClientError
from .identity import Identify, Unauthorized
from .locks import ChatBusy, ChatLocks, InMemoryChatLocks, Lease
from .messages import ChatRequest, RequestError, UIMessage, decode_chat_request
from .middleware import AdkMiddleware
from .resumable import StreamStore
from .server_answers import CallAlreadyAnswered, CallNotOpen, UnknownCall
from .tools import ClientTool, client_tool
from .translate import TranslationError, user_content

__all__ = [
    "AdkApp",
    "AdkAsgiError",
    "AdkMiddleware",
    "CallAlreadyAnswered",
    "CallNotOpen",
    "ChatBusy",
    "ChatLocks",
    "ChatRequest",
    "ChunkEncoder",
    "Claims",
    "ClientError",
    "ClientTool",
    "EventConverter",
    "Identify",
    "InMemoryChatLocks",
    "InMemoryClaims",
    "Lease",
    "RequestError",
    "StreamStore",
    "TranslationError",
    "UIMessage",
    "Unauthorized",
    "UnknownCall",
    "client_tool",
    "decode_chat_request",
    "user_content",
]
