"""Helpers shared by the test suites: SSE parsing, id normalisation, tiny agents."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from typing import Any

from google.adk.agents import LlmAgent

from adk_asgi.testing import ScriptedLlm, Turn

SSE_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}


def parse_sse(body: bytes | str) -> list[dict[str, Any]]:
    """The chunks of an SSE body, checking the framing the AI SDK client relies on."""
    text = body.decode() if isinstance(body, bytes) else body
    assert text.endswith("data: [DONE]\n\n"), f"body does not end with [DONE]: {text[-80:]!r}"
    events = text.split("\n\n")
    assert events[-1] == ""
    chunks = []
    for event in events[:-2]:
        assert event.startswith("data: "), event
        assert "\n" not in event, event
        chunks.append(json.loads(event[len("data: ") :]))
    return chunks


def counter(prefix: str) -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"{prefix}{next(numbers)}"


def scripted_agent(
    turns: Iterable[Turn] | None = None,
    *,
    responder: Callable[..., Turn] | None = None,
    tools: list[Any] | None = None,
    chunk_size: int = 5,
    delay: float = 0.0,
    name: str = "test_agent",
) -> LlmAgent:
    model = (
        ScriptedLlm(
            responder=responder, chunk_size=chunk_size, delay=delay, id_factory=counter("call_")
        )
        if responder is not None
        else ScriptedLlm(
            turns=list(turns or []), chunk_size=chunk_size, delay=delay, id_factory=counter("call_")
        )
    )
    return LlmAgent(name=name, model=model, tools=tools or [])


def user_body(text: str, chat_id: str = "chat-1", message_id: str = "u1") -> dict[str, Any]:
    return {
        "id": chat_id,
        "messages": [{"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
    }


_ID_KEYS = {"messageId": "msg", "id": "block", "toolCallId": "call", "approvalId": "approval"}


def normalize_ids(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace server-made ids by stable placeholders (``<call1>``…), in order of appearance,
    so a stream with random ids can still be compared exactly."""
    seen: dict[tuple[str, str], str] = {}
    counts: dict[str, int] = {}
    result = []
    for chunk in chunks:
        copy = dict(chunk)
        for key, kind in _ID_KEYS.items():
            value = copy.get(key)
            if isinstance(value, str):
                if (kind, value) not in seen:
                    counts[kind] = counts.get(kind, 0) + 1
                    seen[(kind, value)] = f"<{kind}{counts[kind]}>"
                copy[key] = seen[(kind, value)]
        result.append(copy)
    return result


def apply_chunks(message: dict[str, Any], chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A small model of the AI SDK client's state machine, enough to build continuation
    requests in ASGI tests (the real clients are exercised in tests/e2e)."""
    parts: list[dict[str, Any]] = message.setdefault("parts", [])
    for chunk in chunks:
        kind = chunk["type"]
        if kind == "start" and "messageId" in chunk:
            message["id"] = chunk["messageId"]
        elif kind == "start-step":
            parts.append({"type": "step-start"})
        elif kind == "text-start":
            parts.append({"type": "text", "text": "", "state": "streaming", "_id": chunk["id"]})
        elif kind in ("text-delta", "text-end"):
            part = next(p for p in parts if p.get("_id") == chunk["id"])
            part["text"] += chunk.get("delta", "")
            if kind == "text-end":
                part["state"] = "done"
                del part["_id"]
        elif kind == "tool-input-start":
            parts.append(
                {
                    "type": "tool-" + chunk["toolName"],
                    "toolCallId": chunk["toolCallId"],
                    "state": "input-streaming",
                }
            )
        elif kind.startswith("tool-"):
            part = next(p for p in parts if p.get("toolCallId") == chunk["toolCallId"])
            if kind == "tool-input-delta":
                part["input"] = json.loads(chunk["inputTextDelta"])
            elif kind == "tool-input-available":
                part.update(state="input-available", input=chunk["input"])
            elif kind == "tool-approval-request":
                part.update(state="approval-requested", approval={"id": chunk["approvalId"]})
            elif kind == "tool-output-available":
                part.update(state="output-available", output=chunk["output"])
            elif kind == "tool-output-error":
                part.update(state="output-error", errorText=chunk["errorText"])
            elif kind == "tool-output-denied":
                part.update(state="output-denied")
    return message


def answer(message: dict[str, Any], tool: str, **change: Any) -> dict[str, Any]:
    """Update the first unanswered part of ``tool`` the way addToolApprovalResponse /
    addToolOutput do: ``approved=True|False`` or ``output=...``."""
    for part in message["parts"]:
        if part.get("type") != f"tool-{tool}":
            continue
        if "approved" in change and part["state"] == "approval-requested":
            part["state"] = "approval-responded"
            part["approval"] = {**part["approval"], "approved": change["approved"]}
            return message
        if "output" in change and part["state"] in ("input-available", "approval-responded"):
            part.update(state="output-available", output=change["output"])
            return message
    raise AssertionError(f"no part of {tool} to answer with {change}")
