"""What the bridge records about a chat inside ADK's own events: one typed, versioned struct.

ADK's session is the only store (it survives restarts and is shared by every worker), so the
facts the bridge needs later travel in ``Event.custom_metadata["adk_asgi"]``: the ids the
client knows, the live stream's steps, and the human-in-the-loop decisions ADK does not record
itself. This module is the only reader and writer of that key.

One fact has no other way in: the client's id of a message typed in live mode. ADK stores that
user event itself, with no hook to tag it, and applies only the ``LiveRequest``'s
``state_delta`` to it (docs/internals/architecture.md#live-mode). Tagging the answer instead would
lose the id whenever no answer was stored (a connection dropped mid-answer), so the id rides in
``state_delta`` under :data:`LIVE_USER_MESSAGE_KEY` and stays in ``session.state`` as the id of
the last message typed live: :func:`live_user_message` writes it, :func:`read` reads it.

Versions: 1 (the first release) wrote the same keys without ``v``; 2 adds ``v``. Both are read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec
from google.adk.events.event import Event
from google.genai import types

KEY: Final = "adk_asgi"
VERSION: Final = 2
LIVE_USER_MESSAGE_KEY: Final = "adk_asgi:userMessageId"
LIVE_USER_METADATA_KEY: Final = "adk_asgi:userMetadata"
TITLE_KEY: Final = "adk_asgi:title"
FILE_BYTES_KEY: Final = "adk_asgi:fileBytes"
"""The bytes of files the chat's user messages brought, in all (``UserBounds.chat_files``)."""
"""``session.state``: the chat's title (its first message's text) for ``GET /chats``."""
TITLE_LENGTH: Final = 80


