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

from collections.abc import Iterable
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from .adk_values import (
    add_usage,
    approval_descriptor,
    as_sent,
    file_chunk,
    is_abort,
    is_finish_reason,
    is_live_audio,
    is_shown,
    map_finish_reason,
    shown_result,
    source_chunks,
    to_json,
    tool_result_chunk,
)
from .chunks import (
    Abort,
    DataChunk,
    Error,
    Finish,
    FinishReason,
    FinishStep,
    Start,
    StartStep,
    ToolApprovalRequest,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    ToolOutputDenied,
    ToolOutputError,
    UIMessageChunk,
)
from .credentials import shown_input
from .failures import ERROR_PART, AgentError, ErrorHandler, show_errors
from .interrupts import (
    REQUEST_INPUT,
    client_call_id,
    confirmed_node,
    node_confirmation,
    qualified_prefix,
    workflow_answer,
)
from .pending import CONFIRMATION_TOOL, REJECTED, client_approval_id
from .policy import ToolPolicy
from .text_blocks import HeardSpeech, TextBlocks


def speaker(author: str) -> dict[str, dict[str, Any]]:
    """The ``providerMetadata`` that names the agent a part is from."""
    return {"adk": {"author": author}}


class EventConverter:
    """Turns the events of one request (a ``run_async`` call) into one assistant message stream.

    Call :meth:`start`, then :meth:`feed` for every event, then :meth:`finish` (or
    :meth:`fail` first, when the run raised). Each returns the chunks to send, in order.
    ``known_calls`` are call ids the client already holds a tool part for (a continuation's
    earlier calls), so their results can be shown. ``on_error``: the text the client is shown
    for a failure (``AdkApp(on_error=)``; this default shows the error itself).
    """

    def __init__(
        self,
        *,
        message_id: str,
        known_calls: Iterable[str] = (),
        send_usage: bool = False,
        policy: ToolPolicy | None = None,
        live: bool = False,
        on_error: ErrorHandler = show_errors,
        speakers: bool = False,
    ) -> None:
        self.message_id = message_id
        self.on_error = on_error
        self.speakers = speakers
        """Text and reasoning parts say which agent wrote them (a tree of agents):
        ``providerMetadata: {"adk": {"author": <agent name>}}`` on their start chunk."""
        self.failure: tuple[list[types.Part], str] | None = None
        """Once the response failed: the text and reasoning the client was shown that no
        stored event holds (the model call cut short), and the error text it was shown."""
        self.stopped: list[types.Part] = []
        """Once the run was stopped (its abort signal): what it had shown that no stored
        event holds."""
        self.live = live
        self.send_usage = send_usage
        self.policy = policy
        """Which client calls wait for approval, and which tools may ask (a step's later calls
        are held only then: holding delays their cards until the step's tools ran). ``None``:
        no call waits for the bridge's approval, and any tool may ask."""
        self._known_calls: set[str] = set(known_calls)
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        """The name and arguments of each call announced in this response, by client id."""
        self._client_ids: dict[str, str] = {}
        """ADK call id → the id the client knows its latest call by (:mod:`.interrupts`)."""
        self._settled: set[str] = set()
        self._step_event_id: str | None = None
        self._blocks = TextBlocks(message_id)
        self._streamed_text: dict[str, list[str]] = {}
        self._streamed_thought: dict[str, list[str]] = {}
        """The partial text of each model call so far, in pieces (joined when its final event
        comes: adding each delta to a string would copy the whole of it every time)."""
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
        self._heard = HeardSpeech(message_id)
        self._streaming_call: tuple[str, str] | None = None
        """The model call (event id, author) whose partials stream now (SSE), until its
        final event."""
        self._later_calls: list[Event] = []
        """Events of other model calls made meanwhile (parallel agents), held in order."""

    @property
    def errored(self) -> bool:
        return self._errored

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> list[UIMessageChunk]:
        return [Start(message_id=self.message_id)]

    def fail(self, error_text: str) -> list[UIMessageChunk]:
        """Report a failure no event reported, in words already chosen."""
        if self._errored:
            return []
        return self._release_held_calls() + self._error(error_text)

    def fail_with(self, exception: BaseException) -> list[UIMessageChunk]:
        """Report an exception the run raised, as ``on_error`` words it."""
        return self.fail(self.on_error(AgentError(exception=exception)))

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
        self._streaming_call = None  # (a call cut short: what the others said is shown)
        out = self._feed_later_calls()
        self._finished = True
        out += self._release_held_calls() + self._close_step()
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
        if self._must_wait(event, {e.author for e in self._later_calls}):
            self._later_calls.append(event)  # another agent's, under way at the same time
            return []
        out = self._feed_now(event)
        if self._streaming_call is None and self._later_calls:
            out += self._feed_later_calls()
        return out

    def _must_wait(self, event: Event, waiting: set[str]) -> bool:
        """Whether ``event`` is another agent's while a model call streams (over SSE), or
        comes after such an event of its agent (``waiting``: the agents with events held).
        The sub-agents of a ``ParallelAgent`` stream at once; each model call keeps one step
        and one text part only if it is shown whole, one after the other, as history shows
        it."""
        streaming = self._streaming_call
        other = streaming is not None and event.author not in ("user", streaming[1])
        return other or event.author in waiting

    def _feed_now(self, event: Event) -> list[UIMessageChunk]:
        content = event.content
        if not self.live and content is not None and content.role == "model":
            # a model call streams from its first partial to its final event (same event.id)
            self._streaming_call = (event.id, event.author) if event.partial else None
        return self._feed(event)

    def _feed_later_calls(self) -> list[UIMessageChunk]:
        """What other agents did while a call streamed, in order, once it has ended: what
        one of them streamed meanwhile goes out at once."""
        out: list[UIMessageChunk] = []
        while self._streaming_call is None and self._later_calls:
            waiting, self._later_calls = self._later_calls, []
            held: set[str] = set()
            for event in waiting:
                if self._must_wait(event, held):
                    held.add(event.author)
                    self._later_calls.append(event)
                else:
                    out += self._feed_now(event)
        return out

    def _feed(self, event: Event) -> list[UIMessageChunk]:
        if self.speakers:
            self._blocks.speaker = speaker(event.author)
        out: list[UIMessageChunk] = []
        if self._held_calls:
            if self._approvals_in_call_order(event, out):
                return out
            out.extend(self._release_held_calls())
        if event.author == "user":
            if self.live and event.input_transcription is not None:
                out.append(self._heard.chunk(event.input_transcription))
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
            streamed.setdefault(key, []).append(part.text)
            if part.thought:
                self._blocks.reasoning(key, part.text, out)
            else:
                self._blocks.text(key, part.text, out)

    def _feed_final(self, event: Event, out: list[UIMessageChunk]) -> None:
        content = event.content
        if content is None:
            # A confirmed node's output is its call's result; it is also the workflow's answer
            # when the node is the last (a text step after the card: the stock
            # ``lastAssistantMessageIsCompleteWithToolCalls`` would take an answer that ends
            # on a card for a call to go on with). A rejected node shows on its card only.
            shown = self._node_result(event, out)
            if not (shown and event.output == REJECTED):
                content = workflow_answer(event)
        parts = (content.parts or []) if content is not None else []
        is_model_call = content is not None and content.role == "model"
        confirmations = event.actions.requested_tool_confirmations
        key = self._key(event)
        if self.live and parts and all(is_live_audio(p) for p in parts):
            # Gemini Live sends each audio chunk as its own complete message, between the
            # transcript's deltas: it must not end the text block the transcript streams into.
            self._event_tail(event, out)
            return
        if is_model_call and any(is_shown(p, self.live) for p in parts):
            self._open_step_for(key, out)
        remaining_text = "".join(self._streamed_text.pop(key, ()))
        remaining_thought = "".join(self._streamed_thought.pop(key, ()))
        calls = [p.function_call.name or "" for p in parts if p.function_call is not None]
        hold = not self.live and any(self.policy is None or self.policy.may_ask(n) for n in calls)
        for part in parts:
            if part.text is not None and part.function_call is None:
                if part.thought:
                    remaining_thought = self._blocks.final(
                        key, part.text, remaining_thought, thought=True, out=out
                    )
                else:
                    remaining_text = self._blocks.final(
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
            elif (file := file_chunk(part, live=self.live)) is not None:
                self._blocks.close(out)
                out.append(file)
        self._step_has_call = False
        self._blocks.close_of(key, out)
        if self.live and any(p.function_response for p in parts):
            self._live_step += 1  # the model's answer to these results is a new step
        self._event_tail(event, out)

    def _event_tail(self, event: Event, out: list[UIMessageChunk]) -> None:
        """What any complete event may carry besides its parts: sources, usage, how it ended."""
        out.extend(source_chunks(event))
        if event.usage_metadata is not None:
            add_usage(self._usage, event.usage_metadata)
        if event.finish_reason is not None:
            self._finish_reason = map_finish_reason(event.finish_reason)
        if is_abort(event):
            self.stopped = self._unsaved()
            self._blocks.close(out)
            out.append(Abort())
        elif (event.error_code or event.error_message) and not is_finish_reason(event):
            error = AgentError(code=event.error_code, message=event.error_message)
            out.extend(self._error(self.on_error(error)))

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
                self._streamed_text.setdefault(key, []).append(text)
                self._blocks.text(key, text, out)
            return
        self._open_step_for(key, out)
        streamed = "".join(self._streamed_text.pop(key, ()))
        self._blocks.final(key, text, streamed, thought=False, out=out)
        self._blocks.close_of(key, out)

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
        self._blocks.close(out)
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
        self._blocks.close(out)
        args = call.args or {}
        client_id = call.id if self.live else client_call_id(call.id, call.name, event)
        self._client_ids[call.id] = client_id
        node = node_confirmation(call)
        if node is not None:  # a workflow node asks to run: an approval, as for a tool
            self._known_calls.add(client_id)
            descriptor = approval_descriptor({"hint": node.hint, "payload": node.payload})
            name, author = node.tool_name, self._blocks.speaker
            out.append(
                ToolInputStart(tool_call_id=client_id, tool_name=name, provider_metadata=author)
            )
            out.append(ToolInputAvailable(tool_call_id=client_id, tool_name=name, input=node.args))
            out.append(
                ToolApprovalRequest(
                    approval_id=client_id, tool_call_id=client_id, approval_descriptor=descriptor
                )
            )
            self._waiting_on_calls = True
            return
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
        self._known_calls.add(client_id)
        self._calls[client_id] = (call.name, args)
        by_server = (
            True if self.policy is not None and self.policy.runs_unasked(call.name) else None
        )
        out.append(
            ToolInputStart(
                tool_call_id=client_id,
                tool_name=call.name,
                provider_executed=by_server,
                provider_metadata=self._blocks.speaker,
            )
        )
        if self.policy is not None and self.policy.needs_approval(call.name, args):
            # A client tool that needs approval: show the input and ask, but do not say
            # "input available" yet — that makes the client run the tool (``onToolCall``).
            # :meth:`release` says it once the user approved
            # (docs/architecture.md#browser-tools-that-need-approval).
            out.append(ToolInputDelta(tool_call_id=client_id, input_text_delta=to_json(args)))
            out.append(
                ToolApprovalRequest(
                    approval_id=client_approval_id(client_id), tool_call_id=client_id
                )
            )
        else:
            shown = shown_input(call.name, args)
            out.append(
                ToolInputAvailable(
                    tool_call_id=client_id,
                    tool_name=call.name,
                    input=shown,
                    provider_executed=by_server,
                )
            )
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
        if not response.id or response.id in confirmations:
            return
        call_id = self._client_id(response.id)
        if call_id not in self._known_calls or call_id in self._settled:
            return
        self._blocks.close(out)
        _, args = self._calls.get(call_id, ("", {}))
        shown = self._shown(response.name or "", args, response.response)
        out.append(tool_result_chunk(call_id, shown))

    def _client_id(self, adk_id: str) -> str:
        """The id the client knows a call by (:mod:`.interrupts`): of the call this response
        announced, else of one the client already holds."""
        if adk_id in self._client_ids:
            return self._client_ids[adk_id]
        prefix = qualified_prefix(adk_id)
        held = [c for c in self._known_calls if c.startswith(prefix)]
        return held[0] if len(held) == 1 else adk_id

    def _node_result(self, event: Event, out: list[UIMessageChunk]) -> bool:
        """Show a confirmed workflow node's output as its call's result; whether it was."""
        asked = confirmed_node(event)
        if asked is None:
            return False
        call_id = self._client_id(asked)
        if call_id not in self._known_calls:
            return False
        if call_id not in self._settled:
            self._settled.add(call_id)
            self._blocks.close(out)
            out.append(tool_result_chunk(call_id, event.output))
        return True

    def closed_unanswered(self, call_id: str, why: str) -> list[UIMessageChunk]:
        """A call whose approval closed without the user's answer (it timed out): shown as an
        error saying so, not as the user's denial."""
        if call_id not in self._known_calls or call_id in self._settled:
            return []
        self._settled.add(call_id)
        return [ToolOutputError(tool_call_id=call_id, error_text=why)]

    def deny(self, call_id: str) -> list[UIMessageChunk]:
        """A call the user denied. The request said so; ADK's rejection response that follows
        is then skipped (matched by id, never by its text)."""
        if call_id not in self._known_calls or call_id in self._settled:
            return []
        self._settled.add(call_id)
        return [ToolOutputDenied(tool_call_id=call_id)]

    def tool_result(self, call_id: str, response: Any, name: str = "") -> list[UIMessageChunk]:
        """A call's result known before its function-response event (live mode reads it from
        the tool pipeline, since ADK merges the responses of a step into one event)."""
        if call_id not in self._known_calls or call_id in self._settled:
            return []
        self._settled.add(call_id)
        out: list[UIMessageChunk] = []
        self._blocks.close(out)
        name, args = self._calls.get(call_id, (name, {}))
        out.append(tool_result_chunk(call_id, self._shown(name, args, response)))
        return out

    def _shown(self, name: str, args: dict[str, Any], response: Any) -> Any:
        """A call's result as the client is shown it: the client's own answer (a browser tool's,
        the user's) as it sent it, a transfer as a handover."""
        if name == REQUEST_INPUT or (self.policy is not None and self.policy.is_client_tool(name)):
            return as_sent(response)
        return shown_result(name, args, response)

    def release(self, call_id: str, name: str, args: dict[str, Any]) -> list[UIMessageChunk]:
        """An approved client tool call: now the browser may run it (``onToolCall`` fires).
        Sent before any new step, so the client updates the part it already has."""
        if call_id not in self._known_calls:
            return []
        self._waiting_on_calls = True
        return [ToolInputAvailable(tool_call_id=call_id, tool_name=name, input=args)]

    # --- errors ------------------------------------------------------------------------------

    def _unsaved(self) -> list[types.Part]:
        """The text and reasoning the client was shown that no stored event holds: the
        partials of the model call under way (ADK stores only its final event)."""
        thought = ["".join(t) for t in self._streamed_thought.values()]
        said = ["".join(t) for t in self._streamed_text.values()]
        return [types.Part(text=t, thought=True) for t in thought if t] + [
            types.Part(text=t) for t in said if t
        ]

    def _error(self, error_text: str) -> list[UIMessageChunk]:
        """The failure goes into the message (a ``data-error`` part, kept in history) before
        the ``error`` chunk: the stock client stops reading the stream at that chunk."""
        self._errored = True
        self.failure = (self._unsaved(), error_text)
        out: list[UIMessageChunk] = []
        self._blocks.close(out)
        data = {"errorText": error_text}
        out.append(DataChunk(type=ERROR_PART, id=f"{self.message_id}-error", data=data))
        out.append(Error(error_text=error_text))
        return out
