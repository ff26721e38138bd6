"""ADK values in the AI SDK's vocabulary, one at a time: finish reasons, tool results, errors,
what a tool asked the user, and which parts of an event the client sees (sans-I/O)."""

from __future__ import annotations

import base64
from typing import Any, Final

import msgspec
from google.adk.events.event import Event
from google.genai import types

from adk_asgi.hitl.pending import CONFIRMATION_TOOL
from adk_asgi.wire.chunks import File, FinishReason, SourceUrl, ToolOutputAvailable, ToolOutputError

_CONTENT_FILTER: Final = frozenset(
    {
        types.FinishReason.SAFETY,
        types.FinishReason.RECITATION,
        types.FinishReason.BLOCKLIST,
        types.FinishReason.PROHIBITED_CONTENT,
        types.FinishReason.SPII,
        types.FinishReason.IMAGE_SAFETY,
        types.FinishReason.IMAGE_PROHIBITED_CONTENT,
        types.FinishReason.IMAGE_RECITATION,
    }
)


_JSON = msgspec.json.Encoder()


def to_json(value: Any) -> str:
    return _JSON.encode(value).decode()


def map_finish_reason(reason: types.FinishReason | None) -> FinishReason:
    """Gemini's finish reason in the AI SDK's vocabulary (an unknown value is ``other``)."""
    if reason is None or reason == types.FinishReason.STOP:
        return "stop"
    if reason == types.FinishReason.MAX_TOKENS:
        return "length"
    if reason in _CONTENT_FILTER:
        return "content-filter"
    if reason in (
        types.FinishReason.MALFORMED_FUNCTION_CALL,
        types.FinishReason.UNEXPECTED_TOOL_CALL,
    ):
        return "error"
    return "other"


def tool_result_chunk(call_id: str, response: Any) -> ToolOutputAvailable | ToolOutputError:
    """A function response as the client shows it.

    ADK's convention for a failed tool is a response holding only an ``error`` string (its own
    "no tool with that name", ``on_tool_error_callback`` results, tools that report failure);
    that becomes ``tool-output-error`` so the UI shows a failure, not a result.
    """
    if (
        isinstance(response, dict)
        and set(response) == {"error"}
        and isinstance(response["error"], str)
    ):
        return ToolOutputError(tool_call_id=call_id, error_text=response["error"])
    return ToolOutputAvailable(tool_call_id=call_id, output=response)


def as_sent(answer: Any) -> Any:
    """A browser's or the user's answer as the client sent it: one that was not an object went
    to ADK as ``{"result": value}`` (a function response is an object), as ADK's own clients
    send it."""
    if isinstance(answer, dict) and set(answer) == {"result"}:
        return answer["result"]
    return answer


TRANSFER_TOOL: Final = "transfer_to_agent"


def shown_result(name: str, args: dict[str, Any], response: Any) -> Any:
    """A tool's result as the client is shown it. ADK's ``transfer_to_agent`` returns nothing
    (``{"result": null}``) and hands the conversation over through the event's actions; the
    card shows what happened instead: ``{"transferredTo": <agent>}``."""
    agent = args.get("agent_name")
    if name == TRANSFER_TOOL and response == {"result": None} and isinstance(agent, str):
        return {"transferredTo": agent}
    return response


_DEFAULT_HINT: Final = "Please approve or reject the tool call"


def approval_descriptor(confirmation: dict[str, Any]) -> dict[str, Any] | None:
    """What the tool asked the user (``request_confirmation(hint=, payload=)``), for the UI:
    the client keeps it as ``approval.descriptor``. ADK's generic hint is left out."""
    descriptor: dict[str, Any] = {}
    hint = confirmation.get("hint")
    if isinstance(hint, str) and hint and not hint.startswith(_DEFAULT_HINT):
        descriptor["hint"] = hint
    if confirmation.get("payload") is not None:
        descriptor["payload"] = confirmation["payload"]
    return descriptor or None


