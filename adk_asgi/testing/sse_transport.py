"""``ChatClient``'s SSE transport: the stock ``DefaultChatTransport``'s ``POST {api}``.

The body is the chat (``id``, ``messages``, ``trigger``, ``messageId``) with the request's extra
keys beside it; the answer is a UI message stream over SSE, read whole.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from adk_asgi.convert.ui_parts import Chunk, UIMessageDict
from adk_asgi.testing.response import Exchange
from adk_asgi.wire.sse_frames import DONE, sse_data

if TYPE_CHECKING:
    import httpx

__all__ = ["SseTransport", "parse_sse_chunks", "refusal"]


def parse_sse_chunks(body: str) -> list[Chunk]:
    """The chunks of a UI message stream body: each event's data, up to ``data: [DONE]``, read
    as the AI SDK client reads SSE (:mod:`adk_asgi.wire.sse_frames`)."""
    chunks: list[Chunk] = []
    for data in sse_data(body):
        if data == DONE:
            break
        chunks.append(json.loads(data))
    return chunks


def refusal(text: str) -> str:
    """What ``useChat``'s ``error`` says of a refused request (a ``POST``, or a live
    handshake) whose body is ``text``: its ``{"error": …}``, or the text itself."""
    try:
        reason = json.loads(text)
    except ValueError:
        return text
    error = reason.get("error") if isinstance(reason, dict) else None
    return error if isinstance(error, str) else text


class SseTransport:
    def __init__(self, http: httpx.AsyncClient, api: str, headers: Mapping[str, str]) -> None:
        self.http = http
        self.api = api
        self.headers = headers
        """The chat's own headers (the client's dict: changes to it apply)."""

    def body(
        self,
        chat_id: str,
        messages: list[UIMessageDict],
        trigger: str,
        message_id: str | None,
        extra: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            **(extra or {}),
            "id": chat_id,
            "messages": copy.deepcopy(messages),
            "trigger": trigger,
        }
        if message_id is not None:
            body["messageId"] = message_id
        return body

    async def exchange(self, body: dict[str, Any], headers: Mapping[str, str] | None) -> Exchange:
        response = await self.http.post(
            self.api, json=body, headers={**self.headers, **(headers or {})}
        )
        if not response.is_success:
            return Exchange(response.status_code, error=refusal(response.text), started=False)
        return Exchange(response.status_code, parse_sse_chunks(response.text))

    async def aclose(self) -> None:
        """Nothing of its own: the HTTP client is the chat's."""
