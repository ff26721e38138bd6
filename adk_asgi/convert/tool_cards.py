"""The tool parts of one assistant message: calls, approvals, results (sans-I/O).

Part of :class:`~.events.EventConverter`, which decides *when* a call is shown (its
step, the order of a step's calls and their approval requests); this decides *what* the
client is shown of it:

* a call is announced by the id the client will answer it under
  (:mod:`adk_asgi.hitl.interrupts`), with ``providerExecuted`` when the server runs it with
  nothing asked of the page (that rule, and how a result looks, are :mod:`.tool_looks`', which
  history follows too);
* ADK's ``adk_request_confirmation`` becomes a ``tool-approval-request`` on the original call,
  a workflow node that asks to run becomes a call with its approval request, and a client tool
  that needs approval shows its input without ``input-available`` until it is approved;
* a result, a denial or an approval closed unanswered is shown once per call, and only for a
  call the client holds a part for (an unknown id makes the client throw);
* a call whose arguments the model streams is started at its first piece and its input grows
  as JSON text (``tool-input-delta``, :mod:`.streamed_input`) until the final event completes
  it;
* a call the server runs when the run raises ran and failed: it ends with the error the
  client is shown (:class:`RunningCalls`);
* over SSE, a step's later calls are held until the next event says whether they ask
  (:class:`HeldCalls`), so each approval request follows its own call.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.adk_values import tool_result_chunk
from adk_asgi.convert.failures import FailedCall
from adk_asgi.convert.progress import Progress
from adk_asgi.convert.returned import kept_calls
from adk_asgi.convert.streamed_input import StreamedInput, streams_arguments
from adk_asgi.convert.text_blocks import TextBlocks
from adk_asgi.convert.tool_looks import (
    approved_automatically,
    automatic_approval,
    automatic_denial,
    confirmation_descriptor,
    cut_call_chunk,
    denied_automatically,
    dynamic,
    input_error,
    node_descriptor,
    provider_executed,
    raw_input,
    result_chunk,
    waits_for_approval,
)
from adk_asgi.hitl import bookkeeping
from adk_asgi.hitl.credentials import shown_input
from adk_asgi.hitl.interrupts import (
    ASKING_THE_USER,
    REQUEST_CREDENTIAL,
    client_call_id,
    confirmed_node,
    node_confirmation,
    qualified_prefix,
)
from adk_asgi.hitl.pending import CONFIRMATION_TOOL, client_approval_id
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.wire.chunks import (
    ToolApprovalRequest,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    UIMessageChunk,
)

_NOT_STREAMED: frozenset[str] = frozenset({CONFIRMATION_TOOL, REQUEST_CREDENTIAL, *ASKING_THE_USER})


class RunningCalls:
    """The calls the server runs in one response, until their result (sans-I/O).

    Part of :class:`ToolCards`: a run that raises leaves each of these without a
    result, and none will come (ADK stores none for a tool that raised, nor for the step's calls
    cut with it), so they ran and failed: each ends with the error the client is shown for the
    answer, and is kept for the answer's record (:mod:`.failures`). A call runs from the moment it
    is announced with nothing asked of the page (not a browser tool, not its approval, not ADK's
    questions for the user, not a long-running call) until its result, or from the request that
    approved it (ADK's confirmation, live mode's gate); a call whose tool asks the user waits
    instead.
    """

    def __init__(self, policy: ToolPolicy | None) -> None:
        self.policy = policy
        self._running: dict[str, FailedCall] = {}
        """By the id the client knows each call by."""
        self.failed: list[FailedCall] = []
        """The calls the run was running when it raised (:meth:`fail`)."""

    def announced(self, call: FailedCall, args: dict[str, Any]) -> None:
        """A call announced (not long-running): it runs now unless the page answers it."""
        name = call.name
        if name in ASKING_THE_USER or waits_for_approval(self.policy, name, args):
            return
        if self.policy is None or not self.policy.is_client_tool(name):
            self._running[call.id] = call

    def approved(self, call: FailedCall) -> None:
        """A call approved in this request: the server runs it now."""
        self._running[call.id] = call

    def asked(self, call_id: str) -> None:
        """The call's tool asks the user first: it waits, it does not run."""
        self._running.pop(call_id, None)

    def fail(self, error_text: str, settled: Collection[str]) -> list[ToolOutputError]:
        """The run raised: the calls still running (not ``settled``, those with a result shown)
        end with ``error_text``."""
        failed = [c for i, c in self._running.items() if i not in settled]
        self._running.clear()
        self.failed += failed
        return [
            ToolOutputError(
                tool_call_id=c.id, error_text=error_text, dynamic=dynamic(self.policy, c.name)
            )
            for c in failed
        ]


