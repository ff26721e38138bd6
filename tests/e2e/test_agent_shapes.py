"""Every agent shape the bridge serves, driven by the real AI SDK clients with the stock
helpers against ``tests/e2e/shapes_app.py`` under a real uvicorn: over SSE
(``DefaultChatTransport``, ai@6 and ai@7) and over the live WebSocket (the stock ai@7
``WebSocketChatTransport``, and the served ``transport.js`` under ai@6 and ai@7).

Each test asserts the client's final messages whole (ids replaced by placeholders), the number
of requests, that every response passes the SDK's own parser and state machine, and what a
reload (``GET /chat/{id}/messages``) shows against what the client showed.

ADK runs neither a ``ParallelAgent`` nor a ``LoopAgent`` nor a workflow live, and ends a live
``SequentialAgent`` once its last sub-agent is done: the live tests of those shapes pin what the
client is shown then (the bridge refuses a ``ParallelAgent`` tree and a workflow at the
handshake). Where a reload does not show what the client showed, the test pins the difference
(marked "differs"), so it fails once the two agree.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.node_client import drive_chat, validate_sse
from tests.e2e.test_scenarios import live_bodies
from tests.servers import uvicorn_server

pytestmark = pytest.mark.e2e

CLIENTS = [("sse", 6), ("sse", 7), ("ws", 7), ("ws-js", 6), ("ws-js", 7)]
ALL = pytest.mark.parametrize("client", CLIENTS, ids=[f"{t}-v{v}" for t, v in CLIENTS])
SSE = pytest.mark.parametrize("client", CLIENTS[:2], ids=["sse-v6", "sse-v7"])
LIVE = pytest.mark.parametrize("client", CLIENTS[2:], ids=[f"{t}-v{v}" for t, v in CLIENTS[2:]])

# what the scripted models of shapes_app.py say
ALPHA = "Alpha speaks here."
BRAVO = "Bravo answers too."
FIRST = "First, this."
SECOND = "Then that."
PASSING = "Passing you on."
BILLING = "Billing here."
NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
NOT_LIVE = "An error occurred."  # ADK's NotImplementedError, worded as any failure
MASKED = "An error occurred."  # any failure, as the default ``on_error`` words it

IDLE_MS = 100
"""How long a chat must stay ready and quiet for a step to be over (the driver's default is
300 ms): the stock helpers send a continuation as soon as a response ends, so none is missed."""


@pytest.fixture(scope="session")
def shapes_server() -> Iterator[str]:
    """tests/e2e/shapes_app.py under a real uvicorn, shared by the whole session."""
    with uvicorn_server("tests.e2e.shapes_app:app", ready_path="/__runs") as base:
        yield base


def run(
    server: str, prefix: str, client: tuple[str, int], *steps: Any, **spec: Any
) -> dict[str, Any]:
    """Drive one chat of a fresh browser at the ``AdkApp`` mounted at ``prefix``; every whole
    response is checked by the SDK's own parser and state machine.

    The report gains ``chatId``, ``cookie``, ``history`` (``GET /chat/{id}/messages`` as that
    browser: the JSON body) and ``historyStatus``."""
    transport, sdk = client
    cookie = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    chat_id = f"chat-{secrets.token_hex(4)}"
    ws_base = server.replace("http", "ws", 1)
    report = drive_chat(
        {
            "transport": transport,
            "api": f"{server}{prefix}/chat",
            "wsUrl": f"{ws_base}{prefix}/live",
            "transportJsUrl": f"{server}{prefix}/transport.js",
            "chatId": chat_id,
            "headers": {"cookie": cookie},
            "steps": [step if isinstance(step, dict) else {"send": step} for step in steps],
            "idleMs": IDLE_MS,
            **spec,
        },
        sdk,
    )
    assert not report["timeout"] and not report["loop"], report
    if transport == "sse":
        answered = [i for i, r in enumerate(report["responses"]) if r["status"] == 200]
        bodies = [report["responses"][i]["sse"] for i in answered]
    else:
        answered = list(range(len(report["requests"])))
        bodies = live_bodies(report)
    continued = []
    for index in answered:
        last = report["requests"][index]["messages"][-1]
        continued.append(last if last["role"] == "assistant" else None)
    for result in validate_sse(bodies, sdk, messages=continued) if bodies else []:
        assert result["ok"], result
    response = httpx.get(
        f"{server}{prefix}/chat/{chat_id}/messages", headers={"cookie": cookie}, timeout=10
    )
    report.update(
        chatId=chat_id, cookie=cookie, history=response.json(), historyStatus=response.status_code
    )
    return report


def outcome(report: dict[str, Any]) -> tuple[str, str | None, int]:
    return report["status"], report["error"], len(report["requests"])


def normalized(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with server- and client-made ids replaced by placeholders, in order of
    appearance: ``<msg1>`` (message ids), ``<call1>`` (tool call ids, hence approval ids equal
    to them), ``<interrupt1>`` (a workflow's interrupt ids)."""
    found: list[tuple[str, str]] = []
    for message in messages:
        found.append(("msg", message["id"]))
        for part in message["parts"]:
            if "toolCallId" in part:
                found.append(("call", part["toolCallId"]))
            if isinstance(part.get("input"), dict) and "interruptId" in part["input"]:
                found.append(("interrupt", part["input"]["interruptId"]))
    names: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for kind, value in found:
        if value not in names:
            counts[kind] += 1
            names[value] = f"<{kind}{counts[kind]}>"
    text = json.dumps(messages)
    for value in sorted(names, key=len, reverse=True):  # an interrupt id starts its call's id
        text = text.replace(json.dumps(value)[1:-1], names[value])
    result: list[dict[str, Any]] = json.loads(text)
    return result


