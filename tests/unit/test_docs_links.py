"""The docs hold together: every page under docs/ is linked from docs/README.md (the reading
order), and every relative link of README.md and docs/**/*.md reaches an existing file, and its
``#anchor`` a heading of that file (GitHub's anchors: the heading lowercased, punctuation but
``-`` and ``_`` dropped, spaces made ``-``, a repeated one numbered ``-1``, ``-2``...)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose(text: str) -> str:
    """The text without code: fenced blocks and inline code spans hold no links or headings."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown text's headings (outside code)."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", FENCE.sub("", text), re.M):
        base = slug(heading)
        found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def links(text: str) -> list[str]:
    """The targets of a Markdown text's links and images (outside code)."""
    return LINK.findall(prose(text))


def broken(page: Path) -> list[str]:
    """Each relative link of ``page`` that reaches no file, or no heading of it."""
    wrong: list[str] = []
    for target in links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:...
            continue
        path, _, anchor = target.partition("#")
        reached = (page.parent / path).resolve() if path else page
        if not reached.exists():
            wrong.append(f"{target}: no such file")
        elif anchor and reached.suffix == ".md" and anchor not in anchors(reached.read_text()):
            wrong.append(f"{target}: no such heading in {reached.name}")
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_reaches_a_file_and_a_heading(page: Path) -> None:
    assert broken(page) == []


def test_every_page_under_docs_is_linked_from_the_reading_order() -> None:
    linked = {
        (INDEX.parent / target.partition("#")[0]).resolve()
        for target in links(INDEX.read_text())
        if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.I)
    }
    pages = {page.resolve() for page in DOCS.rglob("*.md")} - {INDEX.resolve()}
    assert sorted(str(p.relative_to(ROOT)) for p in pages - linked) == []


def readme_documentation() -> list[str]:
    """The link targets of README.md's ``## Documentation`` section."""
    section = (ROOT / "README.md").read_text().split("\n## Documentation\n", 1)[1]
    return links(section.split("\n## ", 1)[0])


def test_readme_points_to_the_reading_order_first() -> None:
    assert readme_documentation()[0] == "docs/README.md"


def test_readme_lists_every_user_page() -> None:
    listed = {(ROOT / target.partition("#")[0]).resolve() for target in readme_documentation()}
    users = {p.resolve() for p in DOCS.glob("*.md")}  # (docs/internals/ is for contributors)
    assert sorted(str(p.relative_to(ROOT)) for p in users - listed) == []


# --- the checks can fail ----------------------------------------------------------------------


def test_the_slugs_are_github_s() -> None:
    assert slug("Many chats at once, slow readers (`bench.concurrency`, `bench.slow_clients`)") == (
        "many-chats-at-once-slow-readers-benchconcurrency-benchslow_clients"
    )
    assert slug("1. A server tool that needs approval") == "1-a-server-tool-that-needs-approval"
    assert slug("Mixed steps: a denial next to a browser tool") == (
        "mixed-steps-a-denial-next-to-a-browser-tool"
    )
    assert anchors("# A\n## B\n## B\n```\n# not a heading\n```\n") == {"a", "b", "b-1"}


def test_a_missing_file_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A section\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[ok](other.md#a-section), [here](#page), [web](https://example.com/x.md)\n"
        "[gone](missing.md), [no heading](other.md#b-section), [not here](#nowhere)\n"
        "`[in code](missing.md)`\n\n```md\n[in a block](missing.md)\n```\n"
    )
    assert [w.split(":")[0] for w in broken(page)] == [
        "missing.md",
        "other.md#b-section",
        "#nowhere",
    ]
