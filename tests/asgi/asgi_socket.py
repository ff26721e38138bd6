"""The in-process ASGI WebSocket client, for the tests that speak the live protocol raw: it
lives in the package (:mod:`adk_asgi.testing.asgi_websocket`), where ``ChatClient``'s live
transport runs on it."""

from adk_asgi.testing.asgi_websocket import Closed, Denied, Socket, websocket

__all__ = ["Closed", "Denied", "Socket", "websocket"]
