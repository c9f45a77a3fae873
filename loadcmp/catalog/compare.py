"""`loadcmp compare A B`: what differs between two runs' set-ups, then each cell they share, metric by metric; where
both traced a cell, which part of its time moved (`partsmoved`).

A metric's ratio B/A and its 95 % interval are the findings' (`report.compare.ratio`: the
delta method on the log scale over each side's `report.tables.Estimate`). The verdict names a
difference only when that interval excludes 1, its direction by whether the metric is better
higher (`model.METRICS`); fewer than `report.tables.MIN_TRIALS` trials on a side is "too few
trials", a side with no value "not measured". A side whose client limited its req/s is judged
one-sided, as the findings are (`one_sided`). Where a side's mean is 0 (no failures) the
ratio has no interval: the two sides then differ only when their 95 % intervals do not
overlap, a stricter test than the ratio's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .folder import bound_cells, estimates, load, trial_rows, value_of
from .partsmoved import parts_moved
from .model import METRICS, CellKey, CompareRow, Comparison, Difference, MetricDelta, Verdict
from .setup import differences_of

if TYPE_CHECKING:
    from ..report.tables import Estimate


def verdict(metric: str, a: Estimate, b: Estimate, low: float | None, high: float | None) -> Verdict:
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


def one_sided(v: Verdict, bound: str) -> Verdict:
    """req/s's verdict where a side's client limited it (`bound`: "A", "B" or "A and B"): that side's rate is a
    lower bound, so only a bound B above A ("better") or a B below a bound A ("worse") is shown."""
    if not bound or v not in ("better", "worse", "no difference"):
        return v
    return v if (bound, v) in (("B", "better"), ("A", "worse")) else "client-bound"


def delta(metric: str, a: Estimate, b: Estimate, bound: str = "") -> MetricDelta:
    """One metric of a shared cell: each side's value, the ratio B/A with its interval, the verdict (req/s
    judged one-sided where `bound` names a client-bound side)."""
    from ..report.compare import ratio

    r = ratio(b, a)
    v = verdict(metric, a, b, r.low, r.high)
    return MetricDelta(metric, value_of(a), value_of(b), r.value, r.low, r.high,
                       one_sided(v, bound) if metric == "rps" else v)


def _sides(cell: CellKey, bound_a: set[CellKey], bound_b: set[CellKey]) -> str:
    return " and ".join(side for side, bound in (("A", bound_a), ("B", bound_b)) if cell in bound)


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

    labels_a, labels_b = sorted({c.label for c in cells_a}), sorted({c.label for c in cells_b})
    hint = ""
    same = sorted(((x.label, y.label) for x in cells_a for y in cells_b  # the same cell under two labels,
                   if x.label != y.label and replace(x, label=y.label) == y),  # one stack's first (nginx[h2]: nginx)
                  key=lambda pair: pair[0].split("[")[0] != pair[1].split("[")[0])
    if same or (len(labels_a) == len(labels_b) == 1 and labels_a != labels_b):
        one, other = same[0] if same else (labels_a[0], labels_b[0])
        hint = f" (to compare the two labels as one: --pair {one}={other})"
    return UsageError(f"{a} and {b} share no cell (label x level x page x workload): "
                      f"A has {some(cells_a)}; B has {some(cells_b)}{hint}")


def _differs(cell: CellKey, diffs: list[Difference]) -> bool:
    return any(d.scope in ("", cell.label) for d in diffs)


def compare(a: Path, b: Path, pair: tuple[str, str] | None = None) -> Comparison:
    """Run B against run A: the set-up differences first (what was sent first of all), then a row per shared cell.
    `pair` (label of A, label of B) compares two labels of other names as one (a tuned variant against the
    defaults' label). Two runs that sent other workloads share no row: their differences and each side's cells.
    A one-line UsageError for a folder that is not a results folder, and for two runs that share no cell and sent
    the same workload (other labels, other levels)."""
    ea, doc_a = _loaded(Path(a))
    eb, doc_b = _loaded(Path(b))
    cells_a, cells_b = _estimates(ea.path, doc_a), _estimates(eb.path, doc_b)
    if pair is not None:
        for side, label, cells in (("A", pair[0], cells_a), ("B", pair[1], cells_b)):
            if label not in {c.label for c in cells}:
                known = ", ".join(sorted({c.label for c in cells})) or "none"
                raise UsageError(f"--pair: run {side} has no label {label!r} (its labels: {known})")
        cells_b = {_relabel(c, pair): v for c, v in cells_b.items()}
    shared = sorted(set(cells_a) & set(cells_b))
    diffs = differences_of(doc_a, doc_b)
    if pair is not None:
        diffs = [d for d in diffs if d.key != "server" or d.scope not in pair]
        diffs = _first(diffs + _paired(pair, doc_a, doc_b))
    if not shared and not any(d.kind == "workload" for d in diffs):
        raise _no_shared_cell(Path(a), Path(b), sorted(cells_a), sorted(cells_b))
    bound_a, bound_b = bound_cells(doc_a), bound_cells(doc_b)
    if pair is not None:
        bound_b = {_relabel(c, pair) for c in bound_b}
    rows = []
    for cell in shared:
        bound = _sides(cell, bound_a, bound_b)
        rows.append(CompareRow(cell, [delta(m, cells_a[cell][m], cells_b[cell][m], bound) for m in METRICS],
                               _differs(cell, diffs), bound))
    return Comparison(ea, eb, diffs, rows, only_a=sorted(set(cells_a) - set(shared)),
                      only_b=sorted(set(cells_b) - set(shared)),
                      parts=parts_moved(ea.path, eb.path, [(c.label, c.level) for c in shared], pair))


def _relabel(cell: CellKey, pair: tuple[str, str]) -> CellKey:
    """B's cell of `pair`'s B label under A's label."""
    return replace(cell, label=pair[0]) if cell.label == pair[1] else cell


def _first(diffs: list[Difference]) -> list[Difference]:
    """What was sent first (`setup.workload`), the rest in their order."""
    return sorted(diffs, key=lambda d: d.kind != "workload")


def _paired(pair: tuple[str, str], doc_a: dict[str, Any], doc_b: dict[str, Any]) -> list[Difference]:
    """The differences of A's label against B's label of another name, said under A's label."""
    def side(doc: dict[str, Any], label: str) -> dict[str, Any]:
        trials = [{**t, "server": pair[0]} for t in doc.get("trials") or [] if t.get("server") == label]
        return {"servers": {pair[0]: (doc.get("servers") or {}).get(label) or {}}, "trials": trials,
                "spec": doc.get("spec") or {}}

    return [d for d in differences_of(side(doc_a, pair[0]), side(doc_b, pair[1])) if d.scope == pair[0]]
