"""Human in the loop inside ADK's live tool pipeline: the plugin, and the only futures.

ADK 2.13 cannot confirm a tool in live mode, but it does run plugin tool callbacks there
(docs/internals/architecture.md#adk-facts). :class:`LiveToolGate` holds a gated call in
``before_tool_callback`` until the user decides (or a timeout denies it), then lets ADK run the
tool (approved) or answers the model with ADK's own rejection; a client tool's call waits for
the browser's result the same way. The results go through ADK's normal tool pipeline, so they
are persisted like any other.

The plugin finds the connection through the ``LiveRequestQueue`` ADK hands it: each connection
runs ``run_live`` with a :class:`LiveQueue` that carries its :class:`ToolWaits`. What a wait
means is the protocol machine's business (:mod:`.protocol`), asked through its methods
(:mod:`.waits`), never its fields; :class:`ToolWaits` owns only the futures and timeouts,
and hands every output to the connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_asgi.adk.private import answered_later, as_answer
from adk_asgi.convert.adk_values import approval_descriptor
from adk_asgi.convert.returned import is_wrapper
from adk_asgi.convert.safe_history import lost_result, readable
from adk_asgi.hitl.interrupts import REQUEST_INPUT
from adk_asgi.hitl.outcomes import EXPIRED as TIMED_OUT
from adk_asgi.hitl.outcomes import INPUT_MOVED_ON, MOVED_ON
from adk_asgi.hitl.pending import REJECTED, ToolCall, client_approval_id
from adk_asgi.hitl.tools import ClientTool
from adk_asgi.live import durable, node_tools
from adk_asgi.live.agent_callbacks import after_agent_callbacks, before_agent_callbacks
from adk_asgi.live.calls import UNANSWERED, WaitKind
from adk_asgi.live.outputs import Output
from adk_asgi.live.protocol import LiveProtocol
from adk_asgi.live.queue import LiveQueue
from adk_asgi.serving.as_returned import returns_its_own
from adk_asgi.serving.invalid_calls import InvalidCalls

logger = logging.getLogger("adk_asgi")

TAKEN: Final = {"error": "This call was answered in another request."}
"""What the model gets from a browser call whose result another request delivered first."""
_NO_ANSWER: Final = (TIMED_OUT, INPUT_MOVED_ON, MOVED_ON)
"""What a wait for the page's answer resolves to when none came (the constants themselves)."""


