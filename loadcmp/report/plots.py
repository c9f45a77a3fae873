"""The report's figures: one function per figure, each returning a matplotlib Figure.

Colours are fixed per server across every figure (`colors`); every axis has
its unit. Concurrency axes are logarithmic because the levels span 50..15000,
with the measured levels as ticks so a reader sees exactly what was run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator  # noqa: E402

from ..load.outcomes import FAIL_KINDS  # noqa: E402
from ..load.recorder import Histogram  # noqa: E402
from ..results import Results, metrics_of, result_of  # noqa: E402
from ..records import TrialRecord  # noqa: E402
from .tables import Estimate  # noqa: E402

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
KIND_COLORS = {
    "connect_refused": "#9467bd", "connect_timeout": "#ff7f0e", "reset": "#d62728", "timeout": "#8c564b",
    "http_5xx": "#e377c2", "http_4xx": "#bcbd22", "protocol_error": "#7f7f7f", "dropped": "#17becf",
}
MiB = 1024 * 1024

plt.rcParams.update({
    "figure.dpi": 100, "savefig.dpi": 110, "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
    "axes.spines.right": False, "legend.frameon": False, "font.size": 10,
})


def colors(data: Results) -> dict[str, str]:
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(data.servers)}


def _plain_log(ax: Any, axis: str = "y", span: float = 100.0) -> None:
    """A log axis labelled 20, 50, 100, 200 ... instead of 2x10^1 (only the
    powers of ten when the values span more than three decades)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    a.set_major_locator(LogLocator(base=10, subs=(1.0,) if span > 1000 else (1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    a.set_minor_locator(NullLocator())


def _auto_y(ax: Any, values: list[float]) -> None:
    """Log scale only when the values span more than 20x; otherwise linear from 0."""
    v = [x for x in values if x is not None and x > 0 and np.isfinite(x)]
    if v and max(v) / min(v) > 20:
        _plain_log(ax, span=max(v) / min(v))
    else:
        ax.set_ylim(bottom=0)


def _levels_axis(ax: Any, levels: list[int]) -> None:
    if len(levels) > 1 and max(levels) / max(1, min(levels)) >= 8:
        ax.set_xscale("log")
    ax.set_xticks(levels)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    if len(levels) > 6:
        for lab in ax.get_xticklabels():
            lab.set_rotation(45)
            lab.set_ha("right")
    ax.set_xlabel("concurrent clients")


Value = Callable[[TrialRecord], float | int | None]
"""One number of a measured trial, as plotted (None: not known)."""


def _per_level(data: Results, server: str, value: Value) -> tuple[list[int], list[Estimate]]:
    """Estimate of value(trial) per level, over the trials that produced a result."""
    xs, es = [], []
    for level in data.levels:
        vals = [v for v in (value(t) for t in data.cell(server, level)) if v is not None]
        if vals:
            xs.append(level)
            es.append(Estimate.of(vals))
    return xs, es


def _errplot(ax: Any, xs: list[int], es: list[Estimate], color: str, label: str, scale: float = 1.0,
             style: str = "-o") -> None:
    if not xs:
        return
    means = np.array([e.mean for e in es], dtype=float) / scale
    lo = np.array([e.low if e.low is not None else e.mean for e in es], dtype=float) / scale
    hi = np.array([e.high if e.high is not None else e.mean for e in es], dtype=float) / scale
    ax.errorbar(xs, means, yerr=[np.maximum(0, means - lo), np.maximum(0, hi - means)], fmt=style, color=color,
                label=label, capsize=3, ms=4, lw=1.6)


def _load(t: TrialRecord, key: str) -> Any:
    """A client-side number of a trial (None when it did not run)."""
    r = result_of(t)
    return None if r is None else r.get(key)


def _server(t: TrialRecord, key: str) -> Any:
    """A server-side number of a trial (None when it was not sampled)."""
    return metrics_of(t).get(key)


def _finish(fig: Figure, title: str) -> Figure:
    fig.suptitle(title, fontsize=12, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def _legend_below(fig: Figure, ax: Any, ncol: int | None = None) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=ncol or min(len(labels), 5), bbox_to_anchor=(0.5, 0.0))


def _level_panels(data: Results, panels: list[tuple[Value, str, str]]) -> tuple[Figure, list[Any]]:
    """One panel per (value of a trial, y label, title), every server's mean per
    level with its 95 % interval, concurrency on x."""
    col = colors(data)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels) + 0.5, 4.4), squeeze=False)
    row = list(axes[0])
    for ax, (get, ylabel, title) in zip(row, panels, strict=True):
        for s in data.servers:
            xs, es = _per_level(data, s, get)
            _errplot(ax, xs, es, col[s], s)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        _levels_axis(ax, data.levels)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    return fig, row


