"""UI messages → ADK ``Content``: the sans-I/O sibling of the converter.

The client sends its whole copy of the chat with every request, but the ADK session is the
truth: only the *new* input is translated — the last user message of a new turn, or, for a
continuation of an assistant message, the answers it carries (approval decisions, client tool
results), each checked against the open calls of the session and turned into a function
response.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.genai import types

from .messages import (
    DataPart,
    FilePart,
    StepStartPart,
    TextPart,
    ToolPart,
    UIMessage,
)
from .pending import CONFIRMATION_TOOL, REJECTED, ChatState, ToolCall, client_approval_id


class TranslationError(ValueError):
    """A message that cannot become ADK input; the message says why (a client error)."""


def decode_data_url(url: str) -> tuple[str, bytes]:
    """``data:<mime>[;base64],<payload>`` → ``(mime, bytes)``."""
    header, sep, payload = url.partition(",")
    if not sep or not header.startswith("data:"):
        raise TranslationError("a data URL must look like data:<type>[;base64],<data>")
    params = header[len("data:") :].split(";")
    mime = params[0] or "text/plain"
    if "base64" in params[1:]:
        try:
            return mime, base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise TranslationError("a data URL's base64 payload is invalid") from None
    return mime, urllib.parse.unquote_to_bytes(payload)


def file_to_part(part: FilePart) -> types.Part:
    """A file part: inline bytes for a ``data:`` URL, a file reference for anything else."""
    if part.url.startswith("data:"):
        _, data = decode_data_url(part.url)
        return types.Part(
            inline_data=types.Blob(mime_type=part.media_type, data=data, display_name=part.filename)
        )
    scheme = urllib.parse.urlsplit(part.url).scheme
    if scheme not in ("http", "https", "gs"):
        raise TranslationError(f"a file URL must be data:, http(s): or gs:, not {scheme or '?'}:")
    return types.Part(
        file_data=types.FileData(
            file_uri=part.url, mime_type=part.media_type, display_name=part.filename
        )
    )


def user_content(message: UIMessage) -> types.Content:
    """The new user turn as ADK input.

    Text and files become parts. ``data-*`` and ``step-start`` parts are the app's own
    bookkeeping and are not model input; anything else has no meaning in a user message.
    """
    if message.role != "user":
        raise TranslationError(f"expected a user message, got a {message.role} message")
    parts: list[types.Part] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                parts.append(types.Part(text=part.text))
        elif isinstance(part, FilePart):
            parts.append(file_to_part(part))
        elif isinstance(part, DataPart | StepStartPart):
            continue
        else:
            raise TranslationError(f"a user message cannot carry a {part.type!r} part")
    if not parts:
        raise TranslationError("the user message has no text or file to send")
    return types.Content(role="user", parts=parts)


# --- continuations -----------------------------------------------------------------------------


class Conflict(ValueError):
    """A continuation that does not match the chat's open calls (409): forged, stale or replayed."""


@dataclass(slots=True)
class Continuation:
    """What a continuation request answers, checked against the session.

    ``responses`` go to ADK as one user ``Content`` (function responses only: ADK refuses text
    mixed with them). ``denied`` calls are shown as denied at once — unless ``released`` client
    calls (approved, handed to the browser now, before any new step) run in the same step: then
    the denials are shown with the browser's result, since the stock
    ``lastAssistantMessageIsCompleteWithToolCalls`` never sends a step that holds a denied part,
    while the approvals helper sends one whose denials are still ``approval-responded``.
    ``redenied`` are those denials, re-sent by that later request: already recorded, shown now
    (:meth:`shown_denials`).
    """

    responses: list[types.Part] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    released: list[ToolCall] = field(default_factory=list)
    redenied: list[str] = field(default_factory=list)
    known_calls: set[str] = field(default_factory=set)

    def shown_denials(self, browser_runs: bool) -> list[str]:
        """The calls to show as denied in this response; ``browser_runs``: a released call
        runs in the browser now (in live mode an approved server tool is released too)."""
        return self.redenied + ([] if browser_runs else self.denied)

    @property
    def empty(self) -> bool:
        return not (self.responses or self.denied or self.released)


