"""The AI SDK's example pages against adk-asgi, with the real ai@6 and ai@7 clients over SSE
(``tests/e2e/example_pages_app.py`` under a real uvicorn, each client at the mount configured
for its version). Each test pins one gap those pages showed, on the whole chunk sequence of
each response (ids as placeholders) and on what the client built of it, which a reload shows
again:

* a tool's preliminary outputs are objects (``{state: 'loading'}``), not only text;
* a dynamic tool's preliminary output in an approval's continuation says ``dynamic: true``;
* the ``message_metadata`` hook is called at ``start`` (with the model), at each
  ``finish-step`` (a ``message-metadata`` chunk before it) and at ``finish``;
* a call the server's policy denied without asking is ``output-denied`` with its reason on
  ai@7, and the call's error with the reason on ai@6.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from adk_asgi.testing import parse_sse_chunks
from tests.e2e import example_pages_app as served
from tests.e2e.test_agent_shapes import STEP, normalized, run, said, text
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

SSE = pytest.mark.parametrize("sdk", [6, 7], ids=["sse-v6", "sse-v7"])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with uvicorn_server("tests.e2e.example_pages_app:app", ready_path="/v6/transport.js") as base:
        yield base


def drive(server: str, sdk: int, *steps: Any, **spec: Any) -> dict[str, Any]:
    report = run(server, f"/v{sdk}", ("sse", sdk), *steps, **spec)
    assert (report["status"], report["error"]) == ("ready", None), report
    assert report["historyStatus"] == 200
    assert report["history"] == report["messages"]
    return report


def responses(report: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Each response's chunks, ids as placeholders in order of appearance: ``<msg1>``,
    ``<call1>``, ``<appr1>`` (ADK's confirmation id; the bridge's is ``approval-<call1>``)."""
    bodies = [parse_sse_chunks(r["sse"]) for r in report["responses"] if r.get("sse")]
    names: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for chunk in (c for body in bodies for c in body):
        for key, kind in (("messageId", "msg"), ("toolCallId", "call"), ("approvalId", "appr")):
            value = chunk.get(key)
            if isinstance(value, str) and value not in names and not value.startswith("approval-"):
                counts[kind] += 1
                names[value] = f"<{kind}{counts[kind]}>"
    encoded = json.dumps(bodies)
    for value in sorted(names, key=len, reverse=True):
        encoded = encoded.replace(value, names[value])
    result: list[list[dict[str, Any]]] = json.loads(encoded)
    return result


def started(model: str = "scripted") -> dict[str, Any]:
    return {"type": "start", "messageId": "<msg1>", "messageMetadata": {"model": model}}


def step_metadata(reason: str, tokens: int) -> list[dict[str, Any]]:
    """What the hook adds as a step ends, then the step's end."""
    return [
        {"type": "message-metadata", "messageMetadata": {"steps": {reason: tokens}}},
        {"type": "finish-step"},
    ]


def finished(reason: str, tokens: int) -> dict[str, Any]:
    metadata = {"totalTokens": tokens, "finishReason": reason}
    return {"type": "finish", "finishReason": reason, "messageMetadata": metadata}


def answer(words: list[str]) -> list[dict[str, Any]]:
    """A text step of the scripted model (4 characters a delta)."""
    return [
        {"type": "start-step"},
        {"type": "text-start", "id": "<msg1>-txt1"},
        *({"type": "text-delta", "id": "<msg1>-txt1", "delta": w} for w in words),
        {"type": "text-end", "id": "<msg1>-txt1"},
    ]


def called(name: str, tool_input: Any, **how: Any) -> list[dict[str, Any]]:
    return [
        {"type": "tool-input-start", "toolCallId": "<call1>", "toolName": name, **how},
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": name,
            "input": tool_input,
            **how,
        },
    ]


FORECAST_CHUNKS = [
    started(),
    {"type": "start-step"},
    *called("get_forecast", {"city": "Paris"}, providerExecuted=True),
    {
        "type": "tool-output-available",
        "toolCallId": "<call1>",
        "output": served.LOADING,
        "preliminary": True,
    },
    {
        "type": "tool-output-available",
        "toolCallId": "<call1>",
        "output": served.HALF_WAY,
        "preliminary": True,
    },
    {"type": "tool-output-available", "toolCallId": "<call1>", "output": served.FORECAST},
    *step_metadata("tool-calls", 10),
    *answer(["It i", "s 20", " deg", "rees", "."]),
    *step_metadata("stop", 28),
    finished("stop", 38),
]