# 1 ------------------------------------------------------------------------------------------
def success_vs_concurrency(data: Results) -> Figure:
    """Successful requests and requests/s per server vs concurrency (the paper's Figure 4)."""
    fig, (a, _) = _level_panels(data, [
        (lambda t: _load(t, "ok"), "successful requests (count)", "successful requests per measured window"),
        (lambda t: _load(t, "rps"), "requests per second (ok)", "throughput"),
    ])
    fig = _finish(fig, "Successful requests vs concurrency" + (" (bars: 95 % interval)" if _has_trials(data) else ""))
    _legend_below(fig, a)
    fig.subplots_adjust(bottom=0.27)
    return fig


def _failures(t: TrialRecord) -> dict[str, int]:
    r = result_of(t)
    return {} if r is None else r["failures"]


def _has_trials(data: Results) -> bool:
    return any(t["trial"] > 1 for t in data.trials)


# 2 ------------------------------------------------------------------------------------------
def failures_vs_concurrency(data: Results) -> Figure:
    """Failed requests per server vs concurrency, stacked by kind."""
    servers = data.servers
    n = len(servers)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols + 1, 3.6 * rows + 0.6), squeeze=False, sharey=True)
    kinds = [*FAIL_KINDS, "dropped"]
    used: set[str] = set()
    levels = data.levels
    x = np.arange(len(levels))
    for i, s in enumerate(servers):
        ax = axes[i // cols][i % cols]
        bottom = np.zeros(len(levels))
        for k in kinds:
            vals = []
            for level in levels:
                v = [_failures(t).get(k, 0) for t in data.cell(s, level)]
                vals.append(sum(v) / len(v) if v else 0)
            arr = np.array(vals, dtype=float)
            if arr.sum() > 0:
                ax.bar(x, arr, bottom=bottom, color=KIND_COLORS.get(k, "#333"), label=k, width=0.7)
                bottom += arr
                used.add(k)
        not_run = [j for j, level in enumerate(levels) if not data.cell(s, level)]
        for j in not_run:
            ax.text(j, 0, "/", ha="center", va="bottom", fontsize=14, color="#555")
        ax.set_title(s, fontsize=10)
        ax.set_xticks(x, [f"{lv:,}" for lv in levels], rotation=45 if len(levels) > 5 else 0,
                      ha="right" if len(levels) > 5 else "center")
        ax.set_xlabel("concurrent clients")
        if i % cols == 0:
            ax.set_ylabel("failed requests (count, mean of trials)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        if bottom.sum() == 0:
            ax.text(0.5, 0.5, "no failures", transform=ax.transAxes, ha="center", color="#2ca02c")
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig = _finish(fig, "Failures vs concurrency, by kind  ('/' = level could not run)")
    if used:
        handles = [plt.Rectangle((0, 0), 1, 1, color=KIND_COLORS.get(k, "#333")) for k in kinds if k in used]
        fig.legend(handles, [k for k in kinds if k in used], loc="lower center", ncol=min(len(used), 6))
        fig.subplots_adjust(bottom=0.22 if rows == 1 else 0.14)
    return fig


# 3 ------------------------------------------------------------------------------------------
def timeline(data: Results, level: int, trial: int = 1) -> Figure:
    """Per second at one level: req/s, failures/s, p50/p99 latency; the server's
    CPU, memory and TCP connections on the same time axis."""
    col = colors(data)
    fig, axes = plt.subplots(5, 1, figsize=(11, 11), sharex=True)
    tl, sv = data.timeline, data.server
    lat_values: list[float] = []
    for s in data.servers:
        c = col[s]
        if not tl.empty:
            d = tl[(tl.server == s) & (tl.level == level) & (tl.trial == trial)].sort_values("second")
            if not d.empty:
                t = d.second + 1
                axes[0].plot(t, d.ok, color=c, label=s, lw=1.6)
                axes[0].plot(t, d.failed, color=c, lw=1.2, ls=":")
                axes[1].plot(t, d.p99_ms, color=c, lw=1.6)
                axes[1].plot(t, d.p50_ms, color=c, lw=1.0, ls="--")
                lat_values += [float(x) for x in d.p99_ms.dropna()] + [float(x) for x in d.p50_ms.dropna()]
        if not sv.empty:
            d = sv[(sv.server == s) & (sv.level == level) & (sv.trial == trial)].sort_values("second")
            if not d.empty:
                t = d.second + 1
                if "cpu_pct" in d:
                    axes[2].plot(t, d.cpu_pct, color=c, lw=1.6)
                if "mem_bytes" in d:
                    axes[3].plot(t, d.mem_bytes / MiB, color=c, lw=1.6)
                if "tcp_estab" in d:
                    axes[4].plot(t, d.tcp_estab, color=c, lw=1.6)
                if "tcp_time_wait" in d:
                    axes[4].plot(t, d.tcp_time_wait, color=c, lw=1.0, ls=":")
    axes[0].set_ylabel("per second\n(solid ok, dotted failed)")
    axes[1].set_ylabel("latency ms\n(solid p99, dashed p50)")
    axes[2].set_ylabel("server CPU %\n(100 = one core)")
    axes[3].set_ylabel("server memory MiB")
    axes[4].set_ylabel("TCP sockets\n(solid estab., dotted TIME_WAIT)")
    axes[4].set_xlabel("seconds into the measured window")
    for ax in axes:
        if ax is not axes[1]:
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    _auto_y(axes[1], lat_values)
    axes[4].xaxis.set_major_locator(MaxNLocator(integer=True))
    fig = _finish(fig, f"Timeline at {level:,} clients (trial {trial}): client side above, server side below")
    _legend_below(fig, axes[0])
    fig.subplots_adjust(bottom=0.08)
    return fig


# 4 ------------------------------------------------------------------------------------------
def latency_distribution(data: Results, level: int) -> Figure:
    """Latency histogram and percentile spectrum per server at one level (log scales)."""
    col = colors(data)
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.4))
    any_data = False
    for s in data.servers:
        h = Histogram()
        for t in data.cell(s, level):
            if "latency_hist" in t:
                h = h.merge(Histogram.from_dict(t["latency_hist"]))
        if h.count == 0:
            continue
        any_data = True
        b_ms = h.buckets_ms()
        lo = max(1e-3, min(x[0] for x in b_ms))
        hi = max(x[1] for x in b_ms)
        edges = np.geomspace(lo, hi * 1.0001, 40)
        counts = np.zeros(len(edges) - 1)
        for a0, a1, c in b_ms:
            j = min(len(counts) - 1, max(0, int(np.searchsorted(edges, math.sqrt(a0 * a1)) - 1)))
            counts[j] += c
        a.stairs(counts / h.count * 100, edges, color=col[s], label=s, lw=1.6)
        qs = np.array([50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99])
        qs = qs[qs < 100 - 100 / max(h.count, 1)] if h.count < 10000 else qs
        vals = [(h.percentile(q) or 0.0) * 1000 for q in qs]
        b.plot(1 / (1 - qs / 100), vals, "-o", color=col[s], label=s, ms=3, lw=1.6)
    _plain_log(a, "x")
    a.set_xlabel("latency (ms, log scale)")
    a.set_ylabel("share of responses (%)")
    a.set_title("histogram", fontsize=10)
    b.set_xscale("log")
    _plain_log(b, "y")
    ticks = [2, 10, 100, 1000, 10000]
    b.set_xticks(ticks, ["50%", "90%", "99%", "99.9%", "99.99%"])
    b.xaxis.set_minor_locator(NullLocator())
    b.set_xlabel("percentile")
    b.set_ylabel("latency (ms, log scale)")
    b.set_title("percentile spectrum (wrk2 style)", fontsize=10)
    if not any_data:
        a.text(0.5, 0.5, "no responses at this level", transform=a.transAxes, ha="center")
    fig = _finish(fig, f"Latency distribution at {level:,} clients (from intended start, all trials)")
    _legend_below(fig, a)
    fig.subplots_adjust(bottom=0.25)
    return fig


