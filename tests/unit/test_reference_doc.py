"""docs/reference.md documents every option of ``AdkApp``, ``AdkMiddleware`` and each option
group (``Limits``, ``Streaming``, ``Messages``, ``Stores``, ``Security``, ``UserBounds``), nothing
else, with the defaults the code has; and every name ``adk_asgi`` exports.

An entry is a ``#### `name``` heading under the ``## `AdkApp```, ``## `AdkMiddleware``` or
``## `<group>``` section, followed by a ``Type: … · Default: `value``` line (``Required``
for a parameter without a default)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import adk_asgi
from adk_asgi import (
    AdkApp,
    AdkMiddleware,
    Limits,
    Messages,
    Security,
    Stores,
    Streaming,
    UserBounds,
)

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def section(text: str, title: str) -> str:
    """The text of the ``## title`` section, up to the next ``## ``."""
    parts = re.split(r"^## ", text, flags=re.M)
    [found] = [p for p in parts if p.startswith(title + "\n")]
    return found


def entries(text: str, title: str) -> dict[str, str]:
    """The ``#### `name``` entries of a section: name → the entry's text up to the next heading."""
    found: dict[str, str] = {}
    chunks = re.split(r"^(#{2,4} .*)$", section(text, title), flags=re.M)
    for heading, body in zip(chunks[1::2], chunks[2::2], strict=True):
        match = re.fullmatch(r"#### `(\*\*)?(\w+)`", heading)
        if match is None:
            assert not heading.startswith("####"), f"{title}: an entry named oddly: {heading!r}"
            continue
        name = (match.group(1) or "") + match.group(2)
        assert name not in found, f"{title}: {name} documented twice"
        found[name] = body.strip()
    return found


def parameters(function: Any) -> dict[str, inspect.Parameter]:
    """The documented names of a signature's parameters (``**name`` for a ``**kwargs``)."""
    found: dict[str, inspect.Parameter] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name == "self":
            continue
        found[f"**{name}" if parameter.kind is parameter.VAR_KEYWORD else name] = parameter
    return found


def documented_default(body: str) -> str | None:
    """What ``Default: `…``` says, or ``None`` for ``Required`` (or no default line)."""
    match = re.search(r"Default:\s+`([^`]*)`", body.split("\n\n")[0])
    return None if match is None else match.group(1)


def check_defaults(title: str, text: str, signature: dict[str, inspect.Parameter]) -> list[str]:
    """Each documented default that differs from the signature's, as a message."""
    wrong: list[str] = []
    for name, body in entries(text, title).items():
        parameter = signature.get(name)
        if parameter is None or parameter.kind is parameter.VAR_KEYWORD:
            continue
        written = documented_default(body)
        if parameter.default is inspect.Parameter.empty:
            if "Required" not in body.split("\n\n")[0]:
                wrong.append(f"{title} {name}: no default, but not written as Required")
            continue
        if written is None:
            wrong.append(f"{title} {name}: no `Default: ` line")
            continue
        default = parameter.default
        if default is None or isinstance(default, bool | int | float | str | tuple):
            value = ast.literal_eval(written)
            same = value == default and type(value) is type(default)
            if isinstance(default, float) and isinstance(value, int):
                same = False  # (write 30.0, as the signature does)
        else:
            value = eval(written, GROUP_NAMES)  # (a default that is an object)
            same = value == default
        if not same:
            wrong.append(f"{title} {name}: documented {written}, the code has {default!r}")
    return wrong


GROUPS: list[type[Any]] = [Limits, Streaming, Messages, Stores, Security, UserBounds]
GROUP_NAMES: dict[str, Any] = {group.__name__: group for group in GROUPS}


def fields(group: type[Any]) -> dict[str, inspect.Parameter]:
    """An option group's fields, as parameters with their defaults."""
    return {
        f.name: inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
        for f in dataclasses.fields(group)
    }


SECTIONS = [
    ("`AdkApp`", lambda: parameters(AdkApp.__init__)),
    ("`AdkMiddleware`", lambda: parameters(AdkMiddleware.__init__)),
    *[(f"`{group.__name__}`", lambda group=group: fields(group)) for group in GROUPS],
]


@pytest.mark.parametrize(("title", "signature"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_every_parameter_is_documented_and_nothing_else(title: str, signature: Any) -> None:
    documented = set(entries(REFERENCE.read_text(), title))
    expected = set(signature())
    assert sorted(expected - documented) == [], f"{title}: not documented in docs/reference.md"
    assert sorted(documented - expected) == [], f"{title}: documented, but not a parameter"


@pytest.mark.parametrize(("title", "signature"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_the_documented_defaults_are_the_code_s(title: str, signature: Any) -> None:
    assert check_defaults(title, REFERENCE.read_text(), signature()) == []


def test_every_entry_says_its_type() -> None:
    text = REFERENCE.read_text()
    for title, _ in SECTIONS:
        for name, body in entries(text, title).items():
            assert body.startswith("Type: "), f"{title} {name}: no `Type: ` line"


def test_the_exports_table_names_every_export_and_nothing_else() -> None:
    table = section(REFERENCE.read_text(), "What `adk_asgi` exports")
    names: list[str] = []
    for row in re.findall(r"^\| (`.*?) \|", table, re.M):
        names += re.findall(r"`(\w+)`", row)
    assert sorted(names) == sorted(adk_asgi.__all__)


# --- the checks can fail ----------------------------------------------------------------------


def test_a_missing_entry_is_found() -> None:
    text = REFERENCE.read_text()
    without = re.sub(r"^#### `busy_timeout`\n.*?(?=^#### )", "", text, flags=re.M | re.S)
    assert "busy_timeout" in set(fields(Limits)) - set(entries(without, "`Limits`"))
    without = re.sub(r"^#### `plugins`\n.*?(?=^#### )", "", text, flags=re.M | re.S)
    assert "plugins" in set(parameters(AdkApp.__init__)) - set(entries(without, "`AdkApp`"))


def test_an_entry_that_is_no_parameter_is_found() -> None:
    text = REFERENCE.read_text().replace("#### `busy_timeout`", "#### `busy_timeout_s`")
    assert "busy_timeout_s" in set(entries(text, "`Limits`")) - set(fields(Limits))


def test_a_wrong_default_is_found() -> None:
    text = REFERENCE.read_text()
    wrong = text.replace(
        "Type: `float` (seconds) · Default: `30.0`", "Type: `float` · Default: `31.0`"
    )
    assert wrong != text
    assert check_defaults("`Limits`", wrong, fields(Limits)) == [
        "`Limits` busy_timeout: documented 31.0, the code has 30.0"
    ]
    for group in GROUPS:
        name = group.__name__
        changed = text.replace(f"Default: `{name}()`", f"Default: `{name}(nothing=1)`")
        assert changed != text, name
        with pytest.raises(TypeError, match="nothing"):
            check_defaults("`AdkApp`", changed, parameters(AdkApp.__init__))
    bounds = text.replace("Default: `UserBounds()`", "Default: `UserBounds(requests=5)`")
    assert check_defaults("`AdkApp`", bounds, parameters(AdkApp.__init__)) == [
        "`AdkApp` user_bounds: documented UserBounds(requests=5), the code has UserBounds("
        "live_sockets=8, requests=4, chat_files=33554432, pause=1.0)"
    ]