class ToolCards:
    """``known_calls``: the ids the client already holds a tool part for (a continuation's
    earlier calls). ``blocks``: the message's text blocks, closed before a tool part."""

    def __init__(
        self,
        blocks: TextBlocks,
        *,
        known_calls: Iterable[str] = (),
        policy: ToolPolicy | None = None,
        live: bool = False,
    ) -> None:
        self.blocks = blocks
        self.policy = policy
        self.live = live
        self.known: set[str] = set(known_calls)
        """The ids of the calls the client holds a part for."""
        self.waits = False
        """A call shown since the last step waits for the user or the browser."""
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        """The name and arguments of each call announced in this response, by client id."""
        self._client_ids: dict[str, str] = {}
        """ADK call id → the id the client knows its latest call by
        (:mod:`adk_asgi.hitl.interrupts`)."""
        self._settled: set[str] = set()
        self._asked: set[str] = set()
        """Calls of this response the user was asked to approve (ADK's confirmation, a
        browser tool's approval): their approval is the user's, never automatic."""
        self._resulted: set[str] = set()
        """Calls whose result was shown: a progress message after it is not shown."""
        self._streaming: dict[str, StreamedInput] = {}
        """The calls whose arguments are streaming, by client id (:mod:`.streamed_input`)."""
        self.cut: list[bookkeeping.CutCall] = []
        """The calls cut short while their arguments streamed (:meth:`cut_short`)."""
        self.running = RunningCalls(policy)
        """The calls the server runs now, failed by a run that raises (:meth:`fail_running`)."""

    def streams(self, call: types.FunctionCall) -> bool:
        """Whether a partial event's call is a piece of a call whose arguments are shown as they
        stream (:meth:`stream`). ADK's own calls and the questions for the user come whole, and
        Vertex names a call in its first piece only."""
        if not call.id or not streams_arguments(call):
            return False
        if call.id in self._streaming:
            return True
        name = call.name
        return bool(name) and name not in _NOT_STREAMED and node_confirmation(call) is None

    def stream(self, call: types.FunctionCall, out: list[UIMessageChunk]) -> None:
        """A piece of a call whose arguments stream (:meth:`streams`): its part is started at
        the first piece, and each piece adds to its input's JSON text (``input-streaming``)."""
        client_id, name = call.id or "", call.name or ""  # (the calls streamed keep ADK's ids)
        streamed = self._streaming.get(client_id)
        if streamed is None:
            self.blocks.close(out)
            streamed = self._streaming[client_id] = StreamedInput(name)
            out.append(
                ToolInputStart(
                    tool_call_id=client_id,
                    tool_name=name,
                    provider_executed=provider_executed(self.policy, name),
                    provider_metadata=self.blocks.speaker,
                    dynamic=dynamic(self.policy, name),
                )
            )
        delta = streamed.feed(call.partial_args or [])
        if delta:
            out.append(ToolInputDelta(tool_call_id=client_id, input_text_delta=delta))

    def cut_short(self, out: list[UIMessageChunk]) -> None:
        """The answer ends (it failed, or was stopped) while calls' arguments stream: each is
        shown as an error with its arguments so far, and kept in :attr:`cut` for the answer's
        record (no stored event holds them)."""
        for client_id, streamed in self._streaming.items():
            self._settled.add(client_id)
            out.append(cut_call_chunk(self.policy, client_id, streamed.name, streamed.args))
            self.cut.append(
                bookkeeping.CutCall(id=client_id, name=streamed.name, input=streamed.args)
            )
        self._streaming.clear()

    def call(self, call: types.FunctionCall, event: Event, out: list[UIMessageChunk]) -> None:
        if not call.id or not call.name:
            return
        self.blocks.close(out)
        args = call.args or {}
        client_id = call.id if self.live else client_call_id(call.id, call.name, event)
        self._client_ids[call.id] = client_id
        node = node_confirmation(call)
        if node is not None:  # a workflow node asks to run: an approval, as for a tool
            self.known.add(client_id)
            descriptor = node_descriptor(node)
            name, author = node.tool_name, self.blocks.speaker
            out.append(
                ToolInputStart(tool_call_id=client_id, tool_name=name, provider_metadata=author)
            )
            out.append(ToolInputAvailable(tool_call_id=client_id, tool_name=name, input=node.args))
            out.append(
                ToolApprovalRequest(
                    approval_id=client_id, tool_call_id=client_id, approval_descriptor=descriptor
                )
            )
            self.waits = True
            return
        if call.name == CONFIRMATION_TOOL:
            original = args.get("originalFunctionCall") or {}
            original_id = original.get("id")
            if isinstance(original_id, str) and original_id in self.known:
                self._asked.add(original_id)
                self.running.asked(original_id)
                descriptor = confirmation_descriptor(args)
                out.append(
                    ToolApprovalRequest(
                        approval_id=call.id,
                        tool_call_id=original_id,
                        approval_descriptor=descriptor,
                    )
                )
                self.waits = True
            return
        self.known.add(client_id)
        self._calls[client_id] = (call.name, args)
        by_server = provider_executed(self.policy, call.name)
        is_dynamic = dynamic(self.policy, call.name)
        start = ToolInputStart(
            tool_call_id=client_id,
            tool_name=call.name,
            provider_executed=by_server,
            provider_metadata=self.blocks.speaker,
            dynamic=is_dynamic,
        )
        streamed = self._streaming.pop(client_id, None)
        rest = streamed.rest(args) if streamed is not None else None
        if rest is None:  # (not streamed, or the stream went astray: its text starts over)
            out.append(start)
            rest = raw_input(args) if streamed is not None else ""
        if rest:  # the streamed text, completed: the final arguments' JSON
            out.append(ToolInputDelta(tool_call_id=client_id, input_text_delta=rest))
        if waits_for_approval(self.policy, call.name, args):
            # A client tool that needs approval: show the input and ask, but do not say
            # "input available" yet — that makes the client run the tool (``onToolCall``).
            # :meth:`release` says it once the user approved
            # (docs/internals/architecture.md#browser-tools-that-need-approval).
            self._asked.add(client_id)
            if streamed is None:
                out.append(ToolInputDelta(tool_call_id=client_id, input_text_delta=raw_input(args)))
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
                    dynamic=is_dynamic,
                )
            )
        if call.id in (event.long_running_tool_ids or ()):
            self.waits = True
        else:
            self.running.announced(FailedCall(client_id, call.id, call.name), args)

    def runs(self, call_id: str, adk_id: str, name: str) -> None:
        """A call the user approved in this request, which the server runs now (ADK's
        confirmation, or live mode's gate)."""
        if call_id in self.known and call_id not in self._settled | self._resulted:
            self.running.approved(FailedCall(call_id, adk_id, name))

    def fail_running(self, error_text: str, out: list[UIMessageChunk]) -> None:
        """The run raised: the calls it ran failed with ``error_text`` (:class:`RunningCalls`)."""
        failed = self.running.fail(error_text, self._settled | self._resulted)
        if failed:
            self.blocks.close(out)
        self._settled.update(c.tool_call_id for c in failed)
        out.extend(failed)

    def response(
        self,
        response: types.FunctionResponse,
        confirmations: dict[str, Any],
        out: list[UIMessageChunk],
        event: Event | None = None,
    ) -> None:
        """``event``: the response's, whose bookkeeping names the calls ADK refused without
        running a tool (:mod:`adk_asgi.serving.invalid_calls`) and those whose tool returned
        ADK's wrapper shape itself (:mod:`.returned`)."""
        if not response.id or response.id in confirmations:
            return
        call_id = self.client_id(response.id)
        if call_id not in self.known or call_id in self._settled:
            return
        self.blocks.close(out)
        name, args = self._calls.get(call_id, (response.name or "", {}))
        refused = event is not None and response.id in bookkeeping.read(event).invalid_calls
        as_is = event is not None and response.id in kept_calls(event)
        out.extend(
            self._result(call_id, name, args, response.response, invalid=refused, kept=as_is)
        )
        self._resulted.add(call_id)

    def _result(
        self,
        call_id: str,
        name: str,
        args: dict[str, Any],
        response: Any,
        *,
        asked: bool = False,
        invalid: bool = False,
        kept: bool = False,
    ) -> list[UIMessageChunk]:
        """A call's result, after the automatic approval of a call of this response that its
        tool's rule let run unasked (:func:`.tool_looks.approved_automatically`), as the AI SDK
        shows one: the request, marked automatic, and the approval (v7 only). ``invalid``: ADK
        refused the call without running a tool (:func:`.tool_looks.input_error`). ``kept``:
        the tool returned ADK's wrapper shape itself (:mod:`.returned`)."""
        refused = input_error(self.policy, call_id, name, args, response) if invalid else None
        if refused is not None:
            return [refused]
        denied = denied_automatically(self.policy, name, response)
        if denied is not None:  # the server's policy (a user asked had approved the call)
            if asked or call_id in self._asked or call_id not in self._calls:
                return [ToolOutputDenied(tool_call_id=call_id)]
            return automatic_denial(call_id, *denied)
        shown = result_chunk(self.policy, call_id, name, args, response, kept=kept)
        automatic = not (asked or call_id in self._asked | self._resulted) and (
            call_id in self._calls and approved_automatically(self.policy, name, shown)
        )
        return [*automatic_approval(call_id), shown] if automatic else [shown]

    def progress(self, progress: Progress) -> list[UIMessageChunk]:
        """A running tool's preliminary output (:mod:`.progress`), until its result replaces
        it. The tool is named by the call's branch: a call announced in an earlier response
        (an approval's continuation) is a ``dynamic-tool`` part too."""
        call_id = self.client_id(progress.call_id)
        if not progress.shown or call_id not in self.known:
            return []
        if call_id in self._settled | self._resulted:
            return []
        out: list[UIMessageChunk] = []
        self.blocks.close(out)
        name, _ = self._calls.get(call_id, (progress.tool, {}))
        out.append(
            ToolOutputAvailable(
                tool_call_id=call_id,
                output=progress.output,
                preliminary=True,
                dynamic=dynamic(self.policy, name),
            )
        )
        return out

    def client_id(self, adk_id: str) -> str:
        """The id the client knows a call by (:mod:`adk_asgi.hitl.interrupts`): of the call this
        response announced, else of one the client already holds."""
        if adk_id in self._client_ids:
            return self._client_ids[adk_id]
        prefix = qualified_prefix(adk_id)
        held = [c for c in self.known if c.startswith(prefix)]
        return held[0] if len(held) == 1 else adk_id

    def node_result(self, event: Event, out: list[UIMessageChunk]) -> bool:
        """Show a confirmed workflow node's output as its call's result; whether it was."""
        asked = confirmed_node(event)
        if asked is None:
            return False
        call_id = self.client_id(asked)
        if call_id not in self.known:
            return False
        if call_id not in self._settled:
            self._settled.add(call_id)
            self.blocks.close(out)
            out.append(tool_result_chunk(call_id, event.output))
        return True

    def closed_unanswered(self, call_id: str, why: str) -> list[UIMessageChunk]:
        """A call whose approval closed without the user's answer (it timed out): shown as an
        error saying so, not as the user's denial."""
        if call_id not in self.known or call_id in self._settled:
            return []
        self._settled.add(call_id)
        name, _ = self._calls.get(call_id, ("", {}))
        is_dynamic = dynamic(self.policy, name) if name else None
        return [ToolOutputError(tool_call_id=call_id, error_text=why, dynamic=is_dynamic)]

    def deny(self, call_id: str) -> list[UIMessageChunk]:
        """A call the user denied. The request said so; ADK's rejection response that follows
        is then skipped (matched by id, never by its text)."""
        if call_id not in self.known or call_id in self._settled:
            return []
        self._settled.add(call_id)
        return [ToolOutputDenied(tool_call_id=call_id)]

    def tool_result(
        self,
        call_id: str,
        response: Any,
        name: str = "",
        *,
        asked: bool = False,
        invalid: bool = False,
        kept: bool = False,
    ) -> list[UIMessageChunk]:
        """A call's result known before its function-response event (live mode reads it from
        the tool pipeline, since ADK merges the responses of a step into one event).
        ``asked``: the user decided on the call (the live bridge's approval). ``invalid``: ADK
        refused the call without running a tool. ``kept``: the tool returned ADK's wrapper
        shape itself (:mod:`.returned`)."""
        if call_id not in self.known or call_id in self._settled:
            return []
        self._settled.add(call_id)
        out: list[UIMessageChunk] = []
        self.blocks.close(out)
        name, args = self._calls.get(call_id, (name, {}))
        out.extend(
            self._result(call_id, name, args, response, asked=asked, invalid=invalid, kept=kept)
        )
        return out

    def release(self, call_id: str, name: str, args: dict[str, Any]) -> list[UIMessageChunk]:
        """An approved client tool call: now the browser may run it (``onToolCall`` fires).
        Sent before any new step, so the client updates the part it already has."""
        if call_id not in self.known:
            return []
        self.waits = True
        is_dynamic = dynamic(self.policy, name)
        return [
            ToolInputAvailable(tool_call_id=call_id, tool_name=name, input=args, dynamic=is_dynamic)
        ]


