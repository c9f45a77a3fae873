"""`loadcmp history` and `smoke --history`: a metric over every stored run, and where it changed.

Each run's value in a cell is the mean of its measured trials with its 95 % interval
(`report.tables.Estimate.of`, as every table says it). Where the series steps is `steps.steps`:
Apache Otava's E-Divisive proposes, and Student's t-test between the runs on either side decides at
`MAX_PVALUE` over the splits a segment could have had; a scan finds what Otava's merge lost on a
short series. No threshold on the size of a change is set. `MAX_PVALUE` is 0.001, Otava's own
default: a series without a step shows one with probability at most 0.001 (1 in 1,500 made-up
series in tests/test_catalog_steps.py), and every step the test decides at that level is found, from
3 + 3 runs up. Every metric has a resolution under which the test's variance never goes (`steps.RESOLUTION`).
A long series is also proposed window by window by Otava (`WINDOW`), and the level is divided by the number
of windows for both (`max_pvalue`; 0.001 up to 25 runs): more than the steps' own correction needs, kept so that
a history of hundreds of runs is as sure of each step as a short one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..errors import LoadcmpError, UsageError
from .folder import cell_row, check_metric, estimates, load, read_doc, trial_rows, value_of
from .index import Catalog, Filters, Splits, open_catalog
from .model import METRICS, CellKey, ChangePoint, Difference, History, HistoryQuery, Point, RunEntry, Series, Value
from .setup import differences_of
from .steps import RESOLUTION, otava_proposals, steps

MAX_PVALUE = 0.001
"""The level a series' steps are decided at, over the splits each could have had (the module's docstring says
why this one; a series longer than 25 runs divides it: `max_pvalue`)."""
WINDOW = 50
"""Otava's sliding window (its default): runs compared at once when splitting a long series."""
RULE = "steps-2"
"""The rule that decides a step (`steps`), in the memo's key: a new rule tests every series again."""