NeedsApproval = Callable[[ToolCall], bool]
"""Whether a client tool call needs the user's approval before the browser runs it."""


def _tool_output(part: ToolPart) -> dict[str, Any]:
    if part.state == "output-error":
        return {"error": part.error_text or "The tool failed."}
    if isinstance(part.output, dict):
        return part.output
    return {"result": part.output}


def continuation(
    message: UIMessage,
    state: ChatState,
    needs_approval: NeedsApproval,
    payloads: Mapping[str, Any] | None = None,
) -> Continuation:
    """Translate the tool parts of a continued assistant message into ADK input.

    The client re-sends the whole message with every continuation, so parts that describe calls
    already settled are history and are skipped; parts that *answer* something (an approval
    decision, a client tool's result) must match an open call of this session, or the request
    is a :class:`Conflict`. ``payloads`` maps approval ids to ADK confirmation payloads.
    """
    result = Continuation()
    seen: set[str] = set()
    for part in message.parts:
        if not isinstance(part, ToolPart) or part.tool_call_id in seen:
            continue
        seen.add(part.tool_call_id)
        call = state.calls.get(part.tool_call_id)
        if call is None:
            if part.state in ("approval-responded", "output-available", "output-error"):
                raise Conflict(f"tool call {part.tool_call_id!r} is not part of this chat")
            continue
        result.known_calls.add(call.id)
        if call.message_id is not None and call.message_id != message.id:
            raise Conflict(f"tool call {call.id!r} does not belong to message {message.id!r}")
        if part.state == "approval-responded":
            _answer_approval(part, call, state, needs_approval, payloads or {}, result)
        elif part.state in ("output-available", "output-error"):
            _answer_client_call(part, call, state, needs_approval, result)
    if result.empty:
        raise Conflict("this request answers no open tool call of the chat")
    return result


def _answer_approval(
    part: ToolPart,
    call: ToolCall,
    state: ChatState,
    needs_approval: NeedsApproval,
    payloads: Mapping[str, Any],
    result: Continuation,
) -> None:
    approval = part.approval
    if approval is None or approval.approved is None:
        raise Conflict(f"tool call {call.id!r} is approval-responded without a decision")
    confirmation = state.open_confirmations.get(approval.id)
    if confirmation is not None:
        if confirmation.call_id != call.id:
            raise Conflict(f"approval {approval.id!r} is not for tool call {call.id!r}")
        response: dict[str, Any] = {"confirmed": approval.approved}
        if approval.id in payloads:
            response["payload"] = payloads[approval.id]
        elif approval.reason and confirmation.payload is None:
            response["payload"] = {"reason": approval.reason}
        result.responses.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=approval.id, name=CONFIRMATION_TOOL, response=response
                )
            )
        )
        if not approval.approved:
            result.denied.append(call.id)
        return
    if approval.approved is False and state.denied(call.id):
        result.redenied.append(call.id)  # decided already; shown late (``shown_denials``)
        return
    is_client_approval = approval.id == client_approval_id(call.id) and needs_approval(call)
    if not is_client_approval or approval.id in state.decided_confirmations:
        raise Conflict(f"approval {approval.id!r} is not open in this chat")
    if state.open_client_call(call.id) is None or call.id in state.approved_client_calls:
        raise Conflict(f"approval {approval.id!r} was already answered")
    if approval.approved:
        result.released.append(call)
    else:
        result.responses.append(_function_response(call, REJECTED))
        result.denied.append(call.id)


def _answer_client_call(
    part: ToolPart,
    call: ToolCall,
    state: ChatState,
    needs_approval: NeedsApproval,
    result: Continuation,
) -> None:
    if state.open_client_call(call.id) is None:
        return  # a settled call, re-sent as history
    if needs_approval(call) and call.id not in state.approved_client_calls:
        approval = part.approval
        approved_now = (
            approval is not None
            and approval.approved is True
            and approval.id == client_approval_id(call.id)
        )
        if not approved_now:
            raise Conflict(f"tool call {call.id!r} needs the user's approval before its result")
    result.responses.append(_function_response(call, _tool_output(part)))


def _function_response(call: ToolCall, response: dict[str, Any]) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call.id, name=call.name, response=response)
    )