def said(user: str, *parts: dict[str, Any]) -> list[dict[str, Any]]:
    """A user text and the assistant message answering it, normalized."""
    return [
        {"id": "<msg1>", "role": "user", "parts": [{"type": "text", "text": user}]},
        {"id": "<msg2>", "role": "assistant", "parts": list(parts)},
    ]


STEP = {"type": "step-start"}


def by(author: str) -> dict[str, Any]:
    return {"adk": {"author": author}}


def text(words: str, author: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "text", "text": words, "state": "done"}
    if author is not None:
        part["providerMetadata"] = by(author)
    return part


RUN_UNASKED = {"task_completed", "finish", "transfer_to_agent", "expert", "greeter"}
"""The server's tools that ask nothing of the page: announced ``providerExecuted``."""


def tool(
    name: str, call: str, tool_input: Any, output: Any, author: str | None = None
) -> dict[str, Any]:
    part = {
        "type": f"tool-{name}",
        "toolCallId": call,
        "state": "output-available",
        "input": tool_input,
        "output": output,
    }
    if name in RUN_UNASKED:
        part["providerExecuted"] = True
    if author is not None:
        part["callProviderMetadata"] = by(author)
    return part


def error(words: str) -> dict[str, Any]:
    return {"type": "data-error", "id": "<msg2>-error", "data": {"errorText": words}}


def pay_runs(server: str, report: dict[str, Any]) -> int:
    """How many times the confirmed ``pay`` node ran for the report's chat."""
    response = httpx.get(f"{server}/__runs", timeout=10)
    assert response.status_code == 200, response.text
    runs: int = response.json().get(report["chatId"], 0)
    return runs


# --- ParallelAgent ------------------------------------------------------------------------


@SSE
def test_parallel_agent(shapes_server: str, client: tuple[str, int]) -> None:
    report = run(shapes_server, "/parallel", client, "go")
    assert outcome(report) == ("ready", None, 1)
    assert normalized(report["messages"]) == said(
        "go", STEP, text(ALPHA, "alpha"), STEP, text(BRAVO, "bravo")
    )
    assert report["history"] == report["messages"]


# --- SequentialAgent ----------------------------------------------------------------------


