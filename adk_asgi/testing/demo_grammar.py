"""The offline demo model's grammar (docs/testing.md#the-demo-grammar — a contract).

End-to-end tests and the benchmark drive the demo through fixed phrases (``weather in Paris``,
``pay 5 to alice then pay 7 to bob`` …), so the scripted model must answer them the same way on
every run, in SSE and live mode. The grammar is therefore a pure function of the conversation as
the model sees it: it re-reads the last user text on every model call and works out from the
function responses that follow it how far the plan has progressed — no hidden state, so one
model instance serves any number of chats.

What the model sees during an approval round (measured with ADK 2.13, ``FunctionTool(...,
require_confirmation=True)``, SSE): neither the ``adk_request_confirmation`` calls/responses nor
the ``{"error": "This tool call requires confirmation..."}`` placeholder reach the model; after
the decision it sees its own call followed by the real response (or ADK's rejection
``{"error": "This tool call is rejected."}``). Both are still filtered here, because other paths
(live mode, tools calling ``request_confirmation`` themselves) do forward the placeholder.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.genai import types

from adk_asgi.testing.llm import ScriptedLlm
from adk_asgi.testing.scripted import Call, Fail, Segment, Text, Turn

__all__ = [
    "CONFIRMATION_FUNCTION_NAME",
    "CONFIRMATION_PLACEHOLDER_PREFIX",
    "PLANNER",
    "REJECTED_ERROR",
    "closing_sentence",
    "demo_model",
    "demo_responder",
    "intermediate_sentence",
    "parse_stages",
    "planner_model",
    "planner_responder",
    "render_result",
]

CONFIRMATION_FUNCTION_NAME = "adk_request_confirmation"
"""ADK's synthetic approval call; bookkeeping between ADK and the client, not a model call."""
CONFIRMATION_PLACEHOLDER_PREFIX = "This tool call requires confirmation"
"""Start of the placeholder error ADK records for a gated call that awaits approval."""
REJECTED_ERROR = "This tool call is rejected."
"""ADK's response for a denied call (``tools/_confirmation_utils.py``)."""

_EXPLODE_TEXT = "Something is about to go wrong..."
_EXPLODE_ERROR = "explode: the scripted demo model failed on purpose"

_PUNCTUATION = string.punctuation + "\u2018\u2019\u201c\u201d"
_WORD = r"(\S+)"
_NUMBER = r"(\d+(?:\.\d+)?)"
_CLAUSE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("get_weather", re.compile(rf"\bweather\s+in\s+{_WORD}", re.IGNORECASE)),
    ("process_payment", re.compile(rf"\bpay\s+\$?{_NUMBER}\s+to\s+{_WORD}", re.IGNORECASE)),
    ("change_bgm", re.compile(rf"\bplay\s+track\s+#?{_NUMBER}", re.IGNORECASE)),
    ("get_location", re.compile(r"\bwhere\s+am\s+i\b", re.IGNORECASE)),
)
_TRIP = re.compile(r"\bplan a trip to\s+" + _WORD, re.IGNORECASE)
PLANNER = "trip_planner"
"""The demo's sub-agent (``plan a trip to <city>``): the multi-agent part of the demo."""
_HANDOVER = "Our trip planner can help with that."
_TRANSFER = "transfer_to_agent"
_THEN = re.compile(r"\s+then\s+", re.IGNORECASE)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)


def _word(raw: str) -> str | None:
    """One word, surrounding punctuation ignored (``Paris?`` → ``Paris``)."""
    return raw.strip(_PUNCTUATION) or None


def _number(raw: str) -> int | float:
    value = float(raw)
    return int(value) if value.is_integer() else value


def _parse_clause(clause: str) -> list[Call]:
    """Every tool phrase in one clause, in textual order (id-less: the model assigns ids)."""
    found: list[tuple[int, Call]] = []
    for name, pattern in _CLAUSE_PATTERNS:
        for match in pattern.finditer(clause):
            call: Call | None = None
            if name == "get_weather":
                city = _word(match.group(1))
                call = Call(name, {"city": city}) if city else None
            elif name == "process_payment":
                recipient = _word(match.group(2))
                amount = _number(match.group(1))
                args = {"amount": amount, "recipient": recipient, "currency": "USD"}
                call = Call(name, args) if recipient else None
            elif name == "change_bgm":
                call = Call(name, {"track": int(float(match.group(1)))})
            else:
                call = Call(name, {})
            if call is not None:
                found.append((match.start(), call))
    return [call for _, call in sorted(found, key=lambda item: item[0])]


def parse_stages(text: str) -> list[list[Call]]:
    """The plan for a user text: ``then`` separates sequential stages, ``and`` parallel calls.

    Stages without any recognised tool phrase are dropped; an empty list means "no tools".
    """
    stages: list[list[Call]] = []
    for stage_text in _THEN.split(text):
        calls = [call for clause in _AND.split(stage_text) for call in _parse_clause(clause)]
        if calls:
            stages.append(calls)
    return stages


def render_result(name: str, response: Mapping[str, Any] | None) -> str:
    """A stable rendering of one tool outcome: ``name: <sorted-key JSON>`` or a denial."""
    if response is not None and response.get("error") == REJECTED_ERROR:
        return f"{name} was denied"
    return f"{name}: {json.dumps(response, sort_keys=True, default=str)}"


