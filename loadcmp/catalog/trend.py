"""The trend figure of `loadcmp history --figure`: a metric over the stored runs with its intervals, each change
point a vertical line that names the set-up difference at its run.

In the report's style (`report.axes`: its width, palette and rcParams), one panel per series.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..errors import UsageError
from ..report.axes import PALETTE, WIDTH, MiB
from .model import METRICS, History, Series
from .words import NAMES, change_percent, differences_text

MOST_PANELS = 8
"""More series than this are drawn as the first ones, and the figure says how many it left out."""
CHANGE_COLOURS = {"worse": "#d62728", "better": "#2ca02c"}


def trend_figure(h: History) -> Figure:
    """One panel per series (at most MOST_PANELS): the runs oldest first along x, the metric with its interval."""
    series = [s for s in h.series if s.points][:MOST_PANELS]
    if not series:
        raise UsageError("nothing to draw: no series has a point")
    fig, axes = plt.subplots(len(series), 1, figsize=(WIDTH, 3.2 * len(series)), squeeze=False)
    for i, (ax, s) in enumerate(zip(axes[:, 0], series, strict=True)):
        _panel(ax, h.query.metric, s, PALETTE[i % len(PALETTE)])
    left = len([s for s in h.series if s.points]) - len(series)
    if left:
        fig.text(0.01, 0.005, f"{left} more series not drawn (narrow the filters)", fontsize=8)
    fig.tight_layout()
    return fig


def _scale(metric: str) -> tuple[float, str]:
    u = METRICS[metric][0]
    return (MiB, "MiB") if u == "bytes" else (1.0, u)


def _panel(ax: Axes, metric: str, s: Series, colour: str) -> None:
    scale, unit = _scale(metric)
    xs = list(range(len(s.points)))
    ys = [p.value.mean / scale if p.value.mean is not None else float("nan") for p in s.points]
    lo = [max(0.0, y - p.value.low / scale) if p.value.low is not None and p.value.mean is not None else 0.0
          for y, p in zip(ys, s.points, strict=True)]
    hi = [max(0.0, p.value.high / scale - y) if p.value.high is not None and p.value.mean is not None else 0.0
          for y, p in zip(ys, s.points, strict=True)]
    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="-o", color=colour, ms=4, capsize=3, lw=1.2)
    bound = [(x, y) for x, y, p in zip(xs, ys, s.points, strict=True) if p.value.client_bound]
    if bound:  # a client-bound run's value is the client's pace: a hollow mark, named in the legend
        ax.plot([x for x, _ in bound], [y for _, y in bound], "o", ms=9, mfc="none", mec="#444444", mew=1.2,
                label="‡ client-bound (req/s a lower bound)")
        ax.legend(loc="lower left", fontsize=8, frameon=False)
    _segments(ax, s, scale, len(xs), colour)
    for k, cp in enumerate(s.change_points):
        c = CHANGE_COLOURS[cp.direction]
        x = cp.index - 0.5
        ax.axvline(x, color=c, ls="--", lw=1.2)
        text = f"{change_percent(cp)} ({cp.direction}): {differences_text(cp.differences, most=2)}"
        right = x > len(xs) / 2  # the words on the side with room, each change point a line lower
        ax.annotate(_cut(text), (x, 1.0), xycoords=("data", "axes fraction"), xytext=(-3 if right else 3, -10 - 11 * k),
                    textcoords="offset points", fontsize=8, color=c, va="top", ha="right" if right else "left")
    names = [p.run.path.name for p in s.points]
    step = max(1, len(names) // 20)
    ax.set_xticks(xs[::step])
    ax.set_xticklabels([_cut(n, 24) for n in names[::step]], rotation=30, ha="right", fontsize=7)
    ax.set_xlim(-0.5, max(0.5, len(xs) - 0.5))
    ax.set_ylim(bottom=0)
    ax.set_ylabel(NAMES[metric] if unit == NAMES[metric] else f"{NAMES[metric]} ({unit})")
    ax.set_title(f"{s.cell.text()}: {NAMES[metric]} over {len(xs)} runs, oldest first", fontsize=10, loc="left")


def _segments(ax: Axes, s: Series, scale: float, n: int, colour: str) -> None:
    """Each segment's mean between change points, as a thin line over its runs."""
    cps = s.change_points
    if not cps:
        return
    edges = [-0.5, *(cp.index - 0.5 for cp in cps), n - 0.5]
    means = [cps[0].before, *(cp.after for cp in cps)]
    for x0, x1, m in zip(edges, edges[1:], means, strict=False):  # edges: one more than means
        ax.hlines([m / scale], x0, x1, colors=colour, lw=0.8, alpha=0.5, ls=":")


def _cut(text: str, most: int = 90) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def write_trend(h: History, path: Path) -> Path:
    """The figure written as PNG at `path` (its folder made), and closed."""
    fig = trend_figure(h)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
    return path