@SSE
def test_sequential_agent(shapes_server: str, client: tuple[str, int]) -> None:
    report = run(shapes_server, "/sequential", client, "go")
    assert outcome(report) == ("ready", None, 1)
    assert normalized(report["messages"]) == said(
        "go", STEP, text(FIRST, "first"), STEP, text(SECOND, "second")
    )
    assert report["history"] == report["messages"]


COMPLETED = "Task completion signaled."


@LIVE
def test_sequential_agent_live(shapes_server: str, client: tuple[str, int]) -> None:
    """Live, ADK moves to the next sub-agent when one calls ``task_completed`` (a tool it adds
    for that); when the last one does, the sequence and the live session end: the answer ends
    as any other and the socket closes normally (1000). It ends on ``task_completed``'s
    output, which the stock helper does not take for a browser tool's (``providerExecuted``),
    so the finished answer is not sent again."""
    report = run(shapes_server, "/sequential", client, "go")
    assert outcome(report) == ("ready", None, 1)
    assert [s["closeCode"] for s in report["sockets"]] == [1000]
    completed = COMPLETED  # (ADK stores it as {"result": …}: shown as the tool returned it)
    assert normalized(report["messages"]) == said(
        "go",
        STEP,
        text(FIRST, "first"),
        tool("task_completed", "<call1>", {}, completed, "first"),
        STEP,
        text(SECOND, "second"),
        tool("task_completed", "<call2>", {}, completed, "second"),
    )
    assert report["history"] == report["messages"]


# --- LoopAgent ----------------------------------------------------------------------------


@SSE
def test_loop_agent(shapes_server: str, client: tuple[str, int]) -> None:
    """The writer drafts twice, then escalates (``finish``): the loop ends after its turn."""
    report = run(shapes_server, "/loop", client, "go")
    assert outcome(report) == ("ready", None, 1)
    assert normalized(report["messages"]) == said(
        "go",
        STEP,
        text("Draft one.", "writer"),
        STEP,
        text("Draft two.", "writer"),
        tool("finish", "<call1>", {}, {"status": "done"}, "writer"),
        STEP,
        text("Done.", "writer"),
    )
    assert report["history"] == report["messages"]


# --- transfer_to_agent --------------------------------------------------------------------


@ALL
def test_transfer(shapes_server: str, client: tuple[str, int]) -> None:
    report = run(shapes_server, "/transfer", client, "go")
    assert outcome(report) == ("ready", None, 1)
    assert normalized(report["messages"]) == said(
        "go",
        STEP,
        text(PASSING, "front"),
        tool(
            "transfer_to_agent",
            "<call1>",
            {"agent_name": "billing"},
            {"transferredTo": "billing"},
            "front",
        ),
        STEP,
        text(BILLING, "billing"),
    )
    assert report["history"] == report["messages"]


# --- AgentTool ----------------------------------------------------------------------------


@ALL
def test_agent_tool(shapes_server: str, client: tuple[str, int]) -> None:
    """An agent called as a tool: its answer is the tool's result, its text as the tool
    returned it (ADK stores it as ``{"result": ...}``)."""
    report = run(shapes_server, "/agent-tool", client, "go")
    assert outcome(report) == ("ready", None, 1)
    result = "Paris."
    call = {"request": "capital of France?"}
    assert normalized(report["messages"]) == said(
        "go", STEP, tool("expert", "<call1>", call, result), STEP, text("It is Paris.")
    )
    assert report["history"] == report["messages"]


# --- the request_input tool of an LlmAgent ------------------------------------------------


@ALL
def test_request_input_tool(shapes_server: str, client: tuple[str, int]) -> None:
    """The model asks the user with ADK's ``request_input`` tool; the page answers with the
    stock ``addToolOutput``, the stock ``lastAssistantMessageIsCompleteWithToolCalls`` sends
    it, and the model reads it as the tool's result."""
    report = run(
        shapes_server,
        "/request-input",
        client,
        "book",
        {"addToolOutput": {"tool": "adk_request_input", "output": "Paris"}},
        sendAutomaticallyWhen="toolCalls",
    )
    assert outcome(report) == ("ready", None, 2)
    asked = {"message": "Which city?", "response_schema": {"type": "string"}}
    assert normalized(report["messages"]) == said(
        "book",
        STEP,
        tool("adk_request_input", "<call1>", asked, "Paris"),
        STEP,
        text("Booked for Paris."),
    )
    assert report["history"] == report["messages"]