class HeldCalls:
    """Over SSE, a step's later calls held until the next event says whether they ask (sans-I/O).

    The AI SDK's own server requests each approval right after its call. ADK records a step's
    calls in one event and their confirmation requests in the next, so the converter
    (:class:`~.events.EventConverter`) holds the chunks of a step's second and later calls until
    that next event: when it asks approvals, each request goes out right after its call; when it
    does not, the calls go out as they were.
    """

    def __init__(self) -> None:
        self.held: list[tuple[str, list[UIMessageChunk]]] = []
        """Each held call's id and its chunks, in call order (an app's data part sent
        meanwhile joins them with no id, :mod:`.data_parts`)."""

    def __bool__(self) -> bool:
        return bool(self.held)

    def hold(self, call_id: str, chunks: list[UIMessageChunk]) -> None:
        self.held.append((call_id, chunks))

    def release(self) -> list[UIMessageChunk]:
        held, self.held = self.held, []
        return [chunk for _, chunks in held for chunk in chunks]

    def with_approvals(self, event: Event, cards: ToolCards) -> list[UIMessageChunk] | None:
        """If ``event`` asks approvals for the step's calls: the held calls released, each
        followed by its request. ``None`` when it asks none."""
        asks = [c for c in event.get_function_calls() if c.name == CONFIRMATION_TOOL]
        if event.partial or not asks:
            return None
        requests: dict[str, list[UIMessageChunk]] = {}
        for ask in asks:
            chunks: list[UIMessageChunk] = []
            cards.call(ask, event, chunks)
            for chunk in chunks:
                if isinstance(chunk, ToolApprovalRequest):
                    requests.setdefault(chunk.tool_call_id, []).append(chunk)
        held, self.held = self.held, []
        held_ids = {call_id for call_id, _ in held}
        out: list[UIMessageChunk] = []
        for call_id in [c for c in requests if c not in held_ids]:
            out.extend(requests.pop(call_id))  # a call sent before the held ones
        for call_id, chunks in held:
            out.extend(chunks + requests.pop(call_id, []))
        for rest in requests.values():
            out.extend(rest)
        return out