# 5 ------------------------------------------------------------------------------------------
def memory_and_processes(data: Results) -> Figure:
    """Server peak memory and process/thread count vs concurrency."""
    col = colors(data)
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.4))
    for s in data.servers:
        xs, es = _per_level(data, s, lambda t: _server(t, "mem_peak_bytes"))
        _errplot(a, xs, es, col[s], s, scale=MiB)
        xs, es = _per_level(data, s, lambda t: _server(t, "pids_peak"))
        _errplot(b, xs, es, col[s], f"{s} threads")
        xs, es = _per_level(data, s, lambda t: _server(t, "procs_peak"))
        _errplot(b, xs, es, col[s], f"{s} processes", style="--s")
    caps = {int(cap) for r in data.runs for info in r.doc.get("servers", {}).values() if (cap := info.get("memory_bytes"))}
    for cap in caps:
        a.axhline(cap / MiB, color="#555", ls="--", lw=1)
        a.text(min(data.levels), cap / MiB, " memory cap", va="bottom", fontsize=8, color="#555")
    a.set_ylabel("peak memory (MiB)")
    a.set_title("server memory, peak per trial", fontsize=10)
    b.set_ylabel("peak count (solid threads, dashed processes)")
    b.set_title("server processes and threads", fontsize=10)
    for ax in (a, b):
        _levels_axis(ax, data.levels)
        ax.set_ylim(bottom=0)
    fig = _finish(fig, "Server memory and processes vs concurrency")
    _legend_below(fig, a)
    fig.subplots_adjust(bottom=0.27)
    return fig


