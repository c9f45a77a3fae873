"""What every figure of the report shares: style, colours, axes, error bars, legends.

Every figure is WIDTH inches wide, so the HTML shows them at one scale and
their text at one size; a figure with several panels divides that width.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from ..records import TrialRecord
from ..store.reader import Results, metrics_of, result_of
from .tables import MIN_TRIALS, Estimate

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
KIND_COLORS = {
    "connect_refused": "#9467bd", "connect_timeout": "#ff7f0e", "reset": "#d62728", "timeout": "#8c564b",
    "http_5xx": "#e377c2", "http_4xx": "#bcbd22", "protocol_error": "#7f7f7f", "dropped": "#17becf",
    "tls_error": "#2ca02c", "stream_reset": "#1f77b4", "goaway": "#aec7e8",
}
MiB = 1024 * 1024
WIDTH = 11.0
"""Inches: every figure's width."""

plt.rcParams.update({
    "figure.dpi": 100, "savefig.dpi": 110, "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
    "axes.spines.right": False, "legend.frameon": False, "font.size": 10,
})

Value = Callable[[TrialRecord], float | int | None]
"""One number of a measured trial, as plotted (None: not known)."""


def colors(data: Results) -> dict[str, str]:
    """One colour per server, the same in every figure."""
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(data.servers)}


def plain_log(ax: Axes, axis: str = "y", span: float = 100.0) -> None:
    """A log axis labelled 20, 50, 100, 200 ... instead of 2x10^1 (only the
    powers of ten when the values span more than three decades)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    a.set_major_locator(LogLocator(base=10, subs=(1.0,) if span > 1000 else (1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    a.set_minor_locator(NullLocator())


def auto_y(ax: Axes, values: list[float]) -> None:
    """Log scale only when the values span more than 20x; otherwise linear from 0."""
    v = [x for x in values if x is not None and x > 0 and np.isfinite(x)]
    if v and max(v) / min(v) > 20:
        plain_log(ax, span=max(v) / min(v))
    else:
        ax.set_ylim(bottom=0)


def levels_axis(ax: Axes, levels: list[int]) -> None:
    """Ticks at the measured levels; on a log axis, labels only where they do not crowd
    (each at least 1.9x the last labelled one), so 1,000 1,500 2,000 3,000 stay readable."""
    shown = set(levels)
    if len(levels) > 1 and max(levels) / max(1, min(levels)) >= 8:
        ax.set_xscale("log")
        shown = set()
        for lv in levels:
            if not shown or lv / max(shown) >= 1.9 or lv == levels[-1] and lv / max(shown) >= 1.4:
                shown.add(lv)
    ax.set_xticks(levels)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if round(v) in shown else ""))
    if len(shown) > 5:
        for lab in ax.get_xticklabels():
            lab.set_rotation(45)
            lab.set_horizontalalignment("right")
    ax.set_xlabel("concurrent clients")


def per_level(data: Results, server: str, value: Value) -> tuple[list[int], list[Estimate]]:
    """Estimate of value(trial) per level, over the trials that produced a result."""
    xs, es = [], []
    for level in data.levels:
        vals = [v for v in (value(t) for t in data.cell(server, level)) if v is not None]
        if vals:
            xs.append(level)
            es.append(Estimate.of(vals))
    return xs, es


def errplot(ax: Axes, xs: list[int], es: list[Estimate], color: str, label: str, scale: float = 1.0,
            style: str = "-o") -> None:
    """Means with bars of their interval (3+ trials) or range (2); a bar never reaches below 0."""
    if not xs:
        return
    means = np.array([e.mean for e in es], dtype=float) / scale
    lo = np.array([max(0.0, e.spread[0]) if e.spread else e.mean for e in es], dtype=float) / scale
    hi = np.array([e.spread[1] if e.spread else e.mean for e in es], dtype=float) / scale
    ax.errorbar(xs, means, yerr=[np.maximum(0, means - lo), np.maximum(0, hi - means)], fmt=style, color=color,
                label=label, capsize=3, ms=4, lw=1.6)


def bars_note(data: Results) -> str:
    """What the error bars show, from the trials each cell has ('' when one trial each)."""
    ns = {len(data.cell(s, lv)) for s in data.servers for lv in data.levels} - {0}
    if not ns or max(ns) < 2:
        return ""
    parts = (["95 % interval"] if max(ns) >= MIN_TRIALS else []) + (["range of 2 trials"] if 2 in ns else [])
    return f" (bars: {' or '.join(parts)})"


def load_value(t: TrialRecord, key: str) -> Any:
    """A client-side number of a trial (None when it did not run)."""
    r = result_of(t)
    return None if r is None else r.get(key)


def server_value(t: TrialRecord, key: str) -> Any:
    """A server-side number of a trial (None when it was not sampled)."""
    return metrics_of(t).get(key)


def has_server_data(data: Results, key: str) -> bool:
    """Whether any trial has this server-side figure (a bench of a URL has none)."""
    return any(server_value(t, key) is not None for t in data.trials)


def finish(fig: Figure, title: str) -> Figure:
    """The title at the top left, and the panels laid out below it."""
    fig.suptitle(title, fontsize=12, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def legend_below(fig: Figure, ax: Axes, ncol: int | None = None) -> None:
    """One legend for the figure, under it, from one panel's labelled lines (none: no legend)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=ncol or min(len(labels), 4), bbox_to_anchor=(0.5, 0.0))
