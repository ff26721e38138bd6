"""``ChatClient``: drive an app the way the stock AI SDK ``useChat`` client does, in a test.

An app's own tests should not re-implement the browser: which body a continuation carries, which
message id it names, when the stock ``sendAutomaticallyWhen`` helpers send a chat by themselves,
and what the user sees once the chunks are applied. ``ChatClient`` keeps the chat's messages
like ``useChat`` (``toolCallsDone || approvalsDone``, as in docs/hitl.md) and talks to the app
in process, no server, no browser, the real request and response bytes, over either stock
transport: ``DefaultChatTransport``'s SSE (:mod:`.sse_transport`, through
``httpx.ASGITransport``) or ``WebSocketChatTransport``'s live socket (:mod:`.live_transport`).
This module is the chat: its messages, what the user does, and how an answer is applied.

It needs httpx (``pip install "adk-asgi[testing]"``), imported when a client is made, so the
rest of :mod:`adk_asgi.testing` works without it.
"""

from __future__ import annotations

import copy
import secrets
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from starlette.types import ASGIApp

from adk_asgi.convert.tool_answers import (
    add_tool_output,
    continued_message_id,
    respond_to_approval,
)
from adk_asgi.convert.ui_message import StreamingMessage
from adk_asgi.convert.ui_parts import UIMessageDict
from adk_asgi.testing.auto_send import SendAutomaticallyWhen, stock_send_automatically_when
from adk_asgi.testing.live_transport import LiveTransport
from adk_asgi.testing.response import ChatResponse, Transport
from adk_asgi.testing.sse_transport import SseTransport, parse_sse_chunks

if TYPE_CHECKING:
    import httpx

__all__ = [
    "MAX_AUTOMATIC_REQUESTS",
    "ChatClient",
    "ChatResponse",
    "TransportName",
    "parse_sse_chunks",
]

TransportName = Literal["sse", "live"]

MAX_AUTOMATIC_REQUESTS = 8
"""Automatic requests in a row after which the client gives up: the stock client would go on
sending the chat forever."""

_ID_ALPHABET = string.digits + string.ascii_letters