def max_pvalue(n: int) -> float:
    """The level of a series of `n` runs: `MAX_PVALUE` over Otava's windows (for its proposals and the steps)."""
    return MAX_PVALUE / max(1, math.ceil(n / (WINDOW // 2)))


def _otava() -> Callable[..., Any]:
    try:
        from otava.analysis import compute_change_points
    except ImportError:
        raise LoadcmpError("change points need Apache Otava, a dependency of loadcmp on Python 3.11 to 3.14: "
                           "pip install 'apache-otava>=0.8,<0.9'") from None
    return compute_change_points


def _points(found: list[tuple[Path, CellKey, Value]], runs: dict[Path, RunEntry]) -> dict[CellKey, list[Point]]:
    """Each cell's points, in the order found (oldest run first)."""
    out: dict[CellKey, list[Point]] = {}
    for path, cell, value in found:
        out.setdefault(cell, []).append(Point(runs[path], cell, value))
    return out


class _Docs:
    """run.json of the runs around change points, each read once."""

    def __init__(self) -> None:
        self.read: dict[Path, dict[str, Any] | None] = {}

    def differences(self, before: Path, after: Path) -> list[Difference]:
        docs = [self._doc(before), self._doc(after)]
        return differences_of(docs[0], docs[1]) if docs[0] is not None and docs[1] is not None else []

    def _doc(self, path: Path) -> dict[str, Any] | None:
        if path not in self.read:
            self.read[path] = read_doc(path)[0]  # None: broken or gone since it was indexed: no differences known
        return self.read[path]


Memo = Callable[[str, Callable[[], Splits]], Splits]
"""Keeps a series' splits by key (`Catalog.remembered`)."""


def _splits(values: list[float], metric: str, memo: Memo | None) -> list[list[float]]:
    """The steps of `values` (`steps.steps`: Otava proposes, Student's t-test decides at `max_pvalue`), each
    [index, mean before, mean after, p-value]; kept by `memo` under a hash of the values, the rule and Otava's
    version, so an unchanged series is never tested again."""
    level, resolution = max_pvalue(len(values)), RESOLUTION.get(metric, (0.0, 0.0))

    def compute() -> list[list[float]]:
        proposed = otava_proposals(_otava(), values, WINDOW, level)
        return [[s.index, s.before, s.after, s.pvalue] for s in steps(values, level, proposed, resolution)]

    if memo is None:
        return compute()
    try:
        otava = importlib.metadata.version("apache-otava")
    except importlib.metadata.PackageNotFoundError:
        otava = "?"
    said = json.dumps([otava, RULE, WINDOW, level, resolution, values])
    return list(memo(hashlib.sha256(said.encode()).hexdigest(), compute))


def change_points(cell: CellKey, points: list[Point], metric: str, docs: _Docs | None = None,
                  memo: Memo | None = None) -> list[ChangePoint]:
    """Where a series changed (Otava, `MAX_PVALUE`), each with the set-up differences at that run."""
    known = [(i, p.value.mean) for i, p in enumerate(points) if p.value.mean is not None]
    if len(known) < 2:
        return []
    docs = docs or _Docs()
    out = []
    for index, before, after, pvalue in _splits([v for _, v in known], metric, memo):
        at, before_at = known[int(index)][0], known[int(index) - 1][0]
        direction: Literal["better", "worse"] = "better" if (after > before) == METRICS[metric][1] else "worse"
        change = None if before == 0 else after / before - 1  # Otava's forward_rel_change says 0 there
        out.append(ChangePoint(cell, at, points[at].run, before, after, change, pvalue, direction,
                               docs.differences(points[before_at].run.path, points[at].run.path), metric))
    return out


def _filters(q: HistoryQuery) -> Filters:
    return {"label": q.label, "stack": q.stack, "level": q.level, "page": q.page, "protocol": q.protocol}


def history(root: Path, q: HistoryQuery, rebuild: bool = False) -> History:
    """`q.metric` over every stored run under `root` matching `q`'s filters, per cell, oldest first, with its
    change points. A UsageError for an unknown metric and when no run matches."""
    check_metric(q.metric)
    with open_catalog(Path(root), rebuild) as cat:
        found = cat.values(q.metric, **_filters(q))
        runs = cat.runs
        if not found:
            said = ", ".join(f"{k} {v}" for k, v in _filters(q).items() if v is not None) or "any cell"
            measured = sum(r.state in ("complete", "interrupted") for r in runs)
            raise UsageError(f"no stored run under {root} matches {said} ({len(runs)} folders, {measured} of "
                             "them complete or interrupted)")
        docs = _Docs()
        points = _points(found, {r.path: r for r in runs})
        series = [Series(cell, pts, change_points(cell, pts, q.metric, docs, cat.remembered))
                  for cell, pts in sorted(points.items())]
    return History(q, series, runs)


def _series_with(cat: Catalog, cell: CellKey, metric: str, run: Path, last: Point) -> list[Point]:
    """The cell's points of the root's runs other than `run`, then `last`."""
    found = cat.values(metric, exclude=run, **cell_row(cell))
    return [*_points(found, {r.path: r for r in cat.runs}).get(cell, []), last]


def regressions(root: Path, run: Path, metrics: tuple[str, ...] = ("rps", "p99")) -> list[ChangePoint]:
    """The change points for the worse AT `run`, with `run` taken as the newest point of `root`'s history (it may
    be inside `root` or not), in each of its cells and each metric of `metrics`."""
    for m in metrics:
        check_metric(m)
    me, doc = load(Path(run))
    rows = trial_rows(me.path, doc)
    docs = _Docs()
    out: list[ChangePoint] = []
    with open_catalog(Path(root)) as cat:
        for metric in metrics:
            for cell, est in sorted(estimates(rows, metric).items()):
                if est.mean is None:
                    continue
                points = _series_with(cat, cell, metric, me.path, Point(me, cell, value_of(est)))
                out += [c for c in change_points(cell, points, metric, docs, cat.remembered)
                        if c.index == len(points) - 1 and c.direction == "worse"]
    return out
