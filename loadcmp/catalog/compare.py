"""`loadcmp compare A B`: what differs between two runs' set-ups, then each cell they share, metric by metric.

A metric's ratio B/A and its 95 % interval are the findings' (`report.compare.ratio`: the
delta method on the log scale over each side's `report.tables.Estimate`). The verdict names a
difference only when that interval excludes 1, its direction by whether the metric is better
higher (`model.METRICS`); fewer than `report.tables.MIN_TRIALS` trials on a side is "too few
trials", a side with no value "not measured". Where a side's mean is 0 (no failures) the
ratio has no interval: the two sides then differ only when their 95 % intervals do not
overlap, a stricter test than the ratio's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from .folder import estimates, load, trial_rows, value_of
from .model import METRICS, CellKey, CompareRow, Comparison, Difference, MetricDelta, Verdict
from .setup import differences_of


def verdict(metric: str, a: Any, b: Any, low: float | None, high: float | None) -> Verdict:
    """The verdict of one metric from each side's Estimate and the ratio's interval (None: none)."""
    from ..report.tables import MIN_TRIALS

    if a.mean is None or b.mean is None:
        return "not measured"
    if a.n < MIN_TRIALS or b.n < MIN_TRIALS:
        return "too few trials"
    higher_better = METRICS[metric][1]
    if low is None or high is None:
        ia, ib = a.interval, b.interval
        if ia is None or ib is None or (ib[0] <= ia[1] and ia[0] <= ib[1]):
            return "no difference"
        up = ib[0] > ia[1]
    elif low > 1 or high < 1:
        up = low > 1
    else:
        return "no difference"
    return "better" if up == higher_better else "worse"


def delta(metric: str, a: Any, b: Any) -> MetricDelta:
    """One metric of a shared cell: each side's value, the ratio B/A with its interval, the verdict."""
    from ..report.compare import ratio

    r = ratio(b, a)
    return MetricDelta(metric, value_of(a), value_of(b), r.value, r.low, r.high,
                       verdict(metric, a, b, r.low, r.high))


def _estimates(path: Path, doc: dict[str, Any]) -> dict[CellKey, dict[str, Any]]:
    """Each cell's Estimate of every metric."""
    rows = trial_rows(path, doc)
    per_metric = {m: estimates(rows, m) for m in METRICS}
    return {cell: {m: per_metric[m][cell] for m in METRICS} for cell in per_metric["rps"]}


def _loaded(path: Path) -> tuple[Any, dict[str, Any]]:
    e, doc = load(path, broken_ok=True)
    if e.state == "broken":
        raise UsageError(f"{path} is not a results folder ({e.reason})")
    return e, doc


def _no_shared_cell(a: Path, b: Path, cells_a: list[CellKey], cells_b: list[CellKey]) -> UsageError:
    def some(cells: list[CellKey]) -> str:
        if not cells:
            return "no measured trial"
        return ", ".join(c.text() for c in cells[:3]) + (f" and {len(cells) - 3} more" if len(cells) > 3 else "")

    return UsageError(f"{a} and {b} share no cell (label x level x page x protocol): "
                      f"A has {some(cells_a)}; B has {some(cells_b)}")


def _differs(cell: CellKey, diffs: list[Difference]) -> bool:
    return any(d.scope in ("", cell.label) for d in diffs)


def compare(a: Path, b: Path, pair: tuple[str, str] | None = None) -> Comparison:
    """Run B against run A: the set-up differences first, then a row per shared cell. `pair` (label of A, label of
    B) compares two labels of other names as one (a tuned variant against the defaults' label). A one-line
    UsageError for a folder that is not a results folder, and for two runs that share no cell."""
    ea, doc_a = _loaded(Path(a))
    eb, doc_b = _loaded(Path(b))
    cells_a, cells_b = _estimates(ea.path, doc_a), _estimates(eb.path, doc_b)
    if pair is not None:
        cells_b = {(CellKey(pair[0], c.level, c.page, c.protocol) if c.label == pair[1] else c): v
                   for c, v in cells_b.items()}
    shared = sorted(set(cells_a) & set(cells_b))
    if not shared:
        raise _no_shared_cell(Path(a), Path(b), sorted(cells_a), sorted(cells_b))
    diffs = differences_of(doc_a, doc_b)
    if pair is not None:
        diffs = [d for d in diffs if d.key != "server" or d.scope not in pair]
        diffs = diffs + _paired(pair, doc_a, doc_b)
    rows = [CompareRow(cell, [delta(m, cells_a[cell][m], cells_b[cell][m]) for m in METRICS],
                       _differs(cell, diffs)) for cell in shared]
    return Comparison(ea, eb, diffs, rows, only_a=sorted(set(cells_a) - set(shared)),
                      only_b=sorted(set(cells_b) - set(shared)))


def _paired(pair: tuple[str, str], doc_a: dict[str, Any], doc_b: dict[str, Any]) -> list[Difference]:
    """The differences of A's label against B's label of another name, said under A's label."""
    one = {"servers": {pair[0]: (doc_a.get("servers") or {}).get(pair[0]) or {}}}
    other = {"servers": {pair[0]: (doc_b.get("servers") or {}).get(pair[1]) or {}}}
    return differences_of(one, other)
