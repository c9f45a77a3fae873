"""The catalog's answers in words: one way to say a value, a verdict, a change and a difference.

The terminal (`loadcmp compare`, `history`), the `serve` pages, the trend figure and `smoke --history`
all say them, and say them the same way.
"""

from __future__ import annotations

from .model import METRICS, ChangePoint, CompareRow, Difference, MetricDelta, Value

NAMES = {"rps": "req/s", "p50": "p50", "p99": "p99", "failed_rate": "failed rate",
         "cpu_per_request": "CPU/request", "mem_peak": "memory peak"}
"""Each metric's name in a heading."""


NO_ROW = "no cell in common: the runs sent other workloads (what differs, above), so no row compares them"
"""A comparison without a row: two runs whose cells all differ in what was sent."""


def unit(metric: str) -> str:
    return METRICS[metric][0] if metric in METRICS else ""


def _digits(metric: str, x: float) -> int:
    """Decimals a figure of `metric` near `x` is shown with."""
    u = unit(metric)
    if u == "%":
        return 2
    if u == "bytes" or (u == "req/s" and abs(x) < 100):
        return 1
    if u == "req/s":
        return 0
    return 1 if abs(x) >= 10 else 2


def number(metric: str, x: float | None, digits: int | None = None) -> str:
    """A figure of `metric` with its unit: 1,234 req/s, 12.3 ms, 0.50 %, 212.0 MiB."""
    if x is None:
        return "-"
    u = unit(metric)
    shown = x / 1048576 if u == "bytes" else x
    d = _digits(metric, x) if digits is None else digits
    return f"{shown:,.{d}f} " + ("MiB" if u == "bytes" else u)


def plus_minus(metric: str, v: Value) -> str:
    """`1,234 req/s ± 26`: the mean and half its 95 % interval, at the mean's precision (no interval: the
    mean alone)."""
    if v.mean is None:
        return "not measured"
    if v.low is None or v.high is None:
        return number(metric, v.mean)
    half = number(metric, (v.high - v.low) / 2, _digits(metric, v.mean)).split(" ")[0]
    return f"{number(metric, v.mean)} ± {half}"


def percent(ratio: float | None) -> str:
    """B / A as a signed change: 1.123 -> +12.3 %."""
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def delta_text(d: MetricDelta) -> str:
    """B against A with the interval of the ratio: `+12.3 % (+5.1 … +19.8)`."""
    if d.ratio is None:
        return "-"
    if d.ratio_low is None or d.ratio_high is None:
        return percent(d.ratio)
    return f"{percent(d.ratio)} ({percent(d.ratio_low)} … {percent(d.ratio_high)})"


def verdict_text(d: MetricDelta) -> str:
    """The verdict as the user reads it; with too few trials, how many there are (no guess)."""
    if d.verdict == "too few trials":
        return f"too few trials: n={d.a.n} vs {d.b.n}"
    if d.verdict == "client-bound":
        return "client-bound: no verdict"
    return d.verdict


def cell_text(row: CompareRow, metric: str) -> str:
    """A row's cell, marked `*` where its set-up differs and, in req/s, with the side the client limited."""
    text = row.cell.text() + (" *" if row.setup_differs else "")
    if metric == "rps" and row.client_bound:
        text += f" (client-bound: {row.client_bound})"
    return text


def change_percent(cp: ChangePoint) -> str:
    """A change point's change: `-20.8 %`, or `from 0` where the segment before it was 0 (no ratio)."""
    return "from 0" if cp.change is None else f"{cp.change * 100:+.1f} %"


def change_text(metric: str, cp: ChangePoint) -> str:
    """`1,200 req/s → 950 req/s (-20.8 %, worse)`."""
    return f"{number(metric, cp.before)} → {number(metric, cp.after)} ({change_percent(cp)}, {cp.direction})"


def difference_text(d: Difference) -> str:
    """One difference in one line; a config's diff is said as changed (its lines are shown apart)."""
    where = f"{d.scope}: " if d.scope else ""
    if d.kind == "config" and d.before is not None and d.after is not None:
        return f"{where}{d.key} changed"
    before = d.before if d.before is not None else "(none)"
    after = d.after if d.after is not None else "(none)"
    return f"{where}{d.key} {before} → {after}"


def differences_text(diffs: list[Difference], most: int = 3) -> str:
    """Set-up differences at a change point in one line: the first `most` named, the rest counted."""
    if not diffs:
        return "no set-up difference"
    said = "; ".join(difference_text(d) for d in diffs[:most])
    return said + (f"; and {len(diffs) - most} more" if len(diffs) > most else "")
