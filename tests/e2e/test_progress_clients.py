"""A tool's progress and a policy's approvals, driven by the real AI SDK clients with the stock
helpers against ``tests/e2e/progress_app.py`` under a real uvicorn (each client at the mount
configured for its version).

* Progress (SSE, ai@6 and ai@7): mid-answer, the real client's part is ``output-available``
  with ``preliminary: true`` and the progress message as its output (read by the SDK's own
  ``readUIMessageStream`` from the body cut after that chunk); at the end it holds the result,
  and a reload shows the same. Live mode: ADK answers a generator tool's call at once with a
  pending status, which the card shows; its messages are not shown.
* A call ``require_confirmation``'s function let through: ai@7 shows it approved automatically
  (``approval: {id, isAutomatic: true, approved: true}``), over SSE and live; ai@6 parses every
  response and shows the call and its result only; the reload shows what each client showed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import progress_app as served
from tests.e2e.node_client import validate_sse
from tests.e2e.test_agent_shapes import STEP, normalized, run, said, text
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

CLIENTS = [("sse", 6), ("sse", 7), ("ws", 7), ("ws-js", 6), ("ws-js", 7)]
ALL = pytest.mark.parametrize("client", CLIENTS, ids=[f"{t}-v{v}" for t, v in CLIENTS])
SSE = pytest.mark.parametrize("client", CLIENTS[:2], ids=["sse-v6", "sse-v7"])
LIVE = pytest.mark.parametrize("client", CLIENTS[2:], ids=[f"{t}-v{v}" for t, v in CLIENTS[2:]])
PENDING = {"status": "The function is running asynchronously and the results are pending."}
"""ADK's answer to a streaming tool's call in live mode (``_process_function_live_helper``)."""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with uvicorn_server("tests.e2e.progress_app:app", ready_path="/v6/transport.js") as base:
        yield base


def drive(server: str, client: tuple[str, int], *steps: Any, **spec: Any) -> dict[str, Any]:
    """One chat at the mount of the client's version (the served transport told which, as
    docs/live.md says); its reload must show what it showed."""
    transport, sdk = client
    if transport == "ws-js":
        spec["wsTransportOptions"] = {"sdk": sdk}
    report = run(server, f"/v{sdk}", client, *steps, **spec)
    assert report["status"] == "ready" and report["error"] is None, report
    assert report["historyStatus"] == 200
    assert report["history"] == report["messages"]
    return report


FORECAST_INPUT = {"city": "Paris"}


@SSE
def test_progress_is_shown_on_the_card_until_the_result(
    server: str, client: tuple[str, int]
) -> None:
    report = drive(server, client, "weather")
    card = {
        "type": "tool-get_forecast",
        "toolCallId": "<call1>",
        "state": "output-available",
        "input": FORECAST_INPUT,
        "output": served.FORECAST,
        "providerExecuted": True,
    }
    assert normalized(report["messages"]) == said(
        "weather", STEP, card, STEP, text(served.FORECAST_SAID)
    )
    assert len(report["requests"]) == 1

    # the page mid-answer: the body cut after each progress chunk, read by the real client
    body: str = report["responses"][0]["sse"]
    events = body.split("\n\n")
    cuts = [i for i, e in enumerate(events) if '"preliminary":true' in e.replace(" ", "")]
    assert len(cuts) == 2
    prefixes = ["\n\n".join(events[: i + 1]) + "\n\n" for i in cuts]
    seen = []
    for result in validate_sse(prefixes, client[1]):
        assert result["ok"], result
        part = result["message"]["parts"][1]
        seen.append((part["state"], part.get("preliminary"), part["output"]))
    assert seen == [
        ("output-available", True, served.FETCHING),
        ("output-available", True, served.ALMOST),
    ]


@LIVE
def test_live_a_tool_reporting_progress_shows_adks_pending_answer(
    server: str, client: tuple[str, int]
) -> None:
    """ADK runs an async generator live as a streaming tool: its call is answered at once, its
    yields go to the model only. Its messages come after that answer: shown neither as progress
    nor as text (they were text the reload did not show)."""
    report = drive(server, client, "weather")
    card = {
        "type": "tool-get_forecast",
        "toolCallId": "<call1>",
        "state": "output-available",
        "input": FORECAST_INPUT,
        "output": PENDING,
        "providerExecuted": True,
    }
    assert normalized(report["messages"]) == said(
        "weather", STEP, card, STEP, text(served.FORECAST_SAID)
    )


def paid(amount: int, sdk: int, **approval: Any) -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": "tool-pay",
        "toolCallId": approval.pop("call"),
        "state": "output-available",
        "input": {"amount": amount},
        "output": {"paid": amount},
    }
    if approval:
        part["approval"] = approval
    return part


@ALL
def test_a_payment_the_policy_let_through(server: str, client: tuple[str, int]) -> None:
    sdk = client[1]
    report = drive(server, client, "pay 5")
    automatic = {"id": "approval-<call1>", "isAutomatic": True, "approved": True}
    shown = paid(5, sdk, call="<call1>", **(automatic if sdk == 7 else {}))
    assert normalized(report["messages"]) == said("pay 5", STEP, shown, STEP, text(served.PAID))
    assert len(report["requests"]) == 1


@ALL
def test_a_payment_let_through_next_to_one_the_user_approves(
    server: str, client: tuple[str, int]
) -> None:
    sdk = client[1]
    report = drive(server, client, "pay 5 and 500", approvals={"pay": [True]})
    automatic = {"id": "approval-<call1>", "isAutomatic": True, "approved": True}
    first = paid(5, sdk, call="<call1>", **(automatic if sdk == 7 else {}))
    messages = normalized(report["messages"])
    second = messages[1]["parts"][2]
    approval_id = second["approval"]["id"]  # ADK's confirmation id (SSE), the bridge's (live)
    assert second == paid(500, sdk, call="<call2>", id=approval_id, approved=True)
    assert messages == said("pay 5 and 500", STEP, first, second, STEP, text(served.PAID))
    assert len(report["requests"]) == 2
    assert json.dumps(report["requests"][1]["messages"][-1]).count("isAutomatic") == (sdk == 7)