def _generate_id() -> str:
    """The AI SDK's default ``generateId``: 16 random letters and digits."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(16))


class ChatClient:
    """One chat in one browser, over an ASGI app that serves an ``AdkApp``.

    ``ChatClient(app, api="/agent/chat")`` — ``api`` as in ``DefaultChatTransport``: the
    ``POST /chat`` route under the app's mount prefix. Without an app, ``base_url`` is a
    running server's (``http://127.0.0.1:8000``), reached over the network, sockets
    included. ``transport="live"`` sends the same requests as ``WebSocketChatTransport``
    frames over one ``WS /live`` connection (``live``:
    its path, by default ``api``'s with ``/live`` for ``/chat``; ``params``: its query, such as
    ``{"sdk": "6"}`` or ``{"chatId": …}``), opened by the first request and kept until
    :meth:`disconnect` or :meth:`aclose`. ``messages`` holds the chat like
    ``useChat``'s ``messages`` (JSON ``UIMessage`` dicts); set it to a reloaded history to
    continue from there. Requests carry ``headers`` (for an ``identify`` of your own; live,
    on the handshake and in each frame) and the cookies the app set, so by default the client
    is one browser with AdkApp's per-browser cookie; pass ``http`` (another client's
    ``.http``) for another tab of the same browser. ``id_factory`` makes the chat id and the
    client's message ids (the AI SDK's ``generateId`` by default).
    ``send_automatically_when`` decides, after every answer and after ``approve`` /
    ``tool_result``, whether the chat is sent on its own; ``None`` never sends (then call
    :meth:`submit`).
    """

    def __init__(
        self,
        app: ASGIApp | None = None,
        *,
        transport: TransportName = "sse",
        http: httpx.AsyncClient | None = None,
        api: str = "/chat",
        live: str | None = None,
        params: Mapping[str, str] | None = None,
        chat_id: str | None = None,
        messages: Iterable[UIMessageDict] = (),
        headers: Mapping[str, str] | None = None,
        base_url: str | None = None,
        id_factory: Callable[[], str] = _generate_id,
        send_automatically_when: SendAutomaticallyWhen | None = stock_send_automatically_when,
    ) -> None:
        if transport not in ("sse", "live"):
            raise ValueError(f"transport: 'sse' or 'live', not {transport!r}")
        if app is None and http is None and base_url is None:
            raise TypeError("pass an ASGI app, http=<httpx.AsyncClient> or a server's base_url")
        if transport == "sse" and app is not None and http is not None:
            raise TypeError("pass exactly one of an ASGI app or http=<httpx.AsyncClient>")
        if http is None:
            try:
                import httpx
            except ImportError as exc:  # pragma: no cover - httpx comes with google-genai
                raise ImportError(
                    'ChatClient needs httpx: pip install "adk-asgi[testing]"'
                ) from exc
            if app is None:  # a running server, over the network
                http = httpx.AsyncClient(base_url=base_url or "")
            else:
                asgi = httpx.ASGITransport(app=app)
                http = httpx.AsyncClient(transport=asgi, base_url=base_url or "http://testserver")
            self._owns_http = True
        else:
            self._owns_http = False
        self.http: httpx.AsyncClient = http
        """The HTTP client: cookies, history, and any request of your own."""
        self.api = api
        self.headers = dict(headers or {})
        self.transport: Transport
        """How requests travel (:mod:`.sse_transport`, :mod:`.live_transport`)."""
        if transport == "live":
            path = live if live is not None else api.removesuffix("/chat") + "/live"
            self.transport = LiveTransport(app, http, path, params or {}, self.headers)
        else:
            self.transport = SseTransport(http, api, self.headers)
        self.id_factory = id_factory
        self.id = chat_id if chat_id is not None else id_factory()
        """The chat id: the ADK session id of this user's chat."""
        self.messages: list[UIMessageDict] = [copy.deepcopy(m) for m in messages]
        self.send_automatically_when = send_automatically_when

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the live connection, and the HTTP client if this client made it."""
        try:
            await self.transport.aclose()
        finally:
            if self._owns_http:
                await self.http.aclose()

    async def disconnect(self) -> None:
        """Live: close the connection now (``transport.close()``, a reload, a dropped
        network); the next request opens a new one. Over SSE there is none to close."""
        if isinstance(self.transport, LiveTransport):
            await self.transport.disconnect()

    # --- what the user does ---------------------------------------------------------------

    async def send(
        self,
        text: str | None = None,
        *,
        files: Sequence[Mapping[str, Any]] = (),
        metadata: Any = None,
        message_id: str | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ChatResponse:
        """``sendMessage({text, files, metadata, messageId})``: append a user message and post
        the chat. ``files`` are ``FileUIPart`` dicts (``{"type": "file", "mediaType", "url"}``);
        ``body`` adds keys to the request body (``sendMessage(msg, {body})``). ``message_id``
        edits the earlier user message of that id instead: the messages after it go, it is
        replaced (keeping its id) and the body names it (``messageId``); ``LookupError`` if the
        chat has no user message of that id."""
        parts: list[dict[str, Any]] = [dict(f) for f in files]
        if text is not None:
            parts.append({"type": "text", "text": text})
        message: UIMessageDict = {
            "id": message_id if message_id is not None else self.id_factory(),
            "role": "user",
            "parts": parts,
        }
        if metadata is not None:
            message["metadata"] = metadata
        if message_id is not None:
            index = self._index_of(message_id)
            if self.messages[index]["role"] != "user":
                raise LookupError(f"message {message_id!r} is not a user message")
            del self.messages[index:]
        self.messages.append(message)
        return await self._request(message_id, body, headers)

    async def regenerate(
        self,
        message_id: str | None = None,
        *,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ChatResponse:
        """``regenerate({messageId})``: answer anew. The last message goes if it is the
        assistant's (``message_id``: from that message on, or after it if it is a user
        message), then the chat is posted with ``trigger: "regenerate-message"`` and
        ``messageId`` = ``message_id`` (none without it, as the stock client sends it).
        ``LookupError`` if the chat has no message of that id."""
        index = len(self.messages) - 1 if message_id is None else self._index_of(message_id)
        if index < 0:
            raise LookupError("the chat has no message to regenerate")
        del self.messages[index if self.messages[index]["role"] == "assistant" else index + 1 :]
        return await self._request(message_id, body, headers, trigger="regenerate-message")

    async def approve(
        self,
        tool: str,
        approved: bool = True,
        *,
        reason: str | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ChatResponse | None:
        """``addToolApprovalResponse({id, approved, reason})`` on the part waiting for approval
        that ``tool`` names (a tool name — its first waiting part in the latest message that
        has one —, a tool call id or an approval id), then the request the stock
        ``sendAutomaticallyWhen`` sends: the whole chat, ``messageId`` = that message's id.
        ``None`` when it sends nothing yet (another part of the step still waits).
        ``body={"confirmationPayloads": {approval_id: {...}}}`` answers a tool that asked for
        a payload."""
        index = respond_to_approval(self.messages, tool, approved, reason)
        return await self._send_if_due(self.messages[index]["id"], body, headers)

    async def deny(
        self,
        tool: str,
        *,
        reason: str | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ChatResponse | None:
        """``approve(tool, approved=False, reason=…)``."""
        return await self.approve(tool, False, reason=reason, body=body, headers=headers)

    async def tool_result(
        self,
        tool: str,
        output: Any,
        *,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ChatResponse | None:
        """``addToolOutput({toolCallId, output})`` for the browser tool call ``tool`` names (a
        tool name — its first part waiting for a result, ``input-available`` or
        ``approval-responded``, in the latest message that has one —, or a tool call id),
        then the request the stock ``sendAutomaticallyWhen`` sends, or ``None``."""
        return await self._add_output(tool, "output-available", output, None, body, headers)

    async def tool_error(
        self,
        tool: str,
        error_text: str,
        *,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ChatResponse | None:
        """``addToolOutput({toolCallId, state: "output-error", errorText})``: the browser tool
        failed. As :meth:`tool_result` otherwise."""
        return await self._add_output(tool, "output-error", None, error_text, body, headers)

    async def submit(
        self,
        *,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ChatResponse:
        """``sendMessage()`` with no message: post the chat as it is, continuing the latest
        assistant message with an answered approval, else the last message. For a client
        whose ``sendAutomaticallyWhen`` did not send, or a ``messages`` list you edited."""
        return await self._request(continued_message_id(self.messages), body, headers)

    def submit_body(self, *, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The JSON body :meth:`submit` would post now, not posted: for a request of your
        own — sent twice, cut short, from another client — with the page's messages (a
        copy) as they stand, forged answers included. Live, the ``send`` frame (it takes a
        request id)."""
        message_id = continued_message_id(self.messages)
        return self.transport.body(self.id, self.messages, "submit-message", message_id, body, None)

    async def history(self) -> list[UIMessageDict]:
        """``GET {api}/{chat_id}/messages``: the chat as the server keeps it (what a reloaded
        page loads into ``useChat({messages})``). Raises ``httpx.HTTPStatusError`` on a
        refusal."""
        response = await self.http.get(f"{self.api}/{self.id}/messages", headers=self.headers)
        response.raise_for_status()
        messages: list[UIMessageDict] = response.json()
        return messages

    # --- how the stock client does it ----------------------------------------------------

    def _index_of(self, message_id: str) -> int:
        for index, message in enumerate(self.messages):
            if message["id"] == message_id:
                return index
        raise LookupError(f"the chat has no message {message_id!r}")

    async def _add_output(
        self,
        tool: str,
        state: str,
        output: Any,
        error_text: str | None,
        body: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
    ) -> ChatResponse | None:
        index = add_tool_output(self.messages, tool, state, output, error_text)
        return await self._send_if_due(self.messages[index]["id"], body, headers)

    def _due(self) -> bool:
        return self.send_automatically_when is not None and self.send_automatically_when(
            self.messages
        )

    async def _send_if_due(
        self,
        message_id: str,
        body: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
    ) -> ChatResponse | None:
        return await self._request(message_id, body, headers) if self._due() else None

    async def _request(
        self,
        message_id: str | None,
        extra: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        automatic: int = 0,
        trigger: str = "submit-message",
    ) -> ChatResponse:
        """``makeRequest({trigger, messageId})``: send the chat, apply the answer to the
        message it continues, then send again if the helpers say so."""
        body = self.transport.body(self.id, self.messages, trigger, message_id, extra, headers)
        index = len(self.messages) - 1
        if message_id is not None:
            index = next((i for i, m in enumerate(self.messages) if m["id"] == message_id), -1)
        continued = self.messages[index] if index != -1 else None
        if continued is None and self.messages:
            continued = self.messages[-1]
        earlier_id = None
        if continued is not None and continued["role"] == "assistant":
            earlier_id = continued["id"] if 0 <= index < len(self.messages) - 1 else None
        exchange = await self.transport.exchange(body, headers)
        if not exchange.started:
            return ChatResponse(
                exchange.status, body, [], None, exchange.error, None, closed=exchange.closed
            )
        state = StreamingMessage.begin(continued, self.id_factory())
        for chunk in exchange.chunks:
            if state.apply(chunk):
                self._write(state.message, earlier_id)
        error = state.error if state.error is not None else exchange.error
        result = ChatResponse(
            exchange.status,
            body,
            exchange.chunks,
            copy.deepcopy(state.message),
            error,
            state.finish_reason,
            closed=exchange.closed,
        )
        if error is None and self._due():
            if automatic >= MAX_AUTOMATIC_REQUESTS:
                raise RuntimeError(
                    f"the stock client would send this chat again after {automatic} automatic "
                    "requests in a row: its sendAutomaticallyWhen never stops holding"
                )
            result.followup = await self._request(
                self.messages[-1]["id"], extra, headers, automatic + 1
            )
        return result

    def _write(self, message: UIMessageDict, earlier_id: str | None) -> None:
        """Show the message: replace the one with its id, else the earlier assistant message
        the request continued, else append it."""
        for target in (message["id"], earlier_id):
            found = [i for i, m in enumerate(self.messages) if m["id"] == target]
            if target is not None and found:
                self.messages[found[-1]] = message
                return
        self.messages.append(message)
