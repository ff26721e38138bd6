"""The AI SDK client's side of the UI message stream, in Python: chunks → ``UIMessage``.

A test of a chat app should check what the user's browser will *show* and *send back*, not only
the chunks the server wrote: a chunk sequence can look right and still leave the stock client
with a duplicated message, a tool part in the wrong state, or a step the ``sendAutomaticallyWhen``
helpers never send. :class:`StreamingMessage` replays the AI SDK's own state machine
(``processUIMessageStream`` of ``ai@6``) on parsed chunks, and the two ``last_assistant_…``
predicates are the stock helpers that decide when ``useChat`` sends a chat by itself.

Messages are plain JSON dicts, exactly what ``JSON.stringify`` makes of the client's objects (a
key the client leaves ``undefined`` is absent), so they can be posted back as they are and
compared with ``GET /chat/{id}/messages``. Two simplifications, neither reachable from this
package's server: a ``tool-input-delta`` is parsed as complete JSON (the server sends a call's
input in one delta; the AI SDK repairs partial JSON), and data parts are not validated against
schemas.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

__all__ = [
    "Chunk",
    "SendAutomaticallyWhen",
    "StreamingMessage",
    "UIMessageDict",
    "UIMessageStreamError",
    "is_tool_part",
    "last_assistant_message_is_complete_with_approval_responses",
    "last_assistant_message_is_complete_with_tool_calls",
    "read_ui_message",
    "stock_send_automatically_when",
    "tool_name",
]

Chunk: TypeAlias = dict[str, Any]
"""One chunk of the UI message stream, as parsed from its ``data:`` line."""
UIMessageDict: TypeAlias = dict[str, Any]
"""A ``UIMessage`` as JSON: ``{"id", "role", "parts", "metadata"?}``."""
SendAutomaticallyWhen: TypeAlias = Callable[[Sequence[UIMessageDict]], bool]
"""``useChat({sendAutomaticallyWhen})``: given the chat's messages, whether to send them."""

_MISSING: Final[Any] = object()
"""A key the chunk does not have: JavaScript's ``undefined``, as opposed to JSON ``null``."""

_OUTPUT_STATES: Final = ("output-available", "output-error")


class UIMessageStreamError(ValueError):
    """A chunk the AI SDK client rejects (a delta for a text part never started, a result for
    an unknown tool call…): the browser would end the request in its ``error`` state."""


def is_tool_part(part: Mapping[str, Any]) -> bool:
    """``isToolUIPart``: a static ``tool-<name>`` part or a ``dynamic-tool`` part."""
    kind = part.get("type", "")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def _is_static_tool_part(part: Mapping[str, Any]) -> bool:
    kind = part.get("type", "")
    return isinstance(kind, str) and kind.startswith("tool-")


def tool_name(part: Mapping[str, Any]) -> str:
    """The tool of a tool part, static (``tool-<name>``) or dynamic (``toolName``)."""
    return str(part["toolName"] if part["type"] == "dynamic-tool" else part["type"][5:])


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    """``target[key] = value`` in JavaScript: assigning ``undefined`` leaves the key out."""
    if value is _MISSING:
        target.pop(key, None)
    else:
        target[key] = value


