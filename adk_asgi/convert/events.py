"""ADK events → UI message chunks: a sans-I/O state machine, one instance per response.

The converter does no I/O and holds no asyncio objects: a transport feeds it events and writes
out the chunks it returns, so SSE and live mode mean the same thing to a client, and every rule
below is unit-tested on plain ``Event`` objects. Each kind of part has its module, composed
here: text and reasoning (:mod:`.text_blocks`), tool cards (:mod:`.tool_cards`), code execution
(:mod:`.code_execution`), which model call an event ends (:mod:`.model_calls`), agents that
stream at once (:mod:`.parallel_calls`), failures (:mod:`.failures`), the app's metadata
(:mod:`.metadata`). What stays in this module is the one state they share: which event goes
where, the steps, and how the message ends.

The rules it keeps (docs/internals/architecture.md#adk-facts, #the-ui-message-stream):

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
* Gemini's code execution (ADK's ``BuiltInCodeExecutor``) shows as the AI SDK's Google provider
  shows it: the code a call of ``code_execution`` the provider ran, what it printed its output,
  an image it drew a ``file`` part (:mod:`.code_execution`). The executor's event before each
  final event gives that event a new id; it still ends its partials' call (:mod:`.model_calls`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.adk_values import (
    file_chunk,
    is_abort,
    is_finish_reason,
    is_live_audio,
    is_shown,
    source_chunks,
)
from adk_asgi.convert.code_execution import CodeRuns, is_code_part
from adk_asgi.convert.data_parts import shown_now
from adk_asgi.convert.failures import (
    ERROR_PART,
    AgentError,
    ErrorHandler,
    guarded,
    show_errors,
    unstored,
)
from adk_asgi.convert.metadata import AppMetadata, MessageMetadata, ResponseFacts, merged
from adk_asgi.convert.model_calls import ModelCalls
from adk_asgi.convert.parallel_calls import ParallelCalls
from adk_asgi.convert.progress import progress_of
from adk_asgi.convert.text_blocks import HeardSpeech, TextBlocks
from adk_asgi.convert.tool_cards import HeldCalls, ToolCards
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.interrupts import workflow_answer
from adk_asgi.hitl.pending import CONFIRMATION_TOOL, REJECTED
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import (
    Abort,
    DataChunk,
    Error,
    Finish,
    FinishReason,
    FinishStep,
    Start,
    StartStep,
    UIMessageChunk,
)
from adk_asgi.wire.chunks import (
    MessageMetadata as MessageMetadataChunk,
)


def speaker(author: str) -> dict[str, dict[str, Any]]:
    """The ``providerMetadata`` that names the agent a part is from."""
    return {"adk": {"author": author}}


class EventConverter:
    """Turns the events of one request (a ``run_async`` call) into one assistant message stream.

    Call :meth:`start`, then :meth:`feed` for every event, then :meth:`finish` (or
    :meth:`fail` first, when the run raised). Each returns the chunks to send, in order.
    ``known_calls`` are call ids the client already holds a tool part for (a continuation's
    earlier calls), so their results can be shown. ``on_error``: the text the client is shown
    for a failure (``Messages(on_error=)``; this default shows the error itself). ``files_at``:
    the chat's path (``<mount>/chat/<id>``), whose file route serves the images code execution
    drew (:attr:`files_at`).
    """

    def __init__(
        self,
        *,
        message_id: str,
        known_calls: Iterable[str] = (),
        send_usage: bool = False,
        message_metadata: MessageMetadata | None = None,
        started_at: float | None = None,
        model: str | None = None,
        policy: ToolPolicy | None = None,
        live: bool = False,
        on_error: ErrorHandler = show_errors,
        speakers: bool = False,
        files_at: str | None = None,
    ) -> None:
        self.message_id = message_id
        self.on_error = guarded(on_error)
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
        self.message_metadata = message_metadata
        """The app's hook for the metadata of ``start``, each ``finish-step`` and ``finish``
        (:mod:`.metadata`); ``model``: the model the app's agent is configured with."""
        self.facts = ResponseFacts(message_id, started_at, model)
        """What the response's events say of it: usage, model, author, how it ended."""
        self.policy = policy
        """Which client calls wait for approval, and which tools may ask (a step's later calls
        are held only then: holding delays their cards until the step's tools ran). ``None``:
        no call waits for the bridge's approval, and any tool may ask."""
        self._step_event_id: str | None = None
        self._blocks = TextBlocks(message_id)
        self.cards = ToolCards(self._blocks, known_calls=known_calls, policy=policy, live=live)
        """The tool parts: calls, approvals, results (:mod:`.tool_cards`)."""
        self._metadata = AppMetadata(
            message_metadata, lambda exc: self.on_error(AgentError(exception=exc))
        )
        """The app's ``message_metadata`` for each moment of this message."""
        self.code = CodeRuns(message_id, self._blocks, self.cards.known, files_at)
        """Gemini's code execution: its calls, results and images (:mod:`.code_execution`)."""
        self._calls = ModelCalls()
        self._streamed_text: dict[str, list[str]] = {}
        self._streamed_thought: dict[str, list[str]] = {}
        """The partial text of each model call so far, in pieces (joined when its final event
        comes: adding each delta to a string would copy the whole of it every time)."""
        self._errored = False
        self._finished = False
        self._live_answer = live
        """A live answer (streamed, or its stored events replayed): no ``finish-step`` moment,
        since Gemini Live's events do not tie their usage to a step the same way as they
        stream and as they are stored (docs/metadata.md)."""
        self._stepped = False  # a step was opened in this response
        self._waits_on_server = False
        self._interrupted = False
        self._live_step = 0
        self._step_has_call = False
        self._held = HeldCalls()
        """Over SSE, a step's later calls, until the next event says whether they ask."""
        self._heard = HeardSpeech(message_id)
        self._source_urls: set[str] = set()
        """The sources this response cited: each URL once, as the AI SDK's Google provider
        shows them (Gemini Live repeats them on the full text)."""
        self._held_sources: list[UIMessageChunk] = []
        self._cut_by_model: AgentError | None = None
        """How the model ended an answer it did not finish (``SAFETY``,
        ``MALFORMED_FUNCTION_CALL``…: ADK's error code for a finish reason)."""
        self._order = ParallelCalls(self._feed, live=live)
        """When each event is fed: agents that stream at once (:mod:`.parallel_calls`)."""

    @property
    def errored(self) -> bool:
        return self._errored

    @property
    def files_at(self) -> str | None:
        """The chat's path (``<mount>/chat/<id>``): an image Gemini's code drew is a ``file``
        part served under it (``<files_at>/files/<name>``); ``None`` (unknown) leaves ADK's
        words for it (:mod:`.code_execution`)."""
        return self.code.files_at

    @files_at.setter
    def files_at(self, path: str | None) -> None:
        self.code.files_at = path

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> list[UIMessageChunk]:
        metadata = self._metadata(self.facts.start())
        return [Start(message_id=self.message_id, message_metadata=metadata)]

    def fail(self, error_text: str) -> list[UIMessageChunk]:
        """Report a failure no event reported (the run raised), in words already chosen. The
        calls the run was running fail with it (:meth:`.ToolCards.fail_running`)."""
        if self._errored:
            return []
        return self._held.release() + self._error(error_text, calls_failed=True)

    def fail_with(self, exception: BaseException) -> list[UIMessageChunk]:
        """Report an exception the run raised, as ``on_error`` words it."""
        return self.fail(self.on_error(AgentError(exception=exception)))

    def waiting_on_calls(self) -> None:
        """The response ends because tool calls wait for the user or the browser."""
        self.cards.waits = True

    def waiting_on_server(self) -> None:
        """The model will not run in this response: calls the app answers stay open. With no
        step of its own, it ends with an empty one (docs/hitl.md, "Next to the browser's
        tools"; history shows the same)."""
        self._waits_on_server = True

    def interrupt(self) -> list[UIMessageChunk]:
        """The user spoke over the model (live barge-in): end the response where it is."""
        self._interrupted = True
        self.cards.waits = False
        return self.finish()

    def finish(self) -> list[UIMessageChunk]:
        if self._finished:
            return []
        out = self._order.end()  # (a call cut short: what the others said is shown)
        out += self._held_sources
        if self._cut_by_model is not None and not self._stepped and not self._errored:
            # The model ended the answer before it said anything (Gemini blocked it): an
            # empty message (which history, holding nothing of it, would not show) says
            # nothing to the user, so it fails with the reason, in the stream and in history.
            out += self._error(self.on_error(self._cut_by_model), calls_failed=False)
        self._finished = True
        out += self._held.release() + self._close_step()
        if self._waits_on_server and not self._stepped and not self._errored:
            # (the stock reducer shows a step once a later chunk writes the message: a second
            # ``start`` of the same message does, as the AI SDK's merged streams send one)
            out += [StartStep(), FinishStep(), Start(message_id=self.message_id)]
        reason: FinishReason = "interrupted" if self._interrupted else self.facts.finish_reason
        if self._errored:
            reason = "error"
        elif self.cards.waits and not self._interrupted:
            reason = "tool-calls"
        usage = self.facts.usage
        metadata = {"usage": dict(usage)} if self.send_usage and usage else None
        hooked = self._metadata(self.facts.finish(reason))
        out.append(Finish(finish_reason=reason, message_metadata=merged(metadata, hooked)))
        return out

    # --- events ------------------------------------------------------------------------------

    def feed(self, event: Event) -> list[UIMessageChunk]:
        if self._finished:
            return []
        return self._order.feed(event)

    def _feed(self, event: Event) -> list[UIMessageChunk]:
        data = None if event.content else shown_now(event, self._held.held, live=self.live)
        if data is not None:
            return data  # (an app's data part, which has no content: convert/data_parts.py)
        if self.speakers:
            self._blocks.speaker = speaker(event.author)
        out: list[UIMessageChunk] = []
        if self._held:
            asked = self._held.with_approvals(event, self.cards)
            if asked is not None:  # each approval request right after its call
                self._event_tail(event, asked)
                return asked
            out.extend(self._held.release())
        if (progress := progress_of(event)) is not None:  # (a preliminary output: .progress)
            return out + self.cards.progress(progress)
        if event.author == "user":  # (transcriptions: live mode's, or replayed by history)
            if event.input_transcription is not None:
                out.append(self._heard.chunk(event.input_transcription))
            return out
        if event.output_transcription is not None:
            self._spoken_transcript(event, event.output_transcription, out)
        if event.partial:
            self._feed_partial(event, out)
        else:
            tags = bookkeeping.read(event)
            kept = tags.kept  # (what the client saw, not ADK's event)
            if not kept:
                self.facts.see(event)
            self._feed_final(event, out)
            if not kept:
                self.facts.see_in_step(event)
                self._live_answer = self._live_answer or tags.live_step is not None
        return out

    def _key(self, event: Event) -> str:
        """What ties the deltas of one model message together: in ``run_async`` its partials
        and final event share ``event.id``; in live mode every message has a new id, and the
        final one repeats the text streamed since the last tool result, so text accumulates
        within a live step (a stored event names its step: history replays it). An agent that
        speaks within the step, as a ``mode="single_turn"`` sub-agent does before its call's
        result, makes its own model call: its words are a step of their own, as over SSE."""
        if self.live:
            return f"live-{self._live_step}-{event.author}"
        if event.partial:
            return self._calls.partial(event)
        step = bookkeeping.read(event).live_step
        return self._calls.final(event) if step is None else f"live-{step}-{event.author}"

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
            if part.function_call is not None and self.cards.streams(part.function_call):
                self._open_step_for(key, out)
                self.cards.stream(part.function_call, out)  # (its arguments, as JSON text)
            if is_code_part(part):
                self._open_step_for(key, out)
                self.code.partial(key, part, out)
            if self.code.in_partial(part):  # (an image: shown once ADK saved it)
                continue
            if not part.text or part.function_call is not None:
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
            shown = self.cards.node_result(event, out)
            if not (shown and event.output == REJECTED):
                content = workflow_answer(event)
        parts = (content.parts or []) if content is not None else []
        if not parts:
            # Usage, a finish reason, a resumption handle, metadata alone (Gemini Live sends
            # its usage before the turn's full text), the code executor's event (the images
            # it saved): nothing to show, so no text block or step of the response opens,
            # closes or splits here; its sources wait for the next part shown, where history,
            # which keeps no partial, shows them too.
            if content is None:
                self.code.saw(event)
                self._calls.between(event)
            self._event_tail(event, out, shows=False)
            return
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
        images = self.code.saved_images(parts)
        # Gemini Live ends a step's thought and its text in separate complete events: one
        # that holds only the thought (or only the text) leaves the other kind streaming.
        kinds = {
            bool(p.thought)
            for p in parts
            if p.text is not None and not p.function_call and id(p) not in images
        }
        keep_text, keep_thought = (self.live and kinds == {k} for k in (True, False))
        remaining_text = "" if keep_text else "".join(self._streamed_text.pop(key, ()))
        remaining_thought = "" if keep_thought else "".join(self._streamed_thought.pop(key, ()))
        calls = [p.function_call.name or "" for p in parts if p.function_call is not None]
        hold = not self.live and any(self.policy is None or self.policy.may_ask(n) for n in calls)
        for part in parts:
            if id(part) in images:
                continue  # (shown at the end of the event: :mod:`.code_execution`)
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
                    self.cards.call(call, event, held)
                    self._held.hold(call.id or "", held)
                else:
                    self.cards.call(call, event, out)
                    self._step_has_call = call.name != CONFIRMATION_TOOL
            elif part.function_response is not None:
                self.cards.response(part.function_response, confirmations, out, event)
            elif is_code_part(part):
                self._open_step_for(key, out)  # (Gemini Live's content of code has no role)
                self.code.final(key, part, out)
            elif (file := file_chunk(part, live=self.live)) is not None:
                self._blocks.close(out)
                out.append(file)
        self._step_has_call = False
        self._blocks.close_of(key, out, text=not keep_text, reasoning=not keep_thought)
        self.code.end(key)
        for image in images.values():
            self.code.show_image(image, key, out)
        if self.live and any(p.function_response for p in parts):
            self._live_step += 1  # the model's answer to these results is a new step
        self._event_tail(event, out)

    def _event_tail(self, event: Event, out: list[UIMessageChunk], *, shows: bool = True) -> None:
        """What any complete event may carry besides its parts: sources, usage, how it ended.
        ``shows``: the event has parts shown (else its sources are held for the next one)."""
        for source in source_chunks(event):
            if source.url not in self._source_urls:
                self._source_urls.add(source.url)
                self._held_sources.append(source)
        if shows:
            out.extend(self._held_sources)
            self._held_sources = []
        if is_abort(event):
            self.stopped = self._cut(out)
            out.append(Abort())
        elif is_finish_reason(event):
            self._cut_by_model = AgentError(code=event.error_code, message=event.error_message)
        elif event.error_code or event.error_message:
            error = AgentError(code=event.error_code, message=event.error_message)
            out.extend(self._error(self.on_error(error), calls_failed=not self.live))

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
        self._stepped = True
        self.cards.waits = False
        out.append(StartStep())

    def _close_step(self) -> list[UIMessageChunk]:
        """The step ends: the hook's metadata for it (a ``message-metadata`` chunk before
        ``finish-step``, as ai@7's ``toUIMessageStream`` sends it; SSE only), then
        ``finish-step``."""
        out: list[UIMessageChunk] = []
        self._blocks.close(out)
        if self._step_event_id is not None:
            step = self.facts.finish_step()
            hooked = None if self._live_answer else self._metadata(step)
            if hooked is not None:
                out.append(MessageMetadataChunk(message_metadata=hooked))
            out.append(FinishStep())
            self._step_event_id = None
        return out

    # --- errors ------------------------------------------------------------------------------

    def _cut(self, out: list[UIMessageChunk]) -> list[types.Part]:
        """The answer ends: what it showed that no event holds; its calls streaming end."""
        self._blocks.close(out)
        self.cards.cut_short(out)
        return unstored(self._streamed_thought, self._streamed_text)

    def _error(self, error_text: str, *, calls_failed: bool) -> list[UIMessageChunk]:
        """The failure goes into the message (a ``data-error`` part, kept in history) before
        the ``error`` chunk, where the stock client stops reading. ``calls_failed``: the
        server's running calls failed with it (:meth:`.ToolCards.fail_running`: the run
        raised, or ADK reported a node's exception over SSE; a live model's error event ends
        its answer, not the live flow's tools)."""
        self._errored = True
        out: list[UIMessageChunk] = []
        self.failure = (self._cut(out), error_text)
        if calls_failed:
            self.cards.fail_running(error_text, out)
        data = {"errorText": error_text}
        out.append(DataChunk(type=ERROR_PART, id=f"{self.message_id}-error", data=data))
        hooked = self._metadata(self.facts.finish("error"))
        if hooked is not None:  # (the client reads no ``finish`` after the error)
            out.append(MessageMetadataChunk(message_metadata=hooked))
        out.append(Error(error_text=error_text))
        return out