# --- Workflow: RequestInput ---------------------------------------------------------------


@SSE
def test_workflow_request_input(shapes_server: str, client: tuple[str, int]) -> None:
    """The question is answered with the stock ``addToolOutput``; the stock
    ``lastAssistantMessageIsCompleteWithToolCalls`` sends it, and the workflow goes on."""
    report = run(
        shapes_server,
        "/workflow-input",
        client,
        "go",
        {"addToolOutput": {"tool": "adk_request_input", "output": {"name": "Bob"}}},
        sendAutomaticallyWhen="toolCalls",
    )
    assert outcome(report) == ("ready", None, 2)
    asked = {
        "interruptId": "<interrupt1>",
        "payload": None,
        "message": "What is your name?",
        "response_schema": NAME_SCHEMA,
    }
    assert normalized(report["messages"]) == said(
        "go",
        STEP,
        tool("adk_request_input", "<call1>", asked, {"name": "Bob"}),
        STEP,
        text("Hello Bob"),
    )
    part = report["messages"][1]["parts"][1]
    assert part["toolCallId"].startswith(part["input"]["interruptId"] + "~")
    # the answer went back as the client's own continuation of the message
    sent = report["requests"][1]["messages"][-1]["parts"][1]
    assert (sent["state"], sent["output"]) == ("output-available", {"name": "Bob"})
    assert report["history"] == report["messages"]


# --- a workflow used as a tool, whose workflow asks the user --------------------------------


@ALL
def test_workflow_tool_request_input(shapes_server: str, client: tuple[str, int]) -> None:
    """The agent calls the workflow ``greeter`` as a tool; its ``RequestInput`` is answered
    with the stock ``addToolOutput``, the stock ``lastAssistantMessageIsCompleteWithToolCalls``
    sends it (the tool's own part, the server's, waits meanwhile), the workflow resumes, and
    the tool's part ends with its output. The question has a step of its own over SSE and live;
    live mode keeps ADK's ids."""
    report = run(
        shapes_server,
        "/workflow-tool",
        client,
        "hi",
        {"addToolOutput": {"tool": "adk_request_input", "output": {"name": "Bob"}}},
        sendAutomaticallyWhen="toolCalls",
    )
    assert outcome(report) == ("ready", None, 2)
    sse = client[0] == "sse"
    asked = {
        "interruptId": "<interrupt1>" if sse else "<call2>",
        "payload": None,
        "message": "What is your name?",
        "response_schema": NAME_SCHEMA,
    }
    greeter = tool("greeter", "<call1>", {"reason": "a visit"}, "Hello Bob")
    question = tool("adk_request_input", "<call2>", asked, {"name": "Bob"})
    assert normalized(report["messages"]) == said(
        "hi",
        STEP,
        greeter,
        STEP,
        question,
        STEP,
        text("The greeter said: Hello Bob."),
    )
    if sse:
        part = report["messages"][1]["parts"][3]
        assert part["toolCallId"].startswith(part["input"]["interruptId"] + "~")
    # the answer went back as the client's own continuation, the tool's part still waiting
    sent = report["requests"][1]["messages"][-1]["parts"]
    assert [(p.get("type"), p.get("state")) for p in sent if "toolCallId" in p] == [
        ("tool-greeter", "input-available"),
        ("tool-adk_request_input", "output-available"),
    ]
    assert report["history"] == report["messages"]


# --- Workflow: a node that requires confirmation ------------------------------------------


