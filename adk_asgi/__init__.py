"""Serve Google ADK agents to Vercel AI SDK chat UIs over SSE and WebSocket."""

from .app import AdkApp
from .convert import EventConverter
from .encoding import ChunkEncoder
from .identity import Identify, Unauthorized
from .messages import ChatRequest, RequestError, UIMessage, decode_chat_request
from .translate import TranslationError, user_content

__all__ = [
    "AdkApp",
    "ChatRequest",
    "ChunkEncoder",
    "EventConverter",
    "Identify",
    "RequestError",
    "TranslationError",
    "UIMessage",
    "Unauthorized",
    "decode_chat_request",
    "user_content",
]
