"""`compare A B` where both runs traced (--trace): for each shared cell, where its time went in A and in B side by
side (each part's share of p50 and of p99, `trace.breakdown.shares`, as the report's "Where the time went" gives
them), and the part whose time moved most, in one sentence ("nginx @ 16: the upstream queue went from 86 % to 4 % of
p99 (47.9 ms to 1.2 ms)").

A part's time at a quantile is its share times that quantile's latency; the part named is the one whose time
changed most, at p99 or at p50, whichever moved more. Where only one run knows the database's part (the other's
database logged none of the cell's requests), it is counted in the upstream's on both sides, and said so. Read
from each folder's parts.parquet (`store.traceparts`); nothing for a cell only one run traced.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .model import PartShare, PartsMoved

if TYPE_CHECKING:
    import pandas as pd

QUANTILES = (("p50", 0.5), ("p99", 0.99))
FOLDED_NAME = "upstream + database"
"""The upstream's row where only one run knows the database's part (that run's database time folded back in)."""


def parts_moved(a: Path, b: Path, cells: Iterable[tuple[str, int]], pair: tuple[str, str] | None = None
                ) -> list[PartsMoved]:
    """Each of `cells` (label as A names it, level) both runs traced, A's parts against B's; `pair`: B's label of
    A's other name (`compare --pair`)."""
    from ..store.traceparts import read_parts

    parts_a, parts_b = read_parts(a), read_parts(b)
    if parts_a is None or parts_b is None or parts_a.empty or parts_b.empty:
        return []
    out = []
    for label, level in dict.fromkeys(cells):
        other = pair[1] if pair is not None and label == pair[0] else label
        got = _cell(label, level, _side(parts_a, label, level), _side(parts_b, other, level))
        if got is not None:
            out.append(got)
    return out


def _side(parts: pd.DataFrame, label: str, level: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """One run's cell: its latency at each quantile (ms), and each part's share there ({} when not traced)."""
    from ..report.timeparts import cell_requests
    from ..trace.breakdown import shares

    g = cell_requests(parts, label, level)
    lat = g["latency_ms"].astype(float)
    if lat.dropna().empty:
        return {}, {}
    return ({q: float(lat.quantile(x)) for q, x in QUANTILES},
            {q: shares(g, lat, x) for q, x in QUANTILES})


def _cell(label: str, level: int, a: tuple[dict[str, float], dict[str, dict[str, float]]],
          b: tuple[dict[str, float], dict[str, dict[str, float]]]) -> PartsMoved | None:
    """A cell's parts side by side and the part that moved most; None unless both sides have parts."""
    from ..trace.breakdown import PARTS, SHORT

    (ms_a, sh_a), (ms_b, sh_b) = a, b
    if not sh_a or not sh_b or not all(sh_a.values()) or not all(sh_b.values()):
        return None
    folded = _fold_database(sh_a, sh_b)
    rows = [PartShare(p, FOLDED_NAME if folded and p == "upstream" else SHORT[p],
                      *(s[q].get(p, 0.0) for q, _ in QUANTILES for s in (sh_a, sh_b)))
            for p in PARTS if any(s[q].get(p, 0.0) for q, _ in QUANTILES for s in (sh_a, sh_b))]
    note = f" Only {folded} knows the database's part: it is counted in the upstream's on both sides." \
        if folded else ""

    def time(side: tuple[dict[str, float], dict[str, dict[str, float]]], q: str, p: str) -> float:
        return side[1][q].get(p, 0.0) * side[0][q]

    moves = [(abs(time(b, q, p) - time(a, q, p)), q, p) for q, _ in reversed(QUANTILES) for p in PARTS]
    size, q, p = max(moves, key=lambda m: m[0])
    where = f"{label} @ {level:,}"
    if not size > 1e-6:  # ms: float noise (a part summed in another order) is no move
        return PartsMoved(label, level, ms_a["p50"], ms_b["p50"], ms_a["p99"], ms_b["p99"], rows, "",
                          f"{where}: no part's time moved.{note}")
    name = FOLDED_NAME if folded and p == "upstream" else SHORT[p]
    sentence = (f"{where}: the {name} went from {sh_a[q].get(p, 0.0):.0%} to {sh_b[q].get(p, 0.0):.0%} of {q} "
                f"({time(a, q, p):,.1f} ms to {time(b, q, p):,.1f} ms; {q} {ms_a[q]:,.1f} ms to {ms_b[q]:,.1f} ms)."
                f"{note}")
    return PartsMoved(label, level, ms_a["p50"], ms_b["p50"], ms_a["p99"], ms_b["p99"], rows, p, sentence)


def _fold_database(sh_a: dict[str, dict[str, float]], sh_b: dict[str, dict[str, float]]) -> str:
    """Where one run knows the database's part and the other does not (its database logged none of the cell's
    requests, so that time is inside its upstream's), that run's database share is put back into its upstream's,
    in place, so both compare like with like and no move is named that only the unknown made: which run ("A", "B")
    was folded, or ""."""
    known = [any("database" in s[q] for q, _ in QUANTILES) for s in (sh_a, sh_b)]
    if known[0] == known[1]:
        return ""
    side = sh_a if known[0] else sh_b
    for q, _ in QUANTILES:
        db = side[q].pop("database", 0.0)
        side[q]["upstream"] = side[q].get("upstream", 0.0) + db
    return "A" if known[0] else "B"
