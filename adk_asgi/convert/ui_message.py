"""The AI SDK client's side of the UI message stream, in Python: chunks → ``UIMessage``.

A test of a chat app should check what the user's browser will *show* and *send back*, not only
the chunks the server wrote: a chunk sequence can look right and still leave the stock client
with a duplicated message, a tool part in the wrong state, or a step the ``sendAutomaticallyWhen``
helpers never send. :class:`StreamingMessage` replays the AI SDK's own state machine
(``processUIMessageStream`` of ``ai@6``, with ``ai@7``'s approval fields and its
``tool-approval-response``, which the server sends a v7 client only) on parsed chunks, and the
two ``last_assistant_…``
predicates of :mod:`.auto_send` are the stock helpers that decide when ``useChat`` sends a chat by
itself.

Messages are plain JSON dicts, exactly what ``JSON.stringify`` makes of the client's objects (a
key the client leaves ``undefined`` is absent), so they can be posted back as they are and
compared with ``GET /chat/{id}/messages``. A ``tool-input-delta``'s text is parsed as the AI
SDK parses partial JSON (:mod:`.partial_json`). One simplification, not reachable from this
package's server: data parts are not validated against schemas.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from adk_asgi.convert.partial_json import parse_partial_json
from adk_asgi.convert.ui_parts import (
    MISSING,
    UIMessageDict,
    is_tool_part,
    last_step,
    put,
    tool_name,
    update_tool_part,
)

__all__ = ["NOT_MODELLED", "StreamingMessage", "UIMessageStreamError", "read_ui_message"]

NOT_MODELLED: Final = frozenset(
    {"abort", "custom", "reasoning-file", "reset-step", "steering-message"}
)
"""The chunk types :meth:`StreamingMessage.apply` leaves the message alone for: ``abort``, which
the client reads without changing the message, and ai@7 types this package's server never sends
(an ai@7 client adds a ``reasoning-file`` part, for one). Every other chunk type has a branch of
its own (tests/unit/test_chunk_types.py); sending one of these means modelling it first."""


class UIMessageStreamError(ValueError):
    """A chunk the AI SDK client rejects (a delta for a text part never started, a result for
    an unknown tool call…): the browser would end the request in its ``error`` state."""


def _merge(base: Any, update: Any) -> Any:
    """``mergeObjects`` of the AI SDK (message metadata): objects merge deeply, the rest is
    replaced."""
    if isinstance(base, dict) and isinstance(update, dict):
        merged = dict(base)
        for key, value in update.items():
            merged[key] = _merge(merged.get(key), value) if key in merged else value
        return merged
    return update


@dataclass
class _PartialCall:
    text: str
    tool_name: str
    dynamic: bool
    input_encoding: Any = MISSING
    title: Any = MISSING
    tool_metadata: Any = MISSING


@dataclass
class StreamingMessage:
    """The assistant message one response builds, chunk by chunk (``StreamingUIMessageState``).

    ``StreamingMessage.begin(last_message, new_id)`` continues ``last_message`` when it is an
    assistant message (a continuation after an approval or a tool result updates that message
    in place) and starts an empty one otherwise. :meth:`apply` returns whether the chunk
    updated the message as the client shows it (``write()``); the chat then replaces the
    message of the same id, or appends it — so a continuation announcing another message id
    shows up as a second message, as it would in the browser.
    """

    message: UIMessageDict
    finish_reason: str | None = None
    error: str | None = None
    """The ``errorText`` of an ``error`` chunk. The client stops reading at it (``onError``
    throws), so later chunks change nothing."""
    v7: bool = False
    """ai@7's reducer, where it differs from ai@6's (a refused call's input)."""
    _active_text: dict[str, dict[str, Any]] = field(default_factory=dict)
    _active_reasoning: dict[str, dict[str, Any]] = field(default_factory=dict)
    _partial_calls: dict[str, _PartialCall] = field(default_factory=dict)

    @classmethod
    def begin(
        cls, last_message: UIMessageDict | None, message_id: str, *, v7: bool = False
    ) -> StreamingMessage:
        """``createStreamingUIMessageState``: continue a copy of ``last_message`` if it is the
        assistant's, else start a message with ``message_id`` (the client's own id, which the
        ``start`` chunk normally replaces with the server's)."""
        if last_message is not None and last_message.get("role") == "assistant":
            message = copy.deepcopy(last_message)
            message.setdefault("parts", [])
        else:
            message = {"id": message_id, "role": "assistant", "parts": []}
        state = cls(message=message, v7=v7)
        for part in last_step(message["parts"]):
            if is_tool_part(part) and part.get("state") == "input-streaming":
                state._partial_calls[part["toolCallId"]] = _PartialCall(
                    text=part.get("rawInput") or "",
                    tool_name=tool_name(part),
                    dynamic=part["type"] == "dynamic-tool",
                    input_encoding=part.get("inputEncoding", MISSING),
                    title=part.get("title", MISSING),
                    tool_metadata=part.get("toolMetadata", MISSING),
                )
        return state

    @property
    def parts(self) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = self.message["parts"]
        return parts

    def apply(self, chunk: Mapping[str, Any]) -> bool:
        """Apply one chunk; whether the client would re-render the message (``write()``).
        Raises :class:`UIMessageStreamError` where the AI SDK client throws."""
        if self.error is not None:
            return False
        kind = chunk.get("type")
        get = chunk.get
        if kind == "text-start" or kind == "reasoning-start":
            reasoning = kind == "reasoning-start"
            part: dict[str, Any] = (
                {"type": "reasoning", "id": chunk["id"]} if reasoning else {"type": "text"}
            )
            part.update(text="", state="streaming")
            put(part, "providerMetadata", get("providerMetadata", MISSING))
            (self._active_reasoning if reasoning else self._active_text)[chunk["id"]] = part
            self.parts.append(part)
        elif kind in ("text-delta", "text-end", "reasoning-delta", "reasoning-end"):
            assert isinstance(kind, str)
            active = self._active_reasoning if kind.startswith("reasoning") else self._active_text
            found = active.get(chunk["id"])
            if found is None:
                block = kind.split("-")[0]
                raise UIMessageStreamError(
                    f'Received {kind} for missing {block} part with ID "{chunk["id"]}". '
                    f'Ensure a "{block}-start" chunk is sent before any "{kind}" chunks.'
                )
            if kind.endswith("-delta"):
                found["text"] += chunk["delta"]
            else:
                found["state"] = "done"
                del active[chunk["id"]]
            if get("providerMetadata") is not None:
                found["providerMetadata"] = chunk["providerMetadata"]
        elif kind == "file":
            file = {"type": "file", "mediaType": chunk["mediaType"], "url": chunk["url"]}
            if get("providerMetadata") is not None:
                file["providerMetadata"] = chunk["providerMetadata"]
            self.parts.append(file)
        elif kind == "source-url" or kind == "source-document":
            keys = ("url", "title") if kind == "source-url" else ("mediaType", "title", "filename")
            source = {"type": kind, "sourceId": chunk["sourceId"]}
            for key in (*keys, "providerMetadata"):
                put(source, key, get(key, MISSING))
            self.parts.append(source)
        elif kind == "tool-input-start":
            self._partial_calls[chunk["toolCallId"]] = _PartialCall(
                text="",
                tool_name=chunk["toolName"],
                dynamic=bool(get("dynamic")),
                input_encoding=get("inputEncoding", MISSING),
                title=get("title", MISSING),
                tool_metadata=get("toolMetadata", MISSING),
            )
            update_tool_part(
                self.parts,
                chunk["toolCallId"],
                chunk["toolName"],
                "input-streaming",
                dynamic=bool(get("dynamic")),
                input_encoding=get("inputEncoding", MISSING),
                provider_executed=get("providerExecuted", MISSING),
                provider_metadata=get("providerMetadata", MISSING),
                title=get("title", MISSING),
                tool_metadata=get("toolMetadata", MISSING),
            )
        elif kind == "tool-input-delta":
            call = self._partial_calls.get(chunk["toolCallId"])
            if call is None:
                raise UIMessageStreamError(
                    "Received tool-input-delta for missing tool call with ID "
                    f'"{chunk["toolCallId"]}". Ensure a "tool-input-start" chunk is sent '
                    'before any "tool-input-delta" chunks.'
                )
            call.text += chunk["inputTextDelta"]
            partial: Any = call.text
            if call.input_encoding != "text":
                partial = parse_partial_json(call.text)
            update_tool_part(
                self.parts,
                chunk["toolCallId"],
                call.tool_name,
                "input-streaming",
                dynamic=call.dynamic,
                input=partial,
                raw_input=call.text,
                input_encoding=call.input_encoding,
                title=call.title,
                tool_metadata=call.tool_metadata,
            )
        elif kind == "tool-input-available" or kind == "tool-input-error":
            available = kind == "tool-input-available"
            dynamic = bool(get("dynamic"))
            if not available:
                existing = next(
                    (p for p in last_step(self.parts) if p.get("toolCallId") == get("toolCallId")),
                    None,
                )
                dynamic = existing["type"] == "dynamic-tool" if existing else dynamic
            as_input = available or dynamic or self.v7  # (ai@6 keeps an error's as rawInput)
            update_tool_part(
                self.parts,
                chunk["toolCallId"],
                chunk["toolName"],
                "input-available" if available else "output-error",
                dynamic=dynamic,
                input=get("input", MISSING) if as_input else MISSING,
                raw_input=MISSING if as_input else get("input", MISSING),
                error_text=MISSING if available else get("errorText", MISSING),
                provider_executed=get("providerExecuted", MISSING),
                provider_metadata=get("providerMetadata", MISSING),
                title=get("title", MISSING) if available else MISSING,
                tool_metadata=get("toolMetadata", MISSING),
            )
        elif kind == "tool-approval-request":
            part = self._tool_invocation(chunk["toolCallId"])
            part["state"] = "approval-requested"
            approval: dict[str, Any] = {"id": chunk["approvalId"]}
            if get("approvalDescriptor") is not None:
                approval["descriptor"] = chunk["approvalDescriptor"]
            if "inputSchemaInput" in chunk:
                approval["inputSchemaInput"] = chunk["inputSchemaInput"]
            if get("reason") is not None:  # v7: the server's reason for asking
                approval["requestReason"] = chunk["reason"]
            if get("isAutomatic") is True:  # v7: decided by the tool's rule, not the user
                approval["isAutomatic"] = True
            if get("signature") is not None:
                approval["signature"] = chunk["signature"]
            part["approval"] = approval
        elif kind == "tool-approval-response":  # v7 only
            part = self._tool_invocation_by_approval(chunk["approvalId"])
            part["state"] = "approval-responded"
            approval = {**part.get("approval", {}), "id": chunk["approvalId"]}
            approval["approved"] = chunk["approved"]
            if get("reason") is not None:
                approval["reason"] = chunk["reason"]
            part["approval"] = approval
            if get("providerExecuted") is not None:
                part["providerExecuted"] = chunk["providerExecuted"]
            if get("providerMetadata") is not None:
                part["callProviderMetadata"] = chunk["providerMetadata"]
        elif kind == "tool-output-denied":
            self._tool_invocation(chunk["toolCallId"])["state"] = "output-denied"
        elif kind == "tool-output-available" or kind == "tool-output-error":
            part = self._tool_invocation(chunk["toolCallId"])
            dynamic = part["type"] == "dynamic-tool"
            available = kind == "tool-output-available"
            update_tool_part(
                self.parts,
                chunk["toolCallId"],
                tool_name(part),
                "output-available" if available else "output-error",
                dynamic=dynamic,
                existing=part,
                input=part.get("input", MISSING),
                output=get("output", MISSING) if available else MISSING,
                error_text=MISSING if available else get("errorText", MISSING),
                raw_input=MISSING if available or dynamic else part.get("rawInput", MISSING),
                preliminary=get("preliminary", MISSING) if available else MISSING,
                provider_executed=get("providerExecuted", MISSING),
                provider_metadata=get("providerMetadata", MISSING),
                title=part.get("title", MISSING),
                tool_metadata=get("toolMetadata", part.get("toolMetadata", MISSING)),
            )
        elif kind == "start-step":
            self.parts.append({"type": "step-start"})
            return False
        elif kind == "finish-step":
            self._active_text.clear()
            self._active_reasoning.clear()
            return False
        elif kind == "start":
            if get("messageId") is not None:
                self.message["id"] = chunk["messageId"]
            self._metadata(get("messageMetadata"))
            return get("messageId") is not None or get("messageMetadata") is not None
        elif kind == "finish" or kind == "message-metadata":
            if kind == "finish" and get("finishReason") is not None:
                self.finish_reason = chunk["finishReason"]
            self._metadata(get("messageMetadata"))
            return get("messageMetadata") is not None
        elif kind == "error":
            self.error = str(get("errorText"))
            return False
        elif isinstance(kind, str) and kind.startswith("data-"):
            if get("transient"):
                return False
            existing = (
                next(
                    (p for p in self.parts if p.get("type") == kind and p.get("id") == chunk["id"]),
                    None,
                )
                if get("id") is not None
                else None
            )
            if existing is not None:
                existing["data"] = get("data")
            else:
                self.parts.append(dict(chunk))
        else:  # NOT_MODELLED, or not a chunk type (the client's schema would refuse it)
            return False
        return True

    def _metadata(self, metadata: Any) -> None:
        if metadata is not None:
            current = self.message.get("metadata")
            self.message["metadata"] = (
                _merge(current, metadata) if current is not None else metadata
            )

    def _tool_invocation(self, call_id: str) -> dict[str, Any]:
        """``getToolInvocation``: the call's part in the current step, else the latest one."""
        for part in [*last_step(self.parts), *self.parts[::-1]]:
            if is_tool_part(part) and part.get("toolCallId") == call_id:
                return part
        raise UIMessageStreamError(f'No tool invocation found for tool call ID "{call_id}".')

    def _tool_invocation_by_approval(self, approval_id: str) -> dict[str, Any]:
        """v7's ``getToolInvocationByApprovalId``: the first part with that approval."""
        for part in self.parts:
            if is_tool_part(part) and (part.get("approval") or {}).get("id") == approval_id:
                return part
        raise UIMessageStreamError(f'No tool invocation found for approval ID "{approval_id}".')


def read_ui_message(
    chunks: Sequence[Mapping[str, Any]],
    continuing: UIMessageDict | None = None,
    *,
    message_id: str = "",
) -> UIMessageDict:
    """The assistant message the AI SDK client builds from ``chunks`` (continuing a copy of
    ``continuing``, the assistant message a continuation was sent for)."""
    state = StreamingMessage.begin(continuing, message_id)
    for chunk in chunks:
        state.apply(chunk)
    return state.message
