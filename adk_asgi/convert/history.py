"""A chat's ADK session rebuilt as the AI SDK's ``UIMessage[]`` (sans-I/O).

This is what ``GET /chat/{id}/messages`` returns, so a page that reloads shows the chat as it
is on the server: the same message ids the streams announced (every event of a run is tagged
with them), one ``step-start`` per model call, and tool parts in their *true* states — a call
still waiting for approval is ``approval-requested``, so the user can approve it after a reload
and the stock helpers carry on from there. A stored value that cannot be read back (too deep,
not JSON) is shown as an error, not sent (:mod:`.safe_history`): one bad value never keeps a
chat from loading.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.data_parts import history_part, in_sent_order, place
from adk_asgi.convert.dynamic_parts import as_dynamic
from adk_asgi.convert.events import speaker
from adk_asgi.convert.failures import ERROR_PART
from adk_asgi.convert.metadata import MessageMetadata, history_metadata
from adk_asgi.convert.returned import kept_in
from adk_asgi.convert.safe_history import lost_input, lost_result, readable
from adk_asgi.convert.text_blocks import BlockNumbers
from adk_asgi.convert.tool_looks import (
    approved_automatically,
    automatic_approval_part,
    confirmation_descriptor,
    cut_call_chunk,
    input_error,
    node_descriptor,
    provider_executed,
    raw_input,
    result_chunk,
    waits_for_approval,
)
from adk_asgi.convert.user_parts import file_part, user_parts
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.credentials import asks_credentials, shown_input
from adk_asgi.hitl.interrupts import client_call_id, node_confirmation, workflow_answer
from adk_asgi.hitl.pending import (
    CONFIRMATION_TOOL,
    ChatState,
    ToolCall,
    chat_state,
    client_approval_id,
    visible_events,
)
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import ProviderMetadata, ToolOutputError
from adk_asgi.wire.messages import (
    Approval,
    DataPart,
    FilePart,
    ReasoningPart,
    StepStartPart,
    TextPart,
    ToolPart,
    UIMessage,
    UIPart,
)


def rebuild_messages(
    events: Iterable[Event],
    policy: ToolPolicy,
    files: Mapping[str, FilePart] | None = None,
    *,
    speakers: bool = False,
    metadata: MessageMetadata | None = None,
    send_usage: bool = False,
    v7: bool = False,
) -> list[UIMessage]:
    """``files``: the file parts of the uploads the artifact service keeps, by name: shown
    where the user's message has their placeholder. ``speakers``: text and reasoning parts
    name the agent that wrote them, as the stream does (a tree of agents). ``metadata`` and
    ``send_usage``: each assistant message's metadata, as its stream sent it
    (:mod:`.metadata`). ``v7``: the client is ai@7, whose parts differ from ai@6's where their
    reducers differ (a refused call)."""
    files = files or {}
    persisted = [e for e in visible_events(events) if not e.partial]
    state = chat_state(persisted, policy)
    refused = {i for event in persisted for i in bookkeeping.read(event).invalid_calls}
    asked = approval_descriptors(persisted)
    kept = kept_in(persisted)
    messages: list[UIMessage] = []
    answers: dict[str, UIMessage] = {}
    server_calls = {
        c.answered_as: c.message_id for c in map(state.calls.get, state.server_answered) if c
    }
    responded: set[str] = set()

    def waiting_step(event: Event) -> None:
        """The page's answers to a message whose calls the app answers stay open: its response
        ended with an empty step (:meth:`.events.EventConverter.waiting_on_server`)."""
        answered = {r.id for r in event.get_function_responses() if r.id}
        message_id = bookkeeping.read(event).message_id
        if message_id not in answers or not answered - server_calls.keys():
            return
        if any(m == message_id and c not in responded for c, m in server_calls.items()):
            answers[message_id].parts.append(StepStartPart())

    def answer_of(event: Event) -> UIMessage:
        """The assistant message of an event. The end of a live turn the user cut short with a
        new message is stored after that message: it joins its answer where that is, or, if
        nothing of it was stored before, goes before the message that cut it."""
        tags = bookkeeping.read(event)
        message_id = tags.message_id or event.invocation_id
        if message_id not in answers:
            answer = answers[message_id] = UIMessage(id=message_id, role="assistant", parts=[])
            cut = tags.cut and messages and messages[-1].role == "user"
            messages.insert(len(messages) - 1 if cut else len(messages), answer)
        return answers[message_id]

    steps: dict[str, object] = {}

    def step_of(event: Event, message: UIMessage) -> list[UIPart]:
        """A ``step-start`` per model call; in live mode per model step, as the stream shows
        it (its text and its calls arrive as separate events, tagged with the step)."""
        step = bookkeeping.read(event).live_step
        if step is not None and steps.get(message.id) == step:
            return []
        steps[message.id] = step
        return [StepStartPart()]

    def take(event: Event) -> None:
        app_part = history_part(event)
        if app_part is not None:  # an app's data part (send_data), where the stream showed it
            place(answer_of(event).parts, app_part)
            return
        content = event.content
        spoken = _transcript_parts(event)
        if spoken:  # live audio: what was said, as the stream showed it
            message = answer_of(event)
            if isinstance(spoken[0], TextPart):
                message.parts.extend(step_of(event, message))
            message.parts.extend(spoken)
            return
        error = bookkeeping.read(event).error
        cut = _cut_calls(event, policy, v7, speaker(event.author) if speakers else None)
        if error is not None:  # a failed answer: what the client was shown (convert/failures.py)
            message = answer_of(event)
            if (content is not None and content.parts) or cut:
                message.parts.extend(step_of(event, message))
                for part in (content.parts or []) if content is not None else []:
                    message.parts.extend(_model_part(part, state, policy, event, asked, kept=kept))
            message.parts.extend(cut)
            data = {"errorText": error}
            message.parts.append(DataPart(type=ERROR_PART, id=f"{message.id}-error", data=data))
            return
        if content is None and event.id not in state.rejected_nodes:
            content = workflow_answer(event)  # a workflow's answer (as convert/events.py shows it)
        if cut and not (content and content.parts):  # a stopped answer: only calls streaming
            message = answer_of(event)
            message.parts.extend([*step_of(event, message), *cut])
        if content is None or not content.parts:
            return
        if event.author == "user":
            parts = user_parts(content.parts, files)
            if parts:  # function-response-only user events are answers, not messages
                tags = bookkeeping.read(event)
                user_id = tags.user_message_id or event.id
                shown = tags.user_metadata  # (the client's own, returned as it sent it)
                messages.append(UIMessage(id=user_id, role="user", parts=parts, metadata=shown))
            else:
                waiting_step(event)
            return
        calls = [
            p
            for p in content.parts
            if p.function_call and p.function_call.name != CONFIRMATION_TOOL
        ]
        other = [
            p for p in content.parts if p.function_call is None and p.function_response is None
        ]
        if content.role != "model" and asks_credentials(content):  # in the asking call's step
            assistant = answer_of(event)
            for part in content.parts:
                assistant.parts.extend(_model_part(part, state, policy, event, asked, kept=kept))
            return
        if content.role != "model" or not (calls or other):
            return  # responses and confirmation requests: reflected in the call's part
        assistant = answer_of(event)
        assistant.parts.extend(step_of(event, assistant))
        author = speaker(event.author) if speakers else None
        for part in content.parts:
            shown = _model_part(part, state, policy, event, asked, author, refused, v7, kept=kept)
            assistant.parts.extend(shown)
        assistant.parts.extend(cut)  # (a stopped answer's calls that were streaming)

    blocks = BlockNumbers()
    for event in in_sent_order(persisted):
        tags = bookkeeping.read(event)
        key = tags.message_id or event.invocation_id  # (as answer_of keys the message)
        before = len(answers[key].parts) if key in answers else 0
        responded.update(r.id for r in event.get_function_responses() if r.id)
        take(event)
        if key in answers:
            blocks.number(answers[key], before, event, tags)
    for message_id, moment in history_metadata(persisted, metadata, send_usage).items():
        if message_id in answers:
            answers[message_id].metadata = moment
    return messages


def _transcript_parts(event: Event) -> list[UIPart]:
    """ADK keeps a live session's finished transcriptions as events of their own: the user's
    words become the ``data-transcript`` part the stream showed, the model's speech its text."""
    heard, said = event.input_transcription, event.output_transcription
    if heard is not None and heard.finished and heard.text:
        data = {"role": "user", "text": heard.text, "final": True}
        return [DataPart(type="data-transcript", id=event.id, data=data)]
    if said is not None and said.finished and said.text:
        return [TextPart(text=said.text, state="done")]
    return []


