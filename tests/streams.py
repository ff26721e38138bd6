"""Expected UI message streams, built once: small builders for the steps a stream is made of,
and the demo's weather answer that several suites expect whole.

Every builder returns plain chunk dicts, so a test still compares the whole sequence exactly
(``assert chunks == weather_answer(...)``). Ids are arguments: ``normalize_ids`` placeholders
(``<msg1>``, ``<call1>``, ``<block1>``, the defaults) or the literal ids of an app with
counters (``msg1``, ``call_1``, ``msg1-txt1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Chunk = dict[str, Any]

PARIS_WEATHER = {"city": "Paris", "forecast": "windy", "temperature_c": 19}
"""What the demo's ``get_weather`` returns for Paris."""
WEATHER_SAID = (
    'Here you go: get_weather: {"city": "Paris", "forecast": "windy", "temperature_c": 19}.'
)
"""The demo model's closing sentence after it: the tool's result, quoted."""


def chunked(text: str, size: int) -> list[str]:
    """``text`` in the deltas a scripted model of ``chunk_size`` ``size`` streams it in."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def text_step(block: str, deltas: Sequence[str]) -> list[Chunk]:
    """One step of model text: its block ``block`` streamed as ``deltas`` (none: the deltas
    left out of the comparison by the caller)."""
    return [
        {"type": "start-step"},
        {"type": "text-start", "id": block},
        *({"type": "text-delta", "id": block, "delta": delta} for delta in deltas),
        {"type": "text-end", "id": block},
        {"type": "finish-step"},
    ]


def server_tool_step(call: str, tool: str, tool_input: Any, output: Any) -> list[Chunk]:
    """One step in which the server ran ``tool`` (``providerExecuted``) and got ``output``."""
    return [
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": call,
            "toolName": tool,
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": call,
            "toolName": tool,
            "input": tool_input,
            "providerExecuted": True,
        },
        {"type": "tool-output-available", "toolCallId": call, "output": output},
        {"type": "finish-step"},
    ]


def weather_answer(
    message: str = "<msg1>",
    call: str = "<call1>",
    block: str = "<block1>",
    *,
    output: Any = PARIS_WEATHER,
    deltas: Sequence[str] = (WEATHER_SAID,),
) -> list[Chunk]:
    """The demo agent's whole answer to "weather in Paris": ``get_weather`` run by the server
    (returning ``output``), then :data:`WEATHER_SAID` in ``deltas`` (one delta by default); an
    agent of another ``get_weather`` passes its own ``output`` and ``deltas``."""
    return [
        {"type": "start", "messageId": message},
        *server_tool_step(call, "get_weather", {"city": "Paris"}, output),
        *text_step(block, deltas),
        {"type": "finish", "finishReason": "stop"},
    ]


PAY_ALICE = {"amount": 5, "recipient": "alice", "currency": "USD"}
"""The demo model's payment for "pay 5 to alice"."""
SENT_ALICE = {"status": "sent", **PAY_ALICE}
"""What the demo's ``process_payment`` returns for it, once approved."""
PAID_ALICE_SAID = (
    'Here you go: process_payment: {"amount": 5, "currency": "USD", "recipient": "alice",'
    ' "status": "sent"}.'
)
"""The demo model's closing sentence after that payment: the tool's result, quoted."""


def approval_asked(
    tool: str,
    tool_input: Any,
    message: str = "<msg1>",
    call: str = "<call1>",
    approval: str = "<approval1>",
) -> list[Chunk]:
    """A whole response that calls ``tool`` and stops for the user's approval (a tool with
    ``require_confirmation``): the step with the call and the request, ``tool-calls``."""
    return [
        {"type": "start", "messageId": message},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": call, "toolName": tool},
        {"type": "tool-input-available", "toolCallId": call, "toolName": tool, "input": tool_input},
        {"type": "tool-approval-request", "approvalId": approval, "toolCallId": call},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
