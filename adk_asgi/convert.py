"""ADK events → UI message chunks: a sans-I/O state machine, one instance per response.

The converter does no I/O and holds no asyncio objects: a transport feeds it events and writes
out the chunks it returns, so SSE and live mode mean the same thing to a client, and every rule
below is unit-tested on plain ``Event`` objects.

The rules it keeps (docs/architecture.md#adk-facts, #the-ui-message-stream):

* In ``run_async`` SSE mode one model call yields ``partial`` events carrying *deltas*, then one
  final event with the same ``event.id`` repeating *all* the text. Text is streamed from the
  partials; the final event adds only what was not streamed yet (nothing, normally; the whole
  text when no partials came, as with ``StreamingMode.NONE`` or a callback's response).
* Function calls, finish reasons and usage are read from non-partial events only.
* Every model call is one step (``start-step`` … ``finish-step``); function responses and
  confirmation requests belong to the step that is open, so results that resume a paused call
  come right after ``start``, before the first ``start-step``, where the client expects them.
* ADK's ``adk_request_confirmation`` call is not a tool of its own: it becomes a
  ``tool-approval-request`` on the *original* call, and the placeholder response ADK records
  for that call is bookkeeping, not an output.
* A ``tool-*`` chunk for a call id the client has never seen makes it throw, so outputs are only
  emitted for calls announced in this response or named by the caller as already known.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any, Final

import msgspec
from google.adk.events.event import Event
from google.genai import types

from .chunks import (
    DataChunk,
    Error,
    File,
    Finish,
    FinishReason,
    FinishStep,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    SourceUrl,
    Start,
    StartStep,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    UIMessageChunk,
)
from .pending import CONFIRMATION_TOOL, client_approval_id
from .policy import ToolPolicy

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


_MODEL_ERRORS: Final = frozenset(
    {types.FinishReason.MALFORMED_FUNCTION_CALL, types.FinishReason.UNEXPECTED_TOOL_CALL}
)


_JSON = msgspec.json.Encoder()


def _json(value: Any) -> str:
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


def describe_error(code: str | None, message: str | None) -> str:
    if code and message:
        return f"{code}: {message}"
    return message or code or "The agent failed."


class _Block:
    """An open text or reasoning block: its chunk id and the event it streams from."""

    __slots__ = ("chunk_id", "event_id")

    def __init__(self, chunk_id: str, event_id: str) -> None:
        self.chunk_id = chunk_id
        self.event_id = event_id


class EventConverter:
    """Turns the events of one request (a ``run_async`` call) into one assistant message stream.

    Call :meth:`start`, then :meth:`feed` for every event, then :meth:`finish` (or
    :meth:`fail` first, when the run raised). Each returns the chunks to send, in order.
    ``known_calls`` are call ids the client already holds a tool part for (a continuation's
    earlier calls), so their results can be shown.
    """

    def __init__(
        self,
        *,
        message_id: str,
        known_calls: Iterable[str] = (),
        send_usage: bool = False,
        policy: ToolPolicy | None = None,
        live: bool = False,
    ) -> None:
        self.message_id = message_id
        self.live = live
        self.send_usage = send_usage
        self.policy = policy
        """Which client calls wait for approval, and which tools may ask (a step's later calls
        are held only then: holding delays their cards until the step's tools ran). ``None``:
        no call waits for the bridge's approval, and any tool may ask."""
        self._known_calls: set[str] = set(known_calls)
        self._settled: set[str] = set()
        self._step_event_id: str | None = None
        self._text: _Block | None = None
        self._reasoning: _Block | None = None
        self._streamed_text: dict[str, str] = {}
        self._streamed_thought: dict[str, str] = {}
        self._block_count = 0
        self._errored = False
        self._finished = False
        self._finish_reason: FinishReason = "stop"
        self._waiting_on_calls = False
        self._usage: dict[str, int] = {}
        self._live_step = 0
        self._step_has_call = False
        self._held_calls: list[tuple[str, list[UIMessageChunk]]] = []
        """Over SSE, the chunks of a step's second and later calls, until the next event shows
        whether it asks approvals: the AI SDK's own server requests each approval right after
        its call, and so does this converter (the confirmation event comes after all calls)."""
        self._transcripts = 0
        self._heard = ""

    @property
    def errored(self) -> bool:
        return self._errored

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> list[UIMessageChunk]:
        return [Start(message_id=self.message_id)]

    def fail(self, error_text: str) -> list[UIMessageChunk]:
        """Report a failure no event reported (the run raised, the client's input was refused)."""
        if self._errored:
            return []
        return self._release_held_calls() + self._error(error_text)

    def waiting_on_calls(self) -> None:
        """The response ends because tool calls wait for the user or the browser."""
        self._waiting_on_calls = True

    def interrupt(self) -> list[UIMessageChunk]:
        """The user spoke over the model (live barge-in): end the response where it is."""
        self._finish_reason = "interrupted"
        self._waiting_on_calls = False
        return self.finish()

    def finish(self) -> list[UIMessageChunk]:
        if self._finished:
            return []
        self._finished = True
        out = self._release_held_calls() + self._close_step()
        reason: FinishReason = self._finish_reason
        if self._errored:
            reason = "error"
        elif self._waiting_on_calls and reason != "interrupted":
            reason = "tool-calls"
        metadata = {"usage": dict(self._usage)} if self.send_usage and self._usage else None
        out.append(Finish(finish_reason=reason, message_metadata=metadata))
        return out

    # --- events ------------------------------------------------------------------------------

    def feed(self, event: Event) -> list[UIMessageChunk]:
        if self._finished:
            return []
        out: list[UIMessageChunk] = []
        if self._held_calls:
            if self._approvals_in_call_order(event, out):
                return out
            out.extend(self._release_held_calls())
        if event.author == "user":
            if self.live and event.input_transcription is not None:
                self._heard_transcript(event.input_transcription, out)
            return out
        if self.live and event.output_transcription is not None:
            self._spoken_transcript(event, event.output_transcription, out)
        if event.partial:
            self._feed_partial(event, out)
        else:
            self._feed_final(event, out)
        return out

    def _key(self, event: Event) -> str:
        """What ties the deltas of one model message together.

        In ``run_async`` the partials and the final event of a model call share ``event.id``. In
        live mode every message has a new id and the non-partial one repeats the text streamed
        since the last tool result, so text is matched by accumulation within a live step.
        """
        return f"live-{self._live_step}" if self.live else event.id

    @property
    def live_step(self) -> int:
        """The live model step the next model event belongs to (it changes after tool results;
        Gemini Live sends a step's text and its calls as separate events)."""
        return self._live_step

    def _feed_partial(self, event: Event, out: list[UIMessageChunk]) -> None:
        content = event.content
        if content is None or not content.parts:
            return
        key = self._key(event)
        for part in content.parts:
            if part.text is None or part.function_call is not None:
                continue
            if not part.text:
                continue
            self._open_step_for(key, out)
            streamed = self._streamed_thought if part.thought else self._streamed_text
            streamed[key] = streamed.get(key, "") + part.text
            if part.thought:
                self._stream_reasoning(key, part.text, out)
            else:
                self._stream_text(key, part.text, out)

    def _feed_final(self, event: Event, out: list[UIMessageChunk]) -> None:
        content = event.content
        parts = (content.parts or []) if content is not None else []
        is_model_call = content is not None and content.role == "model"
        confirmations = event.actions.requested_tool_confirmations
        key = self._key(event)
        if self.live and parts and all(_is_live_audio(p) for p in parts):
            # Gemini Live sends each audio chunk as its own complete message, between the
            # transcript's deltas: it must not end the text block the transcript streams into.
            self._event_tail(event, out)
            return
        if is_model_call and any(_is_shown(p, self.live) for p in parts):
            self._open_step_for(key, out)
        remaining_text = self._streamed_text.pop(key, "")
        remaining_thought = self._streamed_thought.pop(key, "")
        calls = [p.function_call.name or "" for p in parts if p.function_call is not None]
        hold = not self.live and any(self.policy is None or self.policy.may_ask(n) for n in calls)
        for part in parts:
            if part.text is not None and part.function_call is None:
                if part.thought:
                    remaining_thought = self._final_text(
                        key, part.text, remaining_thought, thought=True, out=out
                    )
                else:
                    remaining_text = self._final_text(
                        key, part.text, remaining_text, thought=False, out=out
                    )
            elif part.function_call is not None:
                call = part.function_call
                if hold and call.name != CONFIRMATION_TOOL and self._step_has_call:
                    held: list[UIMessageChunk] = []
                    self._function_call(call, event, held)
                    self._held_calls.append((call.id or "", held))
                else:
                    self._function_call(call, event, out)
                    self._step_has_call = call.name != CONFIRMATION_TOOL
            elif part.function_response is not None:
                self._function_response(part.function_response, confirmations, out)
            elif part.inline_data is not None:
                self._inline_data(part.inline_data, out)
            elif part.file_data is not None and part.file_data.file_uri:
                self._close_blocks(out)
                out.append(
                    File(
                        url=part.file_data.file_uri,
                        media_type=part.file_data.mime_type or "application/octet-stream",
                    )
                )
        self._step_has_call = False
        self._close_blocks_of(key, out)
        if self.live and any(p.function_response for p in parts):
            self._live_step += 1  # the model's answer to these results is a new step
        self._event_tail(event, out)

    def _event_tail(self, event: Event, out: list[UIMessageChunk]) -> None:
        """What any complete event may carry besides its parts: sources, usage, how it ended."""
        self._sources(event, out)
        if event.usage_metadata is not None:
            self._add_usage(event.usage_metadata)
        if event.finish_reason is not None:
            self._finish_reason = map_finish_reason(event.finish_reason)
        if (event.error_code or event.error_message) and not _is_finish_reason(event):
            out.extend(self._error(describe_error(event.error_code, event.error_message)))

    # --- live transcriptions -----------------------------------------------------------------

    def _spoken_transcript(
        self, event: Event, transcript: types.Transcription, out: list[UIMessageChunk]
    ) -> None:
        """What the model says aloud, shown as its text (partials, then the finished whole)."""
        text = transcript.text or ""
        key = self._key(event)
        if not transcript.finished:
            if text:
                self._open_step_for(key, out)
                self._streamed_text[key] = self._streamed_text.get(key, "") + text
                self._stream_text(key, text, out)
            return
        self._open_step_for(key, out)
        self._final_text(key, text, self._streamed_text.pop(key, ""), thought=False, out=out)
        self._close_blocks_of(key, out)

    def _heard_transcript(self, transcript: types.Transcription, out: list[UIMessageChunk]) -> None:
        """What the user said, as a ``data-transcript`` part the client updates in place."""
        text = transcript.text or ""
        self._heard = text if transcript.finished else self._heard + text
        transcript_id = f"{self.message_id}-heard{self._transcripts}"
        data = {"role": "user", "text": self._heard, "final": bool(transcript.finished)}
        out.append(DataChunk(type="data-transcript", id=transcript_id, data=data))
        if transcript.finished:
            self._transcripts += 1
            self._heard = ""

    # --- text and reasoning ------------------------------------------------------------------

    def _final_text(
        self, event_id: str, text: str, streamed: str, *, thought: bool, out: list[UIMessageChunk]
    ) -> str:
        """Emit what the final event's text adds to what its partials streamed; return the
        streamed text not yet matched against the final parts."""
        if streamed.startswith(text):
            return streamed[len(text) :]
        if text.startswith(streamed):
            suffix = text[len(streamed) :]
            if suffix:
                if thought:
                    self._stream_reasoning(event_id, suffix, out)
                else:
                    self._stream_text(event_id, suffix, out)
            return ""
        # A callback rewrote the text after it was streamed; the client keeps what it saw.
        return ""

    def _stream_text(self, event_id: str, delta: str, out: list[UIMessageChunk]) -> None:
        if self._reasoning is not None:
            out.append(ReasoningEnd(id=self._reasoning.chunk_id))
            self._reasoning = None
        if self._text is None:
            self._text = _Block(self._next_block_id("txt"), event_id)
            out.append(TextStart(id=self._text.chunk_id))
        out.append(TextDelta(id=self._text.chunk_id, delta=delta))

    def _stream_reasoning(self, event_id: str, delta: str, out: list[UIMessageChunk]) -> None:
        if self._text is not None:
            out.append(TextEnd(id=self._text.chunk_id))
            self._text = None
        if self._reasoning is None:
            self._reasoning = _Block(self._next_block_id("rsn"), event_id)
            out.append(ReasoningStart(id=self._reasoning.chunk_id))
        out.append(ReasoningDelta(id=self._reasoning.chunk_id, delta=delta))

    def _next_block_id(self, kind: str) -> str:
        self._block_count += 1
        return f"{self.message_id}-{kind}{self._block_count}"

    def _close_blocks(self, out: list[UIMessageChunk]) -> None:
        if self._text is not None:
            out.append(TextEnd(id=self._text.chunk_id))
            self._text = None
        if self._reasoning is not None:
            out.append(ReasoningEnd(id=self._reasoning.chunk_id))
            self._reasoning = None

    def _close_blocks_of(self, event_id: str, out: list[UIMessageChunk]) -> None:
        if self._reasoning is not None and self._reasoning.event_id == event_id:
            out.append(ReasoningEnd(id=self._reasoning.chunk_id))
            self._reasoning = None
        if self._text is not None and self._text.event_id == event_id:
            out.append(TextEnd(id=self._text.chunk_id))
            self._text = None

    # --- steps -------------------------------------------------------------------------------

    def _open_step_for(self, event_id: str, out: list[UIMessageChunk]) -> None:
        if self._step_event_id == event_id:
            return
        out.extend(self._close_step())
        self._step_event_id = event_id
        self._waiting_on_calls = False
        out.append(StartStep())

    def _close_step(self) -> list[UIMessageChunk]:
        out: list[UIMessageChunk] = []
        self._close_blocks(out)
        if self._step_event_id is not None:
            out.append(FinishStep())
            self._step_event_id = None
        return out

    # --- tools -------------------------------------------------------------------------------

    def _function_call(
        self, call: types.FunctionCall, event: Event, out: list[UIMessageChunk]
    ) -> None:
        if not call.id or not call.name:
            return
        self._close_blocks(out)
        args = call.args or {}
        if call.name == CONFIRMATION_TOOL:
            original = args.get("originalFunctionCall") or {}
            original_id = original.get("id")
            if isinstance(original_id, str) and original_id in self._known_calls:
                descriptor = approval_descriptor(args.get("toolConfirmation") or {})
                out.append(
                    ToolApprovalRequest(
                        approval_id=call.id,
                        tool_call_id=original_id,
                        approval_descriptor=descriptor,
                    )
                )
                self._waiting_on_calls = True
            return
        self._known_calls.add(call.id)
        out.append(ToolInputStart(tool_call_id=call.id, tool_name=call.name))
        if self.policy is not None and self.policy.needs_approval(call.name, args):
            # A client tool that needs approval: show the input and ask, but do not say
            # "input available" yet — that makes the client run the tool (``onToolCall``).
            # :meth:`release` says it once the user approved
            # (docs/architecture.md#browser-tools-that-need-approval).
            out.append(ToolInputDelta(tool_call_id=call.id, input_text_delta=_json(args)))
            out.append(
                ToolApprovalRequest(approval_id=client_approval_id(call.id), tool_call_id=call.id)
            )
        else:
            out.append(ToolInputAvailable(tool_call_id=call.id, tool_name=call.name, input=args))
        if call.id in (event.long_running_tool_ids or ()):
            self._waiting_on_calls = True

    def _release_held_calls(self) -> list[UIMessageChunk]:
        held, self._held_calls = self._held_calls, []
        return [chunk for _, chunks in held for chunk in chunks]

    def _approvals_in_call_order(self, event: Event, out: list[UIMessageChunk]) -> bool:
        """If ``event`` asks approvals for the step's calls, emit each request after its call
        (the held calls' chunks in between) and return True."""
        asks = [c for c in event.get_function_calls() if c.name == CONFIRMATION_TOOL]
        if event.partial or not asks:
            return False
        requests: dict[str, list[UIMessageChunk]] = {}
        for ask in asks:
            chunks: list[UIMessageChunk] = []
            self._function_call(ask, event, chunks)
            for chunk in chunks:
                if isinstance(chunk, ToolApprovalRequest):
                    requests.setdefault(chunk.tool_call_id, []).append(chunk)
        held, self._held_calls = self._held_calls, []
        held_ids = {call_id for call_id, _ in held}
        for call_id in [c for c in requests if c not in held_ids]:
            out.extend(requests.pop(call_id))  # a call sent before the held ones
        for call_id, chunks in held:
            out.extend(chunks + requests.pop(call_id, []))
        for rest in requests.values():
            out.extend(rest)
        self._event_tail(event, out)
        return True

    def _function_response(
        self,
        response: types.FunctionResponse,
        confirmations: dict[str, Any],
        out: list[UIMessageChunk],
    ) -> None:
        call_id = response.id
        if not call_id or call_id not in self._known_calls or call_id in confirmations:
            return
        if call_id in self._settled:
            return
        self._close_blocks(out)
        out.append(tool_result_chunk(call_id, response.response))

    def deny(self, call_id: str) -> list[UIMessageChunk]:
        """A call the user denied. The request said so; ADK's rejection response that follows
        is then skipped (matched by id, never by its text)."""
        if call_id not in self._known_calls or call_id in self._settled:
            return []
        self._settled.add(call_id)
        return [ToolOutputDenied(tool_call_id=call_id)]

    def tool_result(self, call_id: str, response: Any) -> list[UIMessageChunk]:
        """A call's result known before its function-response event (live mode reads it from
        the tool pipeline, since ADK merges the responses of a step into one event)."""
        if call_id not in self._known_calls or call_id in self._settled:
            return []
        self._settled.add(call_id)
        out: list[UIMessageChunk] = []
        self._close_blocks(out)
        out.append(tool_result_chunk(call_id, response))
        return out

    def release(self, call_id: str, name: str, args: dict[str, Any]) -> list[UIMessageChunk]:
        """An approved client tool call: now the browser may run it (``onToolCall`` fires).
        Sent before any new step, so the client updates the part it already has."""
        if call_id not in self._known_calls:
            return []
        self._waiting_on_calls = True
        return [ToolInputAvailable(tool_call_id=call_id, tool_name=name, input=args)]

    # --- media, sources, usage, errors -------------------------------------------------------

    def _inline_data(self, blob: types.Blob, out: list[UIMessageChunk]) -> None:
        if not blob.data or (self.live and (blob.mime_type or "").startswith("audio/")):
            return  # live audio travels as binary frames, not as chunks
        self._close_blocks(out)
        mime = blob.mime_type or "application/octet-stream"
        encoded = base64.b64encode(blob.data).decode("ascii")
        out.append(File(url=f"data:{mime};base64,{encoded}", media_type=mime))

    def _sources(self, event: Event, out: list[UIMessageChunk]) -> None:
        grounding = event.grounding_metadata
        if grounding is None or not grounding.grounding_chunks:
            return
        for index, chunk in enumerate(grounding.grounding_chunks):
            web = chunk.web
            if web is None or not web.uri:
                continue
            out.append(SourceUrl(source_id=f"{event.id}-src{index}", url=web.uri, title=web.title))

    def _add_usage(self, usage: types.GenerateContentResponseUsageMetadata) -> None:
        for key, value in (
            ("inputTokens", usage.prompt_token_count),
            ("outputTokens", usage.candidates_token_count),
            ("reasoningTokens", usage.thoughts_token_count),
            ("totalTokens", usage.total_token_count),
        ):
            if value:
                self._usage[key] = self._usage.get(key, 0) + value

    def _error(self, error_text: str) -> list[UIMessageChunk]:
        self._errored = True
        out: list[UIMessageChunk] = []
        self._close_blocks(out)
        out.append(Error(error_text=error_text))
        return out


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


def _is_finish_reason(event: Event) -> bool:
    """ADK records a non-STOP finish reason (``MAX_TOKENS``, ``SAFETY``…) as an error code too;
    that is how the answer ended, not a failure: the finish reason says it to the client."""
    reason = event.finish_reason
    return reason is not None and event.error_code == reason.value


def _is_confirmation(part: types.Part) -> bool:
    return part.function_call is not None and part.function_call.name == CONFIRMATION_TOOL


def _is_shown(part: types.Part, live: bool) -> bool:
    """Whether a model part opens a step (live audio and confirmation requests do not)."""
    if _is_confirmation(part):
        return False
    return not (live and _is_live_audio(part))


def _is_live_audio(part: types.Part) -> bool:
    """Spoken audio (sent as binary frames in live mode, its transcript shown as text)."""
    blob = part.inline_data
    return blob is not None and (blob.mime_type or "").startswith("audio/")