# 6 ------------------------------------------------------------------------------------------
def workers_and_connections(data: Results) -> Figure:
    """Busy workers (status pages) and TCP connections vs concurrency."""
    fig, (a, _, _) = _level_panels(data, [
        (lambda t: _server(t, "busy_workers_peak"), "busy workers, peak (count)",
         "busy workers\n(Apache: mod_status; nginx: php-fpm)"),
        (lambda t: _server(t, "tcp_established_peak"), "ESTABLISHED sockets, peak (count)",
         "open connections on the server port"),
        (lambda t: _server(t, "tcp_peak"), "sockets in any state, peak (count)", "all sockets (TIME_WAIT included)"),
    ])
    fig = _finish(fig, "Busy workers and TCP connections vs concurrency")
    _legend_below(fig, a)
    fig.subplots_adjust(bottom=0.27)
    return fig


def figures(data: Results, level: int | None = None) -> list[tuple[str, Figure, str]]:
    """All six figures as (file stem, figure, one-line caption)."""
    lv = level if level is not None else default_level(data)
    return [
        ("1-success", success_vs_concurrency(data),
         "Successful requests in the measured window and requests/s, per server, as concurrency grows."),
        ("2-failures", failures_vs_concurrency(data),
         "Failed requests by kind (refused, timeouts, resets, 5xx …) at each level; '/' where a level could not run."),
        ("3-timeline", timeline(data, lv),
         f"Second by second at {lv:,} clients: throughput, failures and latency, with the server's CPU, memory and sockets below."),
        ("4-latency", latency_distribution(data, lv),
         f"How latency is spread at {lv:,} clients: histogram and percentile spectrum, log scales."),
        ("5-memory", memory_and_processes(data),
         "Peak server memory and number of processes/threads per level: the memory claims, measured."),
        ("6-workers", workers_and_connections(data),
         "Busy workers from the status pages and sockets on the server port per level."),
    ]


def default_level(data: Results) -> int:
    """The highest level every server was measured at (else the highest at all)."""
    levels = data.levels
    for level in reversed(levels):
        if all(data.cell(s, level) for s in data.servers):
            return level
    return levels[-1]