def _model_part(
    part: types.Part,
    state: ChatState,
    policy: ToolPolicy,
    event: Event,
    descriptors: Mapping[str, Any],
    author: ProviderMetadata | None = None,
    refused: Collection[str] = (),
    v7: bool = False,
    kept: frozenset[str] = frozenset(),
) -> list[UIPart]:
    if part.text is not None and part.function_call is None:
        if not part.text:
            return []
        if part.thought:
            return [ReasoningPart(text=part.text, state="done", provider_metadata=author)]
        return [TextPart(text=part.text, state="done", provider_metadata=author)]
    if part.function_call is not None:
        asked = part.function_call
        call = state.calls.get(client_call_id(asked.id or "", asked.name or "", event))
        if call is None:
            return []
        part_ = _tool_part(call, state, policy, descriptors.get(call.id), author, call.id in kept)
        part_ = _refused(part_, call, state, policy, v7) if call.id in refused else part_
        node = state.confirmation_of_call.get(call.id) == call.id  # (a node that asks: no tool)
        return [
            as_dynamic(part_, call.name) if not node and policy.is_dynamic(call.name) else part_
        ]
    file = file_part(part)
    return [file] if file is not None else []


def _refused(
    part: ToolPart, call: ToolCall, state: ChatState, policy: ToolPolicy, v7: bool
) -> ToolPart:
    """A call ADK refused without running a tool, as the stream's ``tool-input-error`` left it
    (:func:`.tool_looks.input_error`): ai@6 keeps the input only as ``rawInput``, ai@7 as
    ``input``."""
    stored, lost = readable(state.results.get(call.id))
    refusal = input_error(policy, call.id, call.name, call.args, stored) if lost is None else None
    if refusal is None:
        return part
    part.state, part.error_text = "output-error", refusal.error_text
    part.input, part.raw_input = (refusal.input, None) if v7 else (None, refusal.input)
    return part