@SSE
def test_a_tools_preliminary_outputs_may_be_objects(server: str, sdk: int) -> None:
    report = drive(server, sdk, "weather")
    assert responses(report) == [FORECAST_CHUNKS]
    card = {
        "type": "tool-get_forecast",
        "toolCallId": "<call1>",
        "state": "output-available",
        "input": {"city": "Paris"},
        "output": served.FORECAST,
        "providerExecuted": True,
    }
    shown = normalized(report["messages"])
    del shown[1]["metadata"]  # (test_the_metadata_hook_…)
    assert shown == said("weather", STEP, card, STEP, text(served.FORECAST_SAID))


@SSE
def test_a_dynamic_tools_preliminary_output_says_dynamic_in_the_approval_continuation(
    server: str, sdk: int
) -> None:
    report = drive(server, sdk, "pay 500", approvals={"pay_remote": [True]})
    dynamic = {"dynamic": True}
    assert responses(report) == [
        [
            started(),
            {"type": "start-step"},
            *called("pay_remote", {"amount": 500}, **dynamic),
            {"type": "tool-approval-request", "approvalId": "<appr1>", "toolCallId": "<call1>"},
            *step_metadata("tool-calls", 10),
            finished("tool-calls", 10),
        ],
        [
            started(),
            {
                "type": "tool-output-available",
                "toolCallId": "<call1>",
                "output": served.PAYING,
                "dynamic": True,
                "preliminary": True,
            },
            {
                "type": "tool-output-available",
                "toolCallId": "<call1>",
                "output": {"paid": 500},
                "dynamic": True,
            },
            *answer(["Paid", "."]),
            *step_metadata("stop", 14),
            finished("stop", 14),
        ],
    ]
    part = normalized(report["messages"])[1]["parts"][1]
    assert (part["type"], part["toolName"], part["state"]) == (
        "dynamic-tool",
        "pay_remote",
        "output-available",
    )


@SSE
def test_the_metadata_hook_is_called_at_start_with_the_model_each_finish_step_and_finish(
    server: str, sdk: int
) -> None:
    """The chunks are the forecast's (test_a_tools_preliminary_outputs_may_be_objects): the
    start's ``model``, a ``message-metadata`` before each ``finish-step``; the client merges
    them all, and history rebuilds the same."""
    report = drive(server, sdk, "weather")
    assert responses(report) == [FORECAST_CHUNKS]
    assert report["messages"][1]["metadata"] == {
        "model": "scripted",
        "steps": {"tool-calls": 10, "stop": 28},
        "totalTokens": 38,
        "finishReason": "stop",
    }


@SSE
def test_a_call_the_policy_denied_is_output_denied_with_its_reason_on_ai7_an_error_on_ai6(
    server: str, sdk: int
) -> None:
    report = drive(server, sdk, "delete notes.txt")
    reason = served.DENIED_REASON
    shown_denial: list[dict[str, Any]] = (
        [
            {
                "type": "tool-approval-request",
                "approvalId": "approval-<call1>",
                "toolCallId": "<call1>",
                "isAutomatic": True,
            },
            {
                "type": "tool-approval-response",
                "approvalId": "approval-<call1>",
                "approved": False,
                "reason": reason,
            },
            {"type": "tool-output-denied", "toolCallId": "<call1>"},
        ]
        if sdk == 7
        else [{"type": "tool-output-error", "toolCallId": "<call1>", "errorText": reason}]
    )
    assert responses(report) == [
        [
            started(),
            {"type": "start-step"},
            *called("delete_file", {"path": "notes.txt"}, providerExecuted=True),
            *shown_denial,
            *step_metadata("tool-calls", 12),
            *answer(["I ma", "y no", "t de", "lete", " it."]),
            *step_metadata("stop", 39),
            finished("stop", 51),
        ]
    ]
    card: dict[str, Any] = {
        "type": "tool-delete_file",
        "toolCallId": "<call1>",
        "input": {"path": "notes.txt"},
        "providerExecuted": True,
    }
    if sdk == 7:
        approval = {"id": "approval-<call1>", "isAutomatic": True, "approved": False}
        card |= {"state": "output-denied", "approval": approval | {"reason": reason}}
    else:
        card |= {"state": "output-error", "errorText": reason}
    shown = normalized(report["messages"])
    del shown[1]["metadata"]
    assert shown == said("delete notes.txt", STEP, card, STEP, text(served.NOT_DELETED))