@SSE
@pytest.mark.parametrize("approved", [True, False], ids=["approved", "denied"])
def test_workflow_node_confirmation(
    shapes_server: str, client: tuple[str, int], approved: bool
) -> None:
    """Answered with the stock ``addToolApprovalResponse``; the stock
    ``lastAssistantMessageIsCompleteWithApprovalResponses`` sends it. Approved, the node runs
    once and its output is the part's; denied, it never runs."""
    report = run(
        shapes_server,
        "/workflow-confirm",
        client,
        "pay",
        {"approve": {"tool": "pay", "approved": approved}},
        sendAutomaticallyWhen="approvals",
    )
    assert outcome(report) == ("ready", None, 2)
    part: dict[str, Any] = {
        "type": "tool-pay",
        "toolCallId": "<call1>",
        "input": {"node_input": {"amount": 30}},
        "approval": {"id": "<call1>", "approved": approved},
    }
    if approved:  # its output is the card's, and (the last node's) the workflow's answer
        part.update(state="output-available", output="paid 30")
        assert normalized(report["messages"]) == said("pay", STEP, part, STEP, text("paid 30"))
    else:
        part.update(state="output-denied")
        assert normalized(report["messages"]) == said("pay", STEP, part)
    assert pay_runs(shapes_server, report) == (1 if approved else 0)
    assert report["history"] == report["messages"]


@SSE
def test_workflow_node_confirmation_under_the_or_helper(
    shapes_server: str, client: tuple[str, int]
) -> None:
    """Under both stock helpers (OR), as an app answering questions and approvals uses them:
    the answer does not end on the node's card (the workflow's answer follows it), so the
    stock ``lastAssistantMessageIsCompleteWithToolCalls`` does not send the finished message
    again (it once did, and got a 409 the chat showed as an error)."""
    report = run(
        shapes_server,
        "/workflow-confirm",
        client,
        "pay",
        {"approve": {"tool": "pay", "approved": True}},
    )
    assert outcome(report) == ("ready", None, 2)
    assert [r["status"] for r in report["responses"]] == [200, 200]
    assert normalized(report["messages"])[1]["parts"][1]["output"] == "paid 30"
    assert pay_runs(shapes_server, report) == 1
    assert report["history"] == report["messages"]


@ALL
def test_an_approved_tool_that_raises(shapes_server: str, client: tuple[str, int]) -> None:
    """``/refund``: approved with the stock ``addToolApprovalResponse`` and sent by the stock
    ``lastAssistantMessageIsCompleteWithApprovalResponses``, the tool runs once and raises:
    the real client's part ends in ``output-error`` with the error it is shown, its approval
    kept — and history shows the same (the stream left it ``approval-responded`` and history
    ``input-available``)."""
    report = run(
        shapes_server,
        "/refund",
        client,
        "refund",
        {"approve": {"tool": "refund", "approved": True}},
        sendAutomaticallyWhen="approvals",
    )
    assert outcome(report) == ("error", MASKED, 2)
    messages = normalized(report["messages"])
    approval = messages[1]["parts"][1].pop("approval")
    assert approval["approved"] is True
    failed = {
        "type": "tool-refund",
        "toolCallId": "<call1>",
        "state": "output-error",
        "input": {"amount": 30},
        "errorText": MASKED,
    }
    assert messages == said("refund", STEP, failed, error(MASKED))
    assert pay_runs(shapes_server, report) == 1
    assert report["history"] == report["messages"]


# --- what ADK cannot run live is refused at the handshake ---------------------------------

CANNOT_RUN_LIVE = {
    "/parallel": "'both' is a tree with the ParallelAgent 'both', which ADK cannot run live",
    "/loop": "'rounds' is a tree with the LoopAgent 'rounds', which ADK cannot run live",
    "/workflow-input": "'asking' is a workflow, which ADK cannot run live",
}


