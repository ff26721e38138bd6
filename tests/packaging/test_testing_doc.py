"""docs/testing.md's Gemini stand-in example runs as written: ADK's ``Gemini`` class and
google-genai answer through the stand-in, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.packaging.test_readme import blocks

TESTING = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def stand_in_example() -> str:
    text = TESTING.read_text()
    start = text.index("\n## Gemini on the wire, offline\n")
    end = text.index("\n## ", start + 1)
    [code] = [code for language, code in blocks(text[start:end]) if language == "python"]
    return code


async def test_the_stand_in_example_runs_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(stand_in_example(), str(TESTING), "exec"), namespace)
    await namespace["test_my_agent_on_gemini"]()
