"""Where a series of runs steps: Otava proposes, one t-test decides, and a scan finds what Otava lost.

Apache Otava's E-Divisive (`otava.analysis.compute_change_points`) proposes change points
over sliding windows, then merges them away weakest first. On a short series, the length of a
new project's history, the merge drops a true step before it is ever judged: on 4 + 4 runs its
split proposes 3, 4 and 5, and the neighbours of 4 are one run each (p = 1). So Otava only
proposes here; what stands is decided by one rule, the same for its proposals and for the scan
that follows them:

- a split stands when Student's two-sided t-test between the runs on either side of it, up to
  the next split standing, gives p under the series' level divided by the splits that segment
  could have had (Bonferroni's correction: a series without a step shows one with probability
  at most the level, whatever its length);
- each segment left between the standing splits is then scanned at every run, and its best split
  is judged the same way, until none stands (binary segmentation);
- a value is only known to its resolution (a latency percentile to its histogram's bucket, 1 %
  wide): the test's variance never goes under the variance of that rounding, so runs that read
  the same bucket three times do not make a one-bucket move a change with p = 0.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

RESOLUTION: dict[str, tuple[float, float]] = {
    "p50": (0.01, 0.0), "p99": (0.01, 0.0),  # the latency histograms' buckets are 1 % wide (load.record.histogram)
    "rps": (0.001, 0.0), "cpu_per_request": (0.001, 0.0),  # a rate schedule's exact 500.0 req/s, run after run
    "failed_rate": (0.0, 0.01),  # percent: one failure in 10,000 requests
    "mem_peak": (0.0, 4096.0),  # bytes: a page of memory
}
"""A metric's resolution, (relative, absolute): what a run's value is known to. Runs that read the same value
(the same bucket, the same rate, no failure) have no variance, and Student's t says p = 0 for any move then; the
test's variance never goes under what rounding to this resolution makes."""


@dataclass(frozen=True)
class Step:
    """One split that stands: the first run after it, the means on either side, and the test's p-value."""

    index: int
    before: float
    after: float
    pvalue: float


def ttest(left: Sequence[float], right: Sequence[float], resolution: float | tuple[float, float] = 0.0) -> float:
    """Student's two-sided t-test of two groups of runs (pooled variance, so one side may be a single run), with
    the variance floored at the rounding `resolution` makes (relative, or (relative, absolute)). 1.0 where it
    cannot be told (fewer than 3 runs)."""
    relative, absolute = resolution if isinstance(resolution, tuple) else (resolution, 0.0)
    n1, n2 = len(left), len(right)
    if n1 < 1 or n2 < 1 or n1 + n2 < 3:
        return 1.0
    m1, m2 = sum(left) / n1, sum(right) / n2
    sq = sum((v - m1) ** 2 for v in left) + sum((v - m2) ** 2 for v in right)
    level = (sum(map(abs, left)) + sum(map(abs, right))) / (n1 + n2)
    var = max(sq / (n1 + n2 - 2), (relative * level) ** 2 / 12, absolute ** 2 / 12)
    if var == 0:
        return 1.0 if m1 == m2 else 0.0
    from scipy import stats  # loaded where used: importing the catalog loads nothing heavy

    t = (m2 - m1) / math.sqrt(var * (1 / n1 + 1 / n2))
    return float(2 * stats.t.sf(abs(t), n1 + n2 - 2))


def _bounds(cuts: list[int], k: int, n: int) -> tuple[int, int]:
    """The segment a split at `k` would cut: from the standing split before it to the one after (or the ends)."""
    return max((c for c in cuts if c < k), default=0), min((c for c in cuts if c > k), default=n)


def _judged(values: Sequence[float], lo: int, k: int, hi: int, resolution: tuple[float, float]) -> float:
    """A split's p-value times the splits its segment could have had (Bonferroni): it stands under the level."""
    return ttest(values[lo:k], values[k:hi], resolution) * max(1, hi - lo - 1)


def _scan(values: Sequence[float], cuts: list[int], level: float, resolution: tuple[float, float]) -> None:
    """Adds to `cuts` the best split of each segment between them while one stands, segment by segment."""
    edges = [0, *sorted(cuts), len(values)]
    todo = list(itertools.pairwise(edges))
    while todo:
        lo, hi = todo.pop()
        if hi - lo < 3:
            continue
        k = min(range(lo + 1, hi), key=lambda j: ttest(values[lo:j], values[j:hi], resolution))
        if _judged(values, lo, k, hi, resolution) < level:
            cuts.append(k)
            todo += [(lo, k), (k, hi)]


def steps(values: Sequence[float], level: float, proposed: Sequence[int] = (),
          resolution: float | tuple[float, float] = 0.0) -> list[Step]:
    """The splits of `values` that stand at `level`: `proposed` ones first (Otava's), strongest first, then the
    scan's; each with the means of the runs on either side up to its neighbours, and its t-test's p-value."""
    n, cuts = len(values), list[int]()
    resolution = resolution if isinstance(resolution, tuple) else (resolution, 0.0)
    strongest = sorted({k for k in proposed if 0 < k < n},
                       key=lambda k: ttest(values[:k], values[k:], resolution))
    for k in strongest:
        lo, hi = _bounds(cuts, k, n)
        if _judged(values, lo, k, hi, resolution) < level:
            cuts.append(k)
    _scan(values, cuts, level, resolution)
    out = []
    for k in sorted(cuts):
        lo, hi = _bounds(cuts, k, n)
        left, right = values[lo:k], values[k:hi]
        out.append(Step(k, sum(left) / len(left), sum(right) / len(right), ttest(left, right, resolution)))
    return out


def otava_proposals(compute: Callable[..., Any], values: Sequence[float], window: int, level: float) -> list[int]:
    """Every split Otava's E-Divisive considered: its weak first pass and what its merge kept."""
    kept, weak = compute(list(values), window_len=window, max_pvalue=level, min_magnitude=0.0)
    return sorted({int(cp.index) for cp in [*kept, *(weak or [])]})
