"""The AI SDK's ``parsePartialJson``, in Python: what a tool part's ``input`` is mid-stream.

While a call's arguments stream (``tool-input-delta``), the client sets the part's ``input`` to
the JSON text so far, *repaired*: open strings, objects and arrays closed, a half-written key or
literal dropped or completed (``fixJson`` of ``ai``'s ``src/util/fix-json.ts``, ported state for
state). A test of what the page shows mid-stream needs the same value the browser computes.
"""

from __future__ import annotations

import json
from typing import Any, Final

from adk_asgi.convert.ui_parts import MISSING

_DIGITS: Final = frozenset("0123456789")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_LITERALS: Final = ("true", "false", "null")


def parse_partial_json(text: str) -> Any:
    """The value the AI SDK makes of ``text``: parsed as it is, else repaired, else
    ``MISSING`` (``undefined``)."""
    for candidate in (text, fix_json(text)):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return MISSING


def fix_json(text: str) -> str:
    """``fixJson``: the longest valid prefix of ``text``, closed."""
    stack = ["ROOT"]
    last_valid = -1
    literal_start = 0
    unicode_digits = 0

    def value_start(char: str, i: int, swap: str) -> None:
        nonlocal last_valid, literal_start
        pushed = {'"': "INSIDE_STRING", "{": "INSIDE_OBJECT_START", "[": "INSIDE_ARRAY_START"}
        if char in pushed or char in "ftn" or char in _DIGITS:
            last_valid = i
        if char in "ftn":
            literal_start = i
            pushed_state = "INSIDE_LITERAL"
        elif char == "-" or char in _DIGITS:
            pushed_state = "INSIDE_NUMBER"
        elif char in pushed:
            pushed_state = pushed[char]
        else:
            return
        stack.pop()
        stack.append(swap)
        stack.append(pushed_state)

    def after_object_value(char: str, i: int) -> None:
        nonlocal last_valid
        if char == ",":
            stack.pop()
            stack.append("INSIDE_OBJECT_AFTER_COMMA")
        elif char == "}":
            last_valid = i
            stack.pop()

    def after_array_value(char: str, i: int) -> None:
        nonlocal last_valid
        if char == ",":
            stack.pop()
            stack.append("INSIDE_ARRAY_AFTER_COMMA")
        elif char == "]":
            last_valid = i
            stack.pop()

    for i, char in enumerate(text):
        state = stack[-1]
        if state == "ROOT":
            value_start(char, i, "FINISH")
        elif state == "INSIDE_OBJECT_START":
            if char == '"':
                stack.pop()
                stack.append("INSIDE_OBJECT_KEY")
            elif char == "}":
                last_valid = i
                stack.pop()
        elif state == "INSIDE_OBJECT_AFTER_COMMA":
            if char == '"':
                stack.pop()
                stack.append("INSIDE_OBJECT_KEY")
        elif state == "INSIDE_OBJECT_KEY":
            if char == '"':
                stack.pop()
                stack.append("INSIDE_OBJECT_AFTER_KEY")
        elif state == "INSIDE_OBJECT_AFTER_KEY":
            if char == ":":
                stack.pop()
                stack.append("INSIDE_OBJECT_BEFORE_VALUE")
        elif state == "INSIDE_OBJECT_BEFORE_VALUE":
            value_start(char, i, "INSIDE_OBJECT_AFTER_VALUE")
        elif state == "INSIDE_OBJECT_AFTER_VALUE":
            after_object_value(char, i)
        elif state == "INSIDE_STRING":
            if char == '"':
                stack.pop()
                last_valid = i
            elif char == "\\":
                stack.append("INSIDE_STRING_ESCAPE")
            else:
                last_valid = i
        elif state == "INSIDE_ARRAY_START":
            if char == "]":
                last_valid = i
                stack.pop()
            else:
                last_valid = i
                value_start(char, i, "INSIDE_ARRAY_AFTER_VALUE")
        elif state == "INSIDE_ARRAY_AFTER_VALUE":
            if char == ",":
                stack.pop()
                stack.append("INSIDE_ARRAY_AFTER_COMMA")
            elif char == "]":
                last_valid = i
                stack.pop()
            else:
                last_valid = i
        elif state == "INSIDE_ARRAY_AFTER_COMMA":
            value_start(char, i, "INSIDE_ARRAY_AFTER_VALUE")
        elif state == "INSIDE_STRING_ESCAPE":
            stack.pop()
            if char == "u":
                unicode_digits = 0
                stack.append("INSIDE_STRING_UNICODE_ESCAPE")
            else:
                last_valid = i
        elif state == "INSIDE_STRING_UNICODE_ESCAPE":
            if char in _HEX:
                unicode_digits += 1
                if unicode_digits == 4:
                    stack.pop()
                    last_valid = i
        elif state == "INSIDE_NUMBER":
            if char in _DIGITS:
                last_valid = i
            elif char in "eE-.":
                pass
            else:
                stack.pop()
                if char in ",]" and stack[-1] == "INSIDE_ARRAY_AFTER_VALUE":
                    after_array_value(char, i)
                if char in ",}" and stack[-1] == "INSIDE_OBJECT_AFTER_VALUE":
                    after_object_value(char, i)
        elif state == "INSIDE_LITERAL":
            partial = text[literal_start : i + 1]
            if not any(literal.startswith(partial) for literal in _LITERALS):
                stack.pop()
                if stack[-1] == "INSIDE_OBJECT_AFTER_VALUE":
                    after_object_value(char, i)
                elif stack[-1] == "INSIDE_ARRAY_AFTER_VALUE":
                    after_array_value(char, i)
            else:
                last_valid = i

    result = text[: last_valid + 1]
    for state in reversed(stack):
        if state == "INSIDE_STRING":
            result += '"'
        elif state.startswith("INSIDE_OBJECT"):
            result += "}"
        elif state.startswith("INSIDE_ARRAY"):
            result += "]"
        elif state == "INSIDE_LITERAL":
            partial = text[literal_start:]
            for literal in _LITERALS:
                if literal.startswith(partial):
                    result += literal[len(partial) :]
                    break
    return result
