"""The order of a bench's rows in its rounds (``bench.harness.rows.round_order``): a row's time
depends on the row run before it, so every row must come after each other row equally often."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest

from bench.harness.rows import round_order


@pytest.mark.parametrize("rows", [3, 4, 5, 6, 7])
def test_every_row_follows_each_other_row_equally_often(rows: int) -> None:
    names = [f"row{i}" for i in range(rows)]
    rounds = rows if rows % 2 == 0 else 2 * rows
    followers: Counter[tuple[str, str]] = Counter()
    firsts: Counter[str] = Counter()
    for rep in range(rounds):
        order = round_order(names, rep)
        assert sorted(order) == names
        firsts[order[0]] += 1
        followers.update(pairwise(order))
    each = rounds // rows
    assert firsts == dict.fromkeys(names, each)
    assert followers == {(a, b): each for a in names for b in names if a != b}


def test_the_rows_after_adk_asgi_are_not_always_the_same() -> None:
    """The regression: a plain rotation put ag-ui-adk before adk_asgi in 20 rounds of 30."""
    names = ["floor", "adk_asgi", "resumable", "adk /run_sse", "before", "ag-ui-adk"]
    before_ours: Counter[str] = Counter()
    for rep in range(30):
        order = round_order(names, rep)
        at = order.index("adk_asgi")
        before_ours[order[at - 1] if at else "(first)"] += 1
    assert before_ours == dict.fromkeys([*names[2:], "floor", "(first)"], 5)