def is_abort(event: Event) -> bool:
    """ADK's record of a run stopped through its ``abort_signal`` (the user stopped it, or the
    reader of a run that is not resumable went away): an end, not a failure."""
    return event.error_code == "INVOCATION_ABORTED"


def is_finish_reason(event: Event) -> bool:
    """ADK records a non-STOP finish reason (``MAX_TOKENS``, ``SAFETY``…) as an error code too;
    that is how the answer ended, not a failure: the finish reason says it to the client."""
    reason = event.finish_reason
    return reason is not None and event.error_code == reason.value


def is_confirmation(part: types.Part) -> bool:
    return part.function_call is not None and part.function_call.name == CONFIRMATION_TOOL


def is_shown(part: types.Part, live: bool) -> bool:
    """Whether a model part opens a step (live audio and confirmation requests do not)."""
    if is_confirmation(part):
        return False
    return not (live and is_live_audio(part))


def is_live_audio(part: types.Part) -> bool:
    """Spoken audio (sent as binary frames in live mode, its transcript shown as text)."""
    blob = part.inline_data
    return blob is not None and (blob.mime_type or "").startswith("audio/")


def file_chunk(part: types.Part, *, live: bool) -> File | None:
    """A model part that is a file (:func:`file_of`); ``None`` for any other part, and for live
    speech (it travels as binary frames)."""
    blob = part.inline_data
    if blob is not None and (not blob.data or (live and is_live_audio(part))):
        return None
    found = file_of(part)
    return None if found is None else File(url=found[0], media_type=found[1])


def file_of(part: types.Part) -> tuple[str, str, str | None] | None:
    """A file part's URL (inline bytes as a ``data:`` URL, or the file's reference), media type
    and name; ``None`` for any other part."""
    blob = part.inline_data
    if blob is not None and blob.data:
        mime = blob.mime_type or "application/octet-stream"
        encoded = base64.b64encode(blob.data).decode("ascii")
        return f"data:{mime};base64,{encoded}", mime, blob.display_name
    reference = part.file_data
    if reference is not None and reference.file_uri:
        mime = reference.mime_type or "application/octet-stream"
        return reference.file_uri, mime, reference.display_name
    return None


def source_chunks(event: Event) -> list[SourceUrl]:
    """The web sources a grounded answer cites."""
    grounding = event.grounding_metadata
    if grounding is None or not grounding.grounding_chunks:
        return []
    return [
        SourceUrl(source_id=f"{event.id}-src{index}", url=chunk.web.uri, title=chunk.web.title)
        for index, chunk in enumerate(grounding.grounding_chunks)
        if chunk.web is not None and chunk.web.uri
    ]


def client_signals_activity(config: types.RealtimeInputConfig | None) -> bool:
    """Whether a live setup turned the model's own voice activity detection off, so the
    client says when the user speaks (``activityStart``/``activityEnd``, which the Live API
    takes only then)."""
    detection = config.automatic_activity_detection if config is not None else None
    return bool(detection is not None and detection.disabled)


def add_usage(total: dict[str, int], usage: types.GenerateContentResponseUsageMetadata) -> None:
    """Add one model call's token counts to a response's ``usage``, as the AI SDK's Google
    provider counts them: ``outputTokens`` is the answer's and the reasoning's together
    (Gemini counts thoughts apart, in ``thoughtsTokenCount``), ``cachedInputTokens`` the part
    of the input read from Gemini's context cache (part of ``inputTokens``)."""
    reasoning = usage.thoughts_token_count or 0
    for key, value in (
        ("inputTokens", usage.prompt_token_count),
        ("cachedInputTokens", usage.cached_content_token_count),
        ("outputTokens", (usage.candidates_token_count or 0) + reasoning),
        ("reasoningTokens", reasoning),
        ("totalTokens", usage.total_token_count),
    ):
        if value:
            total[key] = total.get(key, 0) + value