class ToolWaits:
    """The waits of one connection's tool calls: a future per call, with its timeout."""

    def __init__(
        self,
        protocol: LiveProtocol,
        carry_out: Callable[[list[Output]], None],
        *,
        approval_timeout: float,
        client_tool_timeout: float,
    ) -> None:
        self.protocol = protocol
        self.carry_out = carry_out
        self.approval_timeout = approval_timeout
        self.client_tool_timeout = client_tool_timeout
        self._futures: dict[str, asyncio.Future[Any]] = {}
        self._timed_out: set[str] = set()
        """Approvals whose wait ran out (recorded as such, not as the user's denial)."""
        self.claim: Callable[[str], Awaitable[bool]] | None = None
        """Claims an answer for the chat, once across workers (:mod:`adk_asgi.stores.claims`); set
        when the connection's session opens."""

    async def _taken(self, answer_id: str) -> bool:
        """Whether another request (a connection or an SSE request, on any worker) acted on
        ``answer_id`` first: this one must not."""
        if self.claim is None or await self.claim(answer_id):
            return False
        logger.warning("adk_asgi: %s was answered by another request; not acted on here", answer_id)
        return True

    def resolve(self, call_id: str, value: Any) -> None:
        """The protocol's answer to a waiting call (a ``Resolve`` output)."""
        future = self._futures.pop(call_id, None)
        if future is not None and not future.done():
            future.set_result(value)

    def cancel_all(self) -> None:
        """The connection is over: nothing waits any more."""
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()

    async def gate(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """``before_tool_callback``: hold the call until the user (or the browser) answers."""
        if not tool_context.function_call_id:
            return None
        if tool_context.tool_confirmation is not None:
            return None  # ADK runs a call confirmed in the stored session (live/durable.py)
        call = self._call_of(tool, args, tool_context)
        record = _Recorder(tool_context)
        asks = isinstance(tool, ClientTool) or tool.name == REQUEST_INPUT  # the user answers
        # a workflow run as a tool may stop for the user's answers
        workflow = tool if not asks and node_tools.runs_a_workflow(tool) else None
        runs = workflow is not None
        confirms = not (asks or runs) and await tool.check_require_confirmation(args, tool_context)
        if asks or runs or confirms is True:  # the agent's own callbacks first, as over SSE
            answered = await before_agent_callbacks(tool, args, tool_context)
            if answered is not None:
                return answered  # type: ignore[no-any-return]
        if asks:
            needs_approval = isinstance(tool, ClientTool) and tool.needs_approval(args)
            if needs_approval and not (await self._approved(call, record, None)).confirmed:
                return REJECTED
            result: dict[str, Any] = (await self.answer(call, record))[1]
            return as_answer(result)  # (the page's ``{}`` answers the call too)
        if workflow is not None:
            return await node_tools.run(workflow, args, tool_context, _Page(self, record))
        if confirms is True:
            decision = await self._approved(call, record, ToolConfirmation())
            if not decision.confirmed:
                return REJECTED
            tool_context.tool_confirmation = decision
        return None

    async def confirm(self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """A tool asked for confirmation itself (``tool_context.request_confirmation``).

        Over SSE ADK pauses the run and calls the tool again with the user's answer; its live
        flow cannot (it only ever refuses). So the user is asked here, in the tool pipeline,
        and the tool is called again with ``tool_confirmation`` set, as ADK would: the tool
        decides what approval (with the user's payload) and denial mean. Its result, as the
        tool returned it (``after_tool_callback`` makes the response ADK builds of it).
        """
        asked = tool_context.actions.requested_tool_confirmations.pop(
            tool_context.function_call_id or "", None
        )
        call = self._call_of(tool, args, tool_context)
        if asked is not None:
            self.protocol.tools.asked(call.id, approval_descriptor(asked.model_dump()))
        asked = asked or ToolConfirmation()
        tool_context.tool_confirmation = await self._approved(call, _Recorder(tool_context), asked)
        tool_context.actions.skip_summarization = False  # the tool's answer to it is the result
        return await tool.run_async(args=args, tool_context=tool_context)

    async def answer(self, call: ToolCall, record: _Recorder) -> tuple[bool, Any]:
        """Wait for the page's answer to ``call`` (a browser tool's result, the user's answer
        to a question): ``(True, answer)``, or ``(False, outcome)`` when none came (its wait
        ran out, or another request took it)."""
        early = self.protocol.tools.early_result(call.id)
        if early is not None:
            return True, early
        expires = time.time() + self.client_tool_timeout
        await record(durable.waiting_for_browser(call, expires))
        result = await self._wait(call, "result", self.client_tool_timeout)
        if await self._taken(call.id):
            return False, TAKEN
        return not any(result is none for none in _NO_ANSWER), result

    def _call_of(self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> ToolCall:
        call_id = tool_context.function_call_id
        assert call_id is not None
        return self.protocol.tools.call(call_id, tool.name, args, tool_context.invocation_id)

    async def _approved(
        self, call: ToolCall, record: _Recorder, asked: ToolConfirmation | None
    ) -> ToolConfirmation:
        """Wait for the user's decision on ``call``: a server tool's (``asked``: what ADK
        would ask over SSE) or a browser tool's; the decision, with the payload the user
        answered with (a server tool's; a browser tool's reason is recorded in the bridge's
        tags, as over SSE). The wait and the decision are recorded in the
        session as they happen, so the call outlives this connection (:mod:`.durable`)."""
        limit = self.approval_timeout
        expires = time.time() + limit
        if asked is None:
            await record(durable.waiting_for_browser(call, expires))
        else:
            await record(durable.waiting_for_confirmation(call, record.author, asked, expires))
        decision = await self._wait(call, "approval", limit)
        timed_out = call.id in self._timed_out
        self._timed_out.discard(call.id)
        if asked is None:  # (a browser tool's approval: no payload, as over SSE; its reason)
            payload, reason = None, self.protocol.tools.decision_reason(call.id)
        else:
            payload, reason = self.protocol.tools.confirmed_payload(call.id, asked.payload), None
        if await self._taken(client_approval_id(call.id)):
            self.carry_out(self.protocol.tools.decided(call, False))
            return ToolConfirmation(confirmed=False)  # decided (and recorded) by whoever took it
        approved = decision is True
        closed: durable.ClosedHow | None = None
        if timed_out:
            closed = "expired"
        elif decision == UNANSWERED:
            closed = "moved-on"
        self.carry_out(self.protocol.tools.decided(call, approved, closed=closed))
        confirmation = asked is not None
        await record(
            durable.decided(
                call,
                approved,
                confirmation=confirmation,
                closed=closed,
                payload=payload,
                reason=reason,
            )
        )
        return ToolConfirmation(confirmed=approved, payload=payload)

    async def _wait(self, call: ToolCall, kind: WaitKind, limit: float) -> Any:
        future = self._futures[call.id] = asyncio.get_running_loop().create_future()
        self.carry_out(self.protocol.tools.wait(call, kind))
        try:
            async with asyncio.timeout(limit):
                return await future
        except TimeoutError:
            self._futures.pop(call.id, None)
            if kind == "approval":
                self._timed_out.add(call.id)
            outcome, outputs = self.protocol.tools.timed_out(call.id)
            self.carry_out(outputs)
            return outcome


class _Page:
    """The questions a workflow run as a tool asks, answered on this connection as the
    ``request_input`` tool's are (:mod:`.node_tools`)."""

    def __init__(self, waits: ToolWaits, record: _Recorder) -> None:
        self.waits = waits
        self.record = record

    async def ask(self, question: types.FunctionCall) -> tuple[bool, Any]:
        assert question.id is not None
        invocation_id = self.record.context.invocation_id
        args = question.args or {}
        call = self.waits.protocol.tools.call(question.id, REQUEST_INPUT, args, invocation_id)
        return await self.waits.answer(call, self.record)

    def answered(self, call_id: str, answer: Any) -> None:
        self.waits.carry_out(self.waits.protocol.tools.tool_finished(call_id, answer))


class _Recorder:
    """Appends the bridge's records of a call to the session of the run that makes it."""

    def __init__(self, tool_context: ToolContext) -> None:
        self.context = tool_context.get_invocation_context()
        self.author = getattr(self.context.agent, "name", "") or "model"

    def step_of(self, call_id: str) -> list[str]:
        """The calls of the model event that made ``call_id`` (stored before its tools run)."""
        for event in reversed(self.context.session.events):
            calls = event.get_function_calls()
            if any(call.id == call_id for call in calls):
                return [call.id for call in calls if call.id]
        return []

    async def __call__(self, events: list[Event]) -> None:
        context = self.context
        for event in events:
            event.invocation_id = context.invocation_id
            await context.session_service.append_event(context.session, event)


def _as_json(result: Any) -> Any:
    """A tool's result as JSON carries it, as over SSE, where the session stores it so before
    the stream shows it: one that only pydantic makes JSON of as that JSON, still wrapped as ADK
    wraps a value that is not an object (a pydantic model reaches the model as ``{"result":
    {...}}``); one that is not JSON at all as its error (``convert/safe_history.py``). Shown
    raw, it ended the connection (the frame could not be encoded) and the model never got it."""
    value, reason = readable(result)
    if reason is not None:
        return {"error": lost_result(reason)}
    if isinstance(value, dict) and not isinstance(result, dict):
        # (a model's JSON: ADK wraps what the tool returned, not an object, as {"result": …})
        return {"result": value}
    return value


def _left_open(tool: BaseTool, result: Any) -> bool:
    """Whether ADK builds no response of ``result``: a tool it answers later returned a false
    value (it tests truth, not ``None``), so the call stays open for the app to answer."""
    return answered_later(tool) and not result


class LiveToolGate(BasePlugin):
    """Lends ADK's tool pipeline to the live connection that runs the invocation.

    Registered on every ``AdkApp``; outside a live connection of this package it does nothing.
    """

    def __init__(self, invalid: InvalidCalls | None = None) -> None:
        """``invalid``: the app's :class:`InvalidCalls`, registered before this plugin, which
        says which results are ADK's refusals of a call (shown as ``tool-input-error``)."""
        super().__init__(name="adk_asgi_live_tool_gate")
        self.invalid = invalid

    @staticmethod
    def _waits(context: InvocationContext) -> ToolWaits | None:
        queue = context.live_request_queue
        waits = queue.waits if isinstance(queue, LiveQueue) else None
        return waits if isinstance(waits, ToolWaits) else None

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        waits = self._waits(tool_context.get_invocation_context())
        return None if waits is None else await waits.gate(tool, tool_args, tool_context)

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        waits = self._waits(tool_context.get_invocation_context())
        if waits is None:
            return None
        call_id = tool_context.function_call_id
        replaced: dict[str, Any] | None = None
        asked = tool_context.actions.requested_tool_confirmations
        confirmed = bool(call_id) and call_id in asked and tool_context.tool_confirmation is None
        if confirmed:
            result = await waits.confirm(tool, tool_args, tool_context)
        if _left_open(tool, result):
            # once confirmed, the tool's first answer (the one that asked) must not stand: a
            # false ``{}`` tells ADK there is none yet
            replaced = {} if confirmed else None
        else:
            # shown and stored as the agent's callbacks make it (live/agent_callbacks.py); ADK
            # is answered even for ``None`` (as it stores it), or it runs them again
            result = await after_agent_callbacks(tool, tool_args, tool_context, result)
            result = _as_json(result)
            replaced = {"result": None} if result is None else result
            replaced = as_answer(replaced) if isinstance(replaced, dict) else replaced
        await self._finished(waits, tool, tool_context, result)
        return replaced

    async def answered_by_a_plugin(
        self, tool: BaseTool, tool_context: ToolContext, result: Any
    ) -> None:
        """An app's plugin answered the ``after_tool_callback`` before this one: ADK runs no
        later plugin nor the agent's callbacks, and ``result`` is the call's result
        (:mod:`.app_plugins`)."""
        waits = self._waits(tool_context.get_invocation_context())
        if waits is not None:
            await self._finished(waits, tool, tool_context, result)

    async def _finished(
        self, waits: ToolWaits, tool: BaseTool, tool_context: ToolContext, result: Any
    ) -> None:
        """The call's result, final: shown, and stored now if it must be (next to a wait)."""
        call_id = tool_context.function_call_id
        # (ADK stores a result that is not an object as ``{"result": ...}``: shown as stored)
        stored: dict[str, Any] | None = result if isinstance(result, dict) else {"result": result}
        if _left_open(tool, result):  # only the app answers it (server_answers.py)
            stored = None
        refused = self.invalid is not None and self.invalid.is_invalid(call_id)
        kept = stored is result and returns_its_own(tool) and is_wrapper(result)
        ran_by = None  # (the agent whose tool returned it: no result, nothing to keep)
        if call_id and stored is not None:  # (stored before it is shown: a reload shows it)
            record = _Recorder(tool_context)
            ran_by = record.author
            step = record.step_of(call_id)
            early = waits.protocol.tools.stored_result(
                call_id, record.author, stored, step, invalid=refused, kept=kept
            )
            if early is not None:
                await record([early])
        finished = waits.protocol.tools.tool_finished(
            call_id, stored, invalid=refused, kept=kept, ran_by=ran_by
        )
        waits.carry_out(finished)

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        waits = self._waits(invocation_context)
        return None if waits is None else waits.protocol.tag(event)
