"""Offline stand-ins for Gemini: a scripted model for tests, the demo, and users' own tests.

``ScriptedLlm`` streams like Gemini (delta partials, one aggregated final response, call ids,
usage), so code written against it meets the same event shapes in production.
"""

from adk_asgi.testing.demo_grammar import demo_model, demo_responder, parse_stages
from adk_asgi.testing.scripted import (
    DEFAULT_MODEL_NAME,
    Call,
    Fail,
    Responder,
    ScriptedLlm,
    ScriptedModelError,
    ScriptExhaustedError,
    Segment,
    Text,
    Thought,
    Turn,
    assign_call_ids,
    new_call_id,
    turn_to_responses,
)

__all__ = [
    "DEFAULT_MODEL_NAME",
    "Call",
    "Fail",
    "Responder",
    "ScriptExhaustedError",
    "ScriptedLlm",
    "ScriptedModelError",
    "Segment",
    "Text",
    "Thought",
    "Turn",
    "assign_call_ids",
    "demo_model",
    "demo_responder",
    "new_call_id",
    "parse_stages",
    "turn_to_responses",
]