class CutCall(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """A call whose arguments were streaming when its answer failed or was stopped: the
    client was shown it, ADK stored nothing of it."""

    id: str
    name: str
    input: Any = None
    """The arguments streamed so far."""


class Preliminary(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A running tool's preliminary output (:func:`adk_asgi.convert.progress.preliminary`)."""

    output: Any = None
    """Any JSON value (``null`` included)."""


class Tags(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    v: int = 1
    message_id: str | None = None
    """The assistant message the event belongs to (the id the stream announced)."""
    user_message_id: str | None = None
    """The client's id of the user message the run answers."""
    user_metadata: Any = None
    """The metadata the client put on that user message (``sendMessage({metadata})``): history
    returns it with the message."""
    live_step: str | None = None
    """Live mode: the stream's step of the event (its text and calls are separate events)."""
    cut: bool = False
    """Live mode: the end of a turn a new message cut short (stored after that message)."""
    approved_call: str | None = None
    """A client tool call the user approved: the browser was told to run it."""
    decisions: dict[str, bool] = msgspec.field(default_factory=dict)
    """Live mode: call id → the user's decision (ADK records no confirmation there)."""
    reasons: dict[str, str] = msgspec.field(default_factory=dict)
    """A browser tool's approval: approval id → the reason the user gave with the decision
    (``addToolApprovalResponse({reason})``), recorded with it. ADK records no confirmation for
    it; a server tool's reason rides in its confirmation's payload
    (:func:`~.outcomes.reason_payload`)."""
    closed_approvals: list[str] = msgspec.field(default_factory=list)
    """ADK confirmations closed as denied because the user moved on."""
    expired: list[str] = msgspec.field(default_factory=list)
    """Waits that ended unanswered (approval ids and call ids): a denial or a browser's error
    recorded for a timeout, not for the user's decision."""
    error: str | None = None
    """A failed answer: the error the client was shown (with the text it was shown that ADK
    did not store, :mod:`adk_asgi.convert.failures`)."""
    kept: bool = False
    """The bridge's record of an answer cut short (it failed, or was stopped), kept as the
    client saw it: not one of ADK's events (:func:`adk_asgi.convert.failures.shown_answer`)."""
    started_at: float | None = None
    """When the response the event belongs to started (Unix time): the moments history hands
    the app's message metadata hook (:mod:`adk_asgi.convert.metadata`)."""
    cut_calls: list[CutCall] = msgspec.field(default_factory=list)
    """An answer kept as the client saw it (``kept``): the calls it showed streaming, ended
    with a ``tool-input-error`` (:meth:`adk_asgi.convert.tool_cards.ToolCards.cut_short`)."""
    invalid_calls: list[str] = msgspec.field(default_factory=list)
    """Calls ADK refused without running a tool (no tool of that name, arguments the tool
    refuses): their responses are ADK's errors, shown as the call's ``tool-input-error``
    (:mod:`adk_asgi.serving.invalid_calls`)."""
    as_returned: list[str] = msgspec.field(default_factory=list)
    """The calls of a function-response event whose tool itself returned an object of ADK's
    wrapper shape, ``{"result": <not an object>}``: shown as stored, not unwrapped
    (:mod:`adk_asgi.convert.returned`)."""
    expires: dict[str, float] = msgspec.field(default_factory=dict)
    """Call id → when its wait for the user or the browser ends (Unix time): a call recorded
    as waiting by a live connection that is gone is closed after it."""
    data_part: dict[str, Any] | None = None
    """An app's ``data-<name>`` part, sent by a tool or a callback (``send_data``): the event
    is the part, at its place in the message (:mod:`adk_asgi.convert.data_parts`)."""
    preliminary: Preliminary | None = None
    """A running tool's preliminary output, yielded by the tool as an event of its own (no
    content: the model never sees it) on its call's branch (:mod:`adk_asgi.convert.progress`)."""


_NONE: Final = Tags()


def read(event: Event) -> Tags:
    """The bridge's tags of an event (empty for an event it never tagged)."""
    raw = (event.custom_metadata or {}).get(KEY)
    tags = _NONE
    if isinstance(raw, dict):
        try:
            tags = msgspec.convert(raw, Tags)
        except msgspec.ValidationError:
            tags = _NONE  # not ours after all: another plugin's key
    if tags.user_message_id is None and event.actions.state_delta:
        delta = event.actions.state_delta
        live_id = delta.get(LIVE_USER_MESSAGE_KEY)
        if isinstance(live_id, str):
            metadata = delta.get(LIVE_USER_METADATA_KEY)
            tags = msgspec.structs.replace(tags, user_message_id=live_id, user_metadata=metadata)
    return tags


def data_part(event: Event) -> dict[str, Any] | None:
    """The app data part an event carries (``Tags.data_part``), read only when there is one:
    the converter asks for every streamed delta."""
    raw = (event.custom_metadata or {}).get(KEY)
    if not isinstance(raw, dict) or "dataPart" not in raw:
        return None
    return read(event).data_part


def preliminary(event: Event) -> Preliminary | None:
    """The preliminary output an event carries (``Tags.preliminary``), read only when there is
    one: the converter asks for every tool's message."""
    raw = (event.custom_metadata or {}).get(KEY)
    if not isinstance(raw, dict) or "preliminary" not in raw:
        return None
    return read(event).preliminary


def live_user_message(message_id: str, metadata: Any = None) -> dict[str, Any]:
    """The ``state_delta`` of a ``LiveRequest`` that carries a typed message, so the event ADK
    stores for it records the client's id and the message's metadata."""
    delta: dict[str, Any] = {LIVE_USER_MESSAGE_KEY: message_id}
    if metadata is not None:
        delta[LIVE_USER_METADATA_KEY] = metadata
    return delta


def title(state: Mapping[str, Any]) -> str | None:
    value = state.get(TITLE_KEY)
    return value if isinstance(value, str) else None


def title_delta(state: Mapping[str, Any], content: types.Content) -> dict[str, Any]:
    """The ``state_delta`` that names a chat after ``content``'s text, while it has no name:
    it is applied with the user's message, in the same write."""
    if title(state) is not None:  # (a rewind past the first message sets it to None)
        return {}
    text = " ".join(" ".join(p.text.split()) for p in content.parts or [] if p.text).strip()
    if not text:
        return {}
    if len(text) > TITLE_LENGTH:
        text = text[: TITLE_LENGTH - 1].rstrip() + "…"
    return {TITLE_KEY: text}


def file_bytes(state: Mapping[str, Any]) -> int:
    """The bytes of files the chat holds (:data:`FILE_BYTES_KEY`; 0 before the first)."""
    value = state.get(FILE_BYTES_KEY)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def content_file_bytes(content: types.Content) -> int:
    """The bytes of the files ``content`` carries inline (a user message's ``data:`` URLs)."""
    return sum(len(p.inline_data.data or b"") for p in content.parts or [] if p.inline_data)


def with_tags(metadata: dict[str, Any] | None, **tags: Any) -> dict[str, Any]:
    """``metadata`` (an event's or a run's ``custom_metadata``) with ``tags`` merged into the
    bridge's key."""
    raw = (metadata or {}).get(KEY)
    current = msgspec.convert(raw, Tags) if isinstance(raw, dict) else _NONE
    merged = msgspec.structs.replace(current, v=VERSION, **tags)
    return {**(metadata or {}), KEY: msgspec.to_builtins(merged)}


def add_calls(event: Event, **calls: Sequence[str]) -> None:
    """Add call ids to the event's lists of them (``invalid_calls``, ``as_returned``), in place:
    how ADK's events are tagged as they pass the bridge's plugins, and how the live bridge tags
    the results it stores itself."""
    tags = read(event)
    merged = {name: [*getattr(tags, name), *ids] for name, ids in calls.items() if ids}
    if merged:
        event.custom_metadata = with_tags(event.custom_metadata, **merged)


def tagged(event: Event, **tags: Any) -> Event:
    """A copy of ``event`` with ``tags`` merged into its bookkeeping."""
    return event.model_copy(update={"custom_metadata": with_tags(event.custom_metadata, **tags)})