def closing_sentence(results: Sequence[tuple[str, Mapping[str, Any] | None]]) -> str:
    """The sentence after the last stage, quoting every call's outcome in call order."""
    return "Here you go: " + "; ".join(render_result(n, r) for n, r in results) + "."


def intermediate_sentence(next_stage: Sequence[Call]) -> str:
    """Streamed between stages of a ``then`` plan, in the same response as the next calls."""
    return "Done. Next, " + " and ".join(call.name for call in next_stage) + "."


def _fallback_reply(text: str) -> str:
    said = f'You said: "{text}". ' if text else "Hello! "
    return said + (
        'I can try "weather in Paris", "pay 5 to alice", "play track 3" or "where am i" '
        '(join them with "and" or "then").'
    )


_CONTEXT = "For context:"
"""How ADK shows one agent what another did (as a user message): not the user's words."""


def _has_user_text(content: types.Content) -> bool:
    texts = [part.text for part in content.parts or () if part.text and not part.thought]
    return content.role == "user" and bool(texts) and not texts[0].startswith(_CONTEXT)


def _is_placeholder(response: Mapping[str, Any] | None) -> bool:
    error = response.get("error") if response else None
    return isinstance(error, str) and error.startswith(CONFIRMATION_PLACEHOLDER_PREFIX)


@dataclass
class _Progress:
    """The model's own calls since the user text, and the real responses to them."""

    calls: list[types.FunctionCall]
    responses: list[types.FunctionResponse]

    def result_of(self, index: int) -> types.FunctionResponse | None:
        """The real response to call ``index``: by id, or by name and order for id-less calls."""
        call = self.calls[index]
        if call.id:
            return next((r for r in self.responses if r.id == call.id), None)
        nth = sum(1 for c in self.calls[:index] if not c.id and c.name == call.name)
        anonymous = [r for r in self.responses if not r.id and r.name == call.name]
        return anonymous[nth] if nth < len(anonymous) else None


def _progress_since(contents: Sequence[types.Content]) -> _Progress:
    progress = _Progress(calls=[], responses=[])
    for content in contents:
        for part in content.parts or ():
            call, response = part.function_call, part.function_response
            if call is not None and call.name != CONFIRMATION_FUNCTION_NAME:
                progress.calls.append(call)
            if (
                response is not None
                and response.name != CONFIRMATION_FUNCTION_NAME
                and not _is_placeholder(response.response)
            ):
                progress.responses.append(response)
    return progress


def demo_responder(contents: list[types.Content]) -> Turn:
    """Answer the conversation per docs/testing.md#the-demo-grammar (see the module docstring)."""
    last = max((i for i, c in enumerate(contents) if _has_user_text(c)), default=-1)
    text = ""
    if last >= 0:
        text = "".join(p.text or "" for p in contents[last].parts or () if not p.thought).strip()

    if "explode" in text.lower():
        return [Text(_EXPLODE_TEXT), Fail(_EXPLODE_ERROR)]
    if _TRIP.search(text):
        return [Text(_HANDOVER), Call(_TRANSFER, {"agent_name": PLANNER})]
    stages = parse_stages(text)
    if not stages:
        return [Text(_fallback_reply(text))]

    progress = _progress_since(contents[last + 1 :])
    offset = 0
    for number, stage in enumerate(stages):
        made = range(offset, min(offset + len(stage), len(progress.calls)))
        if len(made) < len(stage):
            turn: list[Segment] = [] if number == 0 else [Text(intermediate_sentence(stage))]
            return [*turn, *stage]
        missing = [progress.calls[i].name for i in made if progress.result_of(i) is None]
        if missing:
            # Called again before every result is in (e.g. a server and a client tool in one
            # step, docs/internals/architecture.md#long-running-tools): say so instead of guessing.
            return [Text("Waiting for " + " and ".join(f"{n}" for n in missing) + ".")]
        offset += len(stage)

    results: list[tuple[str, Mapping[str, Any] | None]] = []
    for index, call in enumerate(progress.calls[:offset]):
        response = progress.result_of(index)
        results.append((call.name or "", response.response if response else None))
    return [Text(closing_sentence(results))]


def planner_responder(contents: list[types.Content]) -> Turn:
    """The trip planner's answer: a plan for ``plan a trip to <city>``; for anything else it
    hands the user back to the demo agent (``parent`` is its name)."""
    last = max((i for i, c in enumerate(contents) if _has_user_text(c)), default=-1)
    text = ""
    if last >= 0:
        text = "".join(p.text or "" for p in contents[last].parts or () if not p.thought).strip()
    trip = _TRIP.search(text)
    if trip is None:
        return [Call(_TRANSFER, {"agent_name": "demo_agent"})]
    city = (_word(trip.group(1)) or "there").capitalize()
    return [
        Text(
            f"{city} in three days: the old town first, the museums next, then a day out of"
            " town. Ask me anything else and I will hand you back."
        )
    ]


def planner_model(**fields: Any) -> ScriptedLlm:
    """The scripted model of the demo's trip planner (``fields`` as for :func:`demo_model`)."""
    return ScriptedLlm(responder=planner_responder, **fields)


def demo_model(**fields: Any) -> ScriptedLlm:
    """The demo's scripted model; ``fields`` pass through (``chunk_size``, ``delay`` …)."""
    return ScriptedLlm(responder=demo_responder, **fields)