@LIVE
@pytest.mark.parametrize("prefix", list(CANNOT_RUN_LIVE), ids=["parallel", "loop", "workflow"])
def test_refused_live(shapes_server: str, client: tuple[str, int], prefix: str) -> None:
    """A tree with a ``ParallelAgent`` or a ``LoopAgent`` (ADK raises ``NotImplementedError``)
    and a workflow
    (ADK runs it once through, then ends the session): the handshake is refused (400, its
    reason in a JSON body, which a client is not shown); the client only learns that the
    connection failed, and nothing was stored."""
    report = run(shapes_server, prefix, client, "go")
    worded = "WebSocket chat" if client[0] == "ws" else "Live chat"
    assert outcome(report) == ("error", f"{worded} network connection failed.", 0)
    [socket] = report["sockets"]
    assert (socket["opened"], socket["error"]) == (False, "Error: Unexpected server response: 400")
    assert normalized(report["messages"]) == [
        {"id": "<msg1>", "role": "user", "parts": [{"type": "text", "text": "go"}]}
    ]
    assert (report["historyStatus"], report["history"]) == (
        404,
        {"error": "this chat does not exist"},
    )
    handshake = httpx.get(
        f"{shapes_server}{prefix}/live",
        headers={
            "connection": "Upgrade",
            "upgrade": "websocket",
            "sec-websocket-version": "13",
            "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
            "cookie": report["cookie"],
        },
        timeout=10,
    )
    reason = f"{CANNOT_RUN_LIVE[prefix]}: use POST /chat, or give AdkApp a live_agent"
    assert (handshake.status_code, handshake.json()) == (400, {"error": reason})


# --- dynamic tools (a toolset's, and a browser tool named in dynamic_tools) ----------------


@ALL
def test_dynamic_tools_approved_and_answered(shapes_server: str, client: tuple[str, int]) -> None:
    """``/dynamic``: a toolset's tools and a browser tool are ``dynamic-tool`` parts; the page
    approves the toolset's ``order_item`` with the stock ``addToolApprovalResponse`` and answers
    the browser's ``locate`` with ``addToolOutput`` (an object of ADK's wrapper shape, shown as
    the page sent it), and the stock helpers send each answer. ``search_catalog``'s list is
    shown as the list. History shows what the client showed."""
    report = run(
        shapes_server,
        "/dynamic",
        client,
        "shop",
        approvals={"order_item": [True]},
        clientTools={"locate": {"output": {"result": "Paris"}}},
    )
    assert outcome(report) == ("ready", None, 3)
    messages = normalized(report["messages"])
    order = messages[1]["parts"][3]
    approval = order.pop("approval")
    assert approval["approved"] is True
    assert messages == said(
        "shop",
        STEP,
        dynamic("search_catalog", "<call1>", {"query": "lamp"}, ["lamp one", "lamp two"]),
        STEP,
        dynamic("order_item", "<call2>", {"item": "lamp one"}, {"ordered": "lamp one"}),
        STEP,
        dynamic("locate", "<call3>", {}, {"result": "Paris"}, by_server=False),
        STEP,
        text("All set."),
    )
    assert report["history"] == report["messages"]


@pytest.mark.parametrize("client", [("sse", 5), ("ws-js", 5)], ids=["sse-v5", "ws-js-v5"])
def test_dynamic_tools_with_ai5(shapes_server: str, client: tuple[str, int]) -> None:
    """``/dynamic-v5``: ai@5 reads ``dynamic: true`` too (its chunk schema has it, and its
    reducer builds ``dynamic-tool`` parts); the page answers the dynamic browser tool with
    ai@5's ``addToolResult``."""
    report = run(
        shapes_server,
        "/dynamic-v5",
        client,
        "shop",
        clientTools={"locate": {"output": {"result": "Paris"}}},
    )
    assert outcome(report) == ("ready", None, 2)
    assert normalized(report["messages"]) == said(
        "shop",
        STEP,
        dynamic("search_catalog", "<call1>", {"query": "lamp"}, ["lamp one", "lamp two"]),
        STEP,
        dynamic("locate", "<call2>", {}, {"result": "Paris"}, by_server=False),
        STEP,
        text("All set."),
    )
    assert report["history"] == report["messages"]


def dynamic(
    name: str, call: str, tool_input: Any, output: Any, *, by_server: bool = True
) -> dict[str, Any]:
    part = {
        "type": "dynamic-tool",
        "toolName": name,
        "toolCallId": call,
        "state": "output-available",
        "input": tool_input,
        "output": output,
    }
    if by_server:
        part["providerExecuted"] = True
    return part
