"""Serve Google ADK agents to Vercel AI SDK chat UIs over SSE and WebSocket."""

from .app import AdkApp
from .convert import EventConverter
from .encoding import ChunkEncoder
from .identity import Identify, Unauthorized
from .messages import ChatRequest, RequestError, UIMessage, decode_chat_request
from .middleware import AdkMiddleware
from .tools import ClientTool, client_tool
from .translate import TranslationError, user_content

__all__ = [
    "AdkApp",
    "AdkMiddleware",
    "ChatRequest",
    "ChunkEncoder",
    "ClientTool",
    "EventConverter",
    "Identify",
    "RequestError",
    "TranslationError",
    "UIMessage",
    "Unauthorized",
    "client_tool",
    "decode_chat_request",
    "user_content",
]