def _last_step(parts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    start = max((i for i, p in enumerate(parts) if p.get("type") == "step-start"), default=-1)
    return list(parts[start + 1 :])


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
    input_encoding: Any = _MISSING
    title: Any = _MISSING
    tool_metadata: Any = _MISSING


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
    _active_text: dict[str, dict[str, Any]] = field(default_factory=dict)
    _active_reasoning: dict[str, dict[str, Any]] = field(default_factory=dict)
    _partial_calls: dict[str, _PartialCall] = field(default_factory=dict)

    @classmethod
    def begin(cls, last_message: UIMessageDict | None, message_id: str) -> StreamingMessage:
        """``createStreamingUIMessageState``: continue a copy of ``last_message`` if it is the
        assistant's, else start a message with ``message_id`` (the client's own id, which the
        ``start`` chunk normally replaces with the server's)."""
        if last_message is not None and last_message.get("role") == "assistant":
            message = copy.deepcopy(last_message)
            message.setdefault("parts", [])
        else:
            message = {"id": message_id, "role": "assistant", "parts": []}
        state = cls(message=message)
        for part in _last_step(message["parts"]):
            if is_tool_part(part) and part.get("state") == "input-streaming":
                state._partial_calls[part["toolCallId"]] = _PartialCall(
                    text=part.get("rawInput") or "",
                    tool_name=tool_name(part),
                    dynamic=part["type"] == "dynamic-tool",
                    input_encoding=part.get("inputEncoding", _MISSING),
                    title=part.get("title", _MISSING),
                    tool_metadata=part.get("toolMetadata", _MISSING),
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
            _put(part, "providerMetadata", get("providerMetadata", _MISSING))
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
                _put(source, key, get(key, _MISSING))
            self.parts.append(source)
        elif kind == "tool-input-start":
            self._partial_calls[chunk["toolCallId"]] = _PartialCall(
                text="",
                tool_name=chunk["toolName"],
                dynamic=bool(get("dynamic")),
                input_encoding=get("inputEncoding", _MISSING),
                title=get("title", _MISSING),
                tool_metadata=get("toolMetadata", _MISSING),
            )
            self._update_tool(
                chunk["toolCallId"],
                chunk["toolName"],
                "input-streaming",
                dynamic=bool(get("dynamic")),
                input_encoding=get("inputEncoding", _MISSING),
                provider_executed=get("providerExecuted", _MISSING),
                provider_metadata=get("providerMetadata", _MISSING),
                title=get("title", _MISSING),
                tool_metadata=get("toolMetadata", _MISSING),
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
                try:
                    partial = json.loads(call.text)
                except ValueError:
                    partial = _MISSING
            self._update_tool(
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
                    (p for p in _last_step(self.parts) if p.get("toolCallId") == get("toolCallId")),
                    None,
                )
                dynamic = existing["type"] == "dynamic-tool" if existing else dynamic
            self._update_tool(
                chunk["toolCallId"],
                chunk["toolName"],
                "input-available" if available else "output-error",
                dynamic=dynamic,
                input=get("input", _MISSING) if available or dynamic else _MISSING,
                raw_input=_MISSING if available or dynamic else get("input", _MISSING),
                error_text=_MISSING if available else get("errorText", _MISSING),
                provider_executed=get("providerExecuted", _MISSING),
                provider_metadata=get("providerMetadata", _MISSING),
                title=get("title", _MISSING) if available else _MISSING,
                tool_metadata=get("toolMetadata", _MISSING),
            )
        elif kind == "tool-approval-request":
            part = self._tool_invocation(chunk["toolCallId"])
            part["state"] = "approval-requested"
            approval: dict[str, Any] = {"id": chunk["approvalId"]}
            if get("approvalDescriptor") is not None:
                approval["descriptor"] = chunk["approvalDescriptor"]
            if "inputSchemaInput" in chunk:
                approval["inputSchemaInput"] = chunk["inputSchemaInput"]
            if get("signature") is not None:
                approval["signature"] = chunk["signature"]
            part["approval"] = approval
        elif kind == "tool-output-denied":
            self._tool_invocation(chunk["toolCallId"])["state"] = "output-denied"
        elif kind == "tool-output-available" or kind == "tool-output-error":
            part = self._tool_invocation(chunk["toolCallId"])
            dynamic = part["type"] == "dynamic-tool"
            available = kind == "tool-output-available"
            self._update_tool(
                chunk["toolCallId"],
                tool_name(part),
                "output-available" if available else "output-error",
                dynamic=dynamic,
                existing=part,
                input=part.get("input", _MISSING),
                output=get("output", _MISSING) if available else _MISSING,
                error_text=_MISSING if available else get("errorText", _MISSING),
                raw_input=_MISSING if available or dynamic else part.get("rawInput", _MISSING),
                preliminary=get("preliminary", _MISSING) if available else _MISSING,
                provider_executed=get("providerExecuted", _MISSING),
                provider_metadata=get("providerMetadata", _MISSING),
                title=part.get("title", _MISSING),
                tool_metadata=get("toolMetadata", part.get("toolMetadata", _MISSING)),
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
        else:
            return False  # abort, other chunks the v6 client reads without changing the message
        return True

    def _metadata(self, metadata: Any) -> None:
        if metadata is not None:
            current = self.message.get("metadata")
            self.message["metadata"] = (
                _merge(current, metadata) if current is not None else metadata
            )

    def _tool_invocation(self, call_id: str) -> dict[str, Any]:
        """``getToolInvocation``: the call's part in the current step, else the latest one."""
        for part in [*_last_step(self.parts), *self.parts[::-1]]:
            if is_tool_part(part) and part.get("toolCallId") == call_id:
                return part
        raise UIMessageStreamError(f'No tool invocation found for tool call ID "{call_id}".')

    def _update_tool(
        self,
        call_id: str,
        tool_name: str,
        state: str,
        *,
        dynamic: bool,
        existing: dict[str, Any] | None = None,
        input: Any = _MISSING,
        output: Any = _MISSING,
        error_text: Any = _MISSING,
        raw_input: Any = _MISSING,
        input_encoding: Any = _MISSING,
        preliminary: Any = _MISSING,
        provider_executed: Any = _MISSING,
        provider_metadata: Any = _MISSING,
        title: Any = _MISSING,
        tool_metadata: Any = _MISSING,
    ) -> None:
        """``updateToolPart`` / ``updateDynamicToolPart``: update the call's part of the
        current step in place, or append a new one."""
        part = existing
        if part is None:
            part = next(
                (
                    p
                    for p in _last_step(self.parts)
                    if p.get("toolCallId") == call_id
                    and (p.get("type") == "dynamic-tool" if dynamic else _is_static_tool_part(p))
                ),
                None,
            )
        metadata_key = (
            "resultProviderMetadata" if state in _OUTPUT_STATES else "callProviderMetadata"
        )
        if part is None:
            part = (
                {"type": "dynamic-tool", "toolName": tool_name}
                if dynamic
                else {"type": f"tool-{tool_name}"}
            )
            part.update(toolCallId=call_id, state=state)
            for key, value in [
                ("title", title),
                ("toolMetadata", tool_metadata),
                ("input", input),
                ("inputEncoding", input_encoding),
                ("output", output),
                ("rawInput", raw_input),
                ("errorText", error_text),
                ("providerExecuted", provider_executed),
                ("preliminary", preliminary),
            ]:
                if value is not _MISSING and (key != "inputEncoding" or value is not None):
                    part[key] = value
            if provider_metadata is not _MISSING and provider_metadata is not None:
                part[metadata_key] = provider_metadata
            self.parts.append(part)
            return
        part["state"] = state
        if dynamic:
            part["toolName"] = tool_name
        else:
            part["type"] = f"tool-{tool_name}"
        _put(part, "input", input)
        _put(part, "output", output)
        _put(part, "errorText", error_text)
        _put(part, "rawInput", raw_input)
        _put(part, "inputEncoding", _MISSING if input_encoding is None else input_encoding)
        _put(part, "preliminary", preliminary)
        if title is not _MISSING:
            part["title"] = title
        if tool_metadata is not _MISSING:
            part["toolMetadata"] = tool_metadata
        if provider_executed is not _MISSING and provider_executed is not None:
            part["providerExecuted"] = provider_executed
        if provider_metadata is not _MISSING and provider_metadata is not None:
            part[metadata_key] = provider_metadata


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


def _last_assistant_step(messages: Sequence[UIMessageDict]) -> list[dict[str, Any]] | None:
    if not messages or messages[-1].get("role") != "assistant":
        return None
    return _last_step(messages[-1].get("parts", []))


def _settled(part: Mapping[str, Any]) -> bool:
    return (
        part.get("state") == "output-available" and part.get("preliminary") is not True
    ) or part.get("state") == "output-error"


def last_assistant_message_is_complete_with_tool_calls(
    messages: Sequence[UIMessageDict],
) -> bool:
    """The AI SDK's ``lastAssistantMessageIsCompleteWithToolCalls``: the last step has client
    tool calls, all with a result, and no text still streaming after them."""
    step = _last_assistant_step(messages)
    if step is None:
        return False
    calls = [i for i, p in enumerate(step) if is_tool_part(p) and not p.get("providerExecuted")]
    if not calls:
        return False
    after = step[calls[-1] + 1 :]
    if any(p.get("type") == "text" and p.get("state") != "done" for p in after):
        return False
    return all(_settled(step[i]) for i in calls)


def last_assistant_message_is_complete_with_approval_responses(
    messages: Sequence[UIMessageDict],
) -> bool:
    """The AI SDK's ``lastAssistantMessageIsCompleteWithApprovalResponses``: the last step has
    an answered approval, and every tool part of it is answered or settled."""
    step = _last_assistant_step(messages)
    if step is None:
        return False
    tools = [p for p in step if is_tool_part(p)]
    return any(p.get("state") == "approval-responded" for p in tools) and all(
        _settled(p) or p.get("state") in ("output-denied", "approval-responded") for p in tools
    )


def stock_send_automatically_when(messages: Sequence[UIMessageDict]) -> bool:
    """``toolCallsDone(o) || approvalsDone(o)``: the ``sendAutomaticallyWhen`` docs/hitl.md
    recommends, with which every human-in-the-loop order works."""
    return last_assistant_message_is_complete_with_tool_calls(
        messages
    ) or last_assistant_message_is_complete_with_approval_responses(messages)
