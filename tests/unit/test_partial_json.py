"""``adk_asgi.convert.partial_json``: the AI SDK's ``fixJson``/``parsePartialJson``, ported.

The expected texts are what ai@6's own ``fixJson`` returns for the same prefixes (its
``dist/index.mjs``, run under Node when this port was written)."""

from __future__ import annotations

import pytest

from adk_asgi.convert.partial_json import fix_json, parse_partial_json
from adk_asgi.convert.ui_parts import MISSING

FIXED = [
    ("", ""),
    ('{"city":"', '{"city":""}'),
    ('{"city":"Boston \\"', '{"city":"Boston \\""}'),
    ('{"city":"Boston \\"MA\\"","da', '{"city":"Boston \\"MA\\""}'),
    ('{"city":"B","days":3,"un', '{"city":"B","days":3}'),
    ('{"units":["c"', '{"units":["c"]}'),
    ('{"units":["c",true,nul', '{"units":["c",true,null]}'),
    ('{"n":-1', '{"n":-1}'),
    ('{"n":-1.5e3,"u":', '{"n":-1.5e3}'),
    ('{"u":"\\u00e9x"', '{"u":"\\u00e9x"}'),
    ('{"u":"x","o":{"a"', '{"u":"x","o":{}}'),
]


@pytest.mark.parametrize(("text", "fixed"), FIXED)
def test_fix_json_closes_what_the_ai_sdk_closes(text: str, fixed: str) -> None:
    assert fix_json(text) == fixed


def test_parse_partial_json_is_the_value_the_page_shows() -> None:
    assert parse_partial_json('{"city":"Pa') == {"city": "Pa"}
    assert parse_partial_json('{"city":"Paris","days":2}') == {"city": "Paris", "days": 2}
    assert parse_partial_json("") is MISSING  # (undefined: the part shows no input yet)