def _cut_calls(
    event: Event, policy: ToolPolicy, v7: bool, author: ProviderMetadata | None
) -> list[UIPart]:
    """The calls a kept answer showed streaming when it failed or stopped, as the stream
    ended them (:func:`.tool_looks.cut_call_chunk`; the input where ai@6 or ai@7 keeps it)."""
    parts: list[UIPart] = []
    for cut in bookkeeping.read(event).cut_calls:
        chunk = cut_call_chunk(policy, cut.id, cut.name, cut.input)
        part = ToolPart(
            type=f"tool-{cut.name}",
            tool_call_id=cut.id,
            state="output-error",
            error_text=chunk.error_text,
            provider_executed=chunk.provider_executed,
            call_provider_metadata=author,
        )
        part.input, part.raw_input = (chunk.input, None) if v7 else (None, chunk.input)
        parts.append(as_dynamic(part, cut.name) if chunk.dynamic else part)
    return parts


def approval_descriptors(events: Iterable[Event]) -> dict[str, Any]:
    """What each call's approval asked the user (hint, payload), by call id: kept after the
    decision, as the client keeps it (ADK's confirmations, recorded live waits, nodes)."""
    asked: dict[str, Any] = {}
    for event in events:
        for call in event.get_function_calls():
            node = node_confirmation(call)
            if node is not None and call.id and call.name:
                asked[client_call_id(call.id, call.name, event)] = node_descriptor(node)
            elif call.name == CONFIRMATION_TOOL:
                args = call.args or {}
                original = (args.get("originalFunctionCall") or {}).get("id")
                if isinstance(original, str):
                    asked[original] = confirmation_descriptor(args)
    return asked


def _tool_part(
    call: ToolCall,
    state: ChatState,
    policy: ToolPolicy,
    descriptor: Any,
    author: ProviderMetadata | None = None,
    kept: bool = False,
) -> ToolPart:
    # how the part looks is convert/tool_looks.py's, as in the stream (a node that asks is no tool)
    node = state.confirmation_of_call.get(call.id) == call.id
    args, bad_input = readable(call.args)
    if bad_input is not None:
        args = {"error": lost_input(bad_input)}
    part = ToolPart(
        type=f"tool-{call.name}",
        tool_call_id=call.id,
        input=shown_input(call.name, args),
        state="input-available",
        provider_executed=provider_executed(policy, call.name, node=node),
        call_provider_metadata=author,
    )
    released = call.id in state.approved_client_calls or state.live_decisions.get(call.id)
    if waits_for_approval(policy, call.name, call.args) and not released:
        part.raw_input = raw_input(args)  # the stream sent only its JSON text, not the input
    approval_id = state.confirmation_of_call.get(call.id)
    client_approval = call.id in state.gated
    if client_approval or call.id in state.live_decisions:
        approval_id = client_approval_id(call.id)
    reason = state.reasons.get(approval_id or "")
    if state.denied(call.id):
        closed = state.closed_unanswered(call.id)
        if closed is not None:  # not the user's denial: nobody answered
            part.state, part.error_text = "output-error", closed
            part.approval = Approval(id=approval_id or "", descriptor=descriptor)
            return part
        part.state = "output-denied"
        part.approval = Approval(
            id=approval_id or "", approved=False, reason=reason, descriptor=descriptor
        )
        return part
    if approval_id is not None:
        part.approval = Approval(
            id=approval_id, approved=True, reason=reason, descriptor=descriptor
        )
    stored, lost = readable(state.results[call.id]) if call.id in state.results else (None, None)
    if lost is not None:
        part.state, part.error_text = "output-error", lost_result(lost)
    elif call.id in state.results:
        result = result_chunk(policy, call.id, call.name, call.args, stored, kept=kept)
        if isinstance(result, ToolOutputError):
            part.state, part.error_text = "output-error", result.error_text
        else:  # (an output drops the raw input, as the client's reducer does)
            part.state, part.output, part.raw_input = "output-available", result.output, None
        if approval_id is None and approved_automatically(policy, call.name, result):
            part.approval = automatic_approval_part(call.id)  # (a v6 client is not shown it)
    elif approval_id in state.open_confirmations or (
        client_approval and call.id not in state.approved_client_calls
    ):
        part.state = "approval-requested"
        part.approval = Approval(id=approval_id or "", descriptor=descriptor)
    return part
