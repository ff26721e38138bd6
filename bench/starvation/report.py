"""``bench.starvation``'s report: per phase, the time to first text, its ratio to quiet, and
what the attacker got."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from bench.harness.report import load_average, ms, table
from bench.starvation.rows import PHASES, Attack, Round


def _attack(attack: Attack | None) -> str:
    if attack is None:
        return ""
    got = [f"{attack.open_sockets} sockets open"] if attack.open_sockets else []
    got += [f"closed {code}: {n}" for code, n in sorted(attack.closed.items(), key=str)]
    got += [f"{code}: {n}" for code, n in sorted(attack.statuses.items())]
    return ", ".join(got)


def report(rounds: Sequence[Round], sockets: int, bound: int, flooders: int, delay: float) -> str:
    rows = []
    for phase in PHASES:
        median = statistics.median(r.first_text[phase] for r in rounds)
        ratio = statistics.median(r.ratio(phase) for r in rounds)
        rows.append([phase, ms(median), f"{ratio:.2f}", _attack(rounds[-1].attacks.get(phase))])
    return (
        f"Time to first text of another user, quiet and while one user tries {sockets} live "
        f"sockets, then keeps {bound} (its bound), then {flooders} chat requests in flight; "
        f"the model takes {ms(delay)} ms a delta; {len(rounds)} round(s), {load_average()}:\n"
        f"{table(['phase', 'first text', 'ratio', 'mallory got (last round)'], rows)}"
    )
