"""The report's figures: one function per figure, each returning a matplotlib Figure,
or None when it would have nothing to show (`figures` then says so in one line).

Colours are fixed per server across every figure (`axes.colors`); every axis has
its unit. Concurrency axes are logarithmic when the levels span 8x or more,
with the measured levels as ticks so a reader sees exactly what was run. Where
a server's failures begin (`story.knee`) is marked on figures 1 and 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..load.record.outcomes import FAIL_KINDS
from ..facts import events_of
from ..records import TrialRecord
from ..store.reader import Results, result_of
from .axes import (KIND_COLORS, MiB, WIDTH, Value, bars_note, colors, errplot, finish, has_server_data,
                   legend_below, levels_axis, load_value, per_level, plain_log, plt, server_value)
from .capacity import interval as cap_interval
from .level_figures import first_trial, latency_distribution, timeline
from .story import FAIL_LIMIT, knee
from .tables import per_core
from .tune import tune_doc, tune_history
from . import timeparts

__all__ = ["Drawn", "colors", "default_level", "figures"]


def _level_panels(data: Results, panels: list[tuple[Value, str, str]], title: str,
                  mark: Callable[[Axes, Value], None] | None = None) -> Figure | None:
    """One panel per (value of a trial, y label, title) that has data: every server's mean per
    level with its interval, concurrency on x. None when no panel has data."""
    panels = [p for p in panels if any(p[0](t) is not None for t in data.trials if t.get("result"))]
    if not panels:
        return None
    col = colors(data)
    fig, axes = plt.subplots(1, len(panels), figsize=(WIDTH, 4.6), squeeze=False)
    row = list(axes[0])
    for ax, (get, ylabel, sub) in zip(row, panels, strict=True):
        for s in data.servers:
            xs, es = per_level(data, s, get)
            errplot(ax, xs, es, col[s], s)
        ax.set_ylabel(ylabel)
        ax.set_title(sub, fontsize=10)
        levels_axis(ax, data.levels)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        if mark is not None:
            mark(ax, get)
    fig = finish(fig, title + bars_note(data))
    legend_below(fig, row[0])
    fig.subplots_adjust(bottom=0.24)
    return fig


def _mark_knees(data: Results, ax: Axes, value: Value) -> None:
    """A large hollow ring on each server's curve where its failures begin, with one legend entry."""
    col = colors(data)
    marked = False
    for s in data.servers:
        k = knee(data, s)
        if k is None:
            continue
        xs, es = per_level(data, s, value)
        if k.level in xs and (mean := es[xs.index(k.level)].mean) is not None:
            ax.plot([k.level], [mean], "o", ms=13, mfc="none", mec=col[s], mew=1.6)
            if not marked:  # one grey legend entry for every ring
                ax.plot([], [], "o", ms=13, mfc="none", mec="#555", mew=1.6,
                        label=f"ring: failures > {FAIL_LIMIT:.0%} from here")
            marked = True


# 1 ------------------------------------------------------------------------------------------
def success_vs_concurrency(data: Results) -> Figure | None:
    """Successful requests, requests/s, and requests/s per server core vs concurrency (the paper's
    Figure 4); None when no request succeeded anywhere."""
    if not any(load_value(t, "ok") for t in data.trials):
        return None
    return _level_panels(data, [
        (lambda t: load_value(t, "ok"), "successful requests (count)", "successful requests per measured window"),
        (lambda t: load_value(t, "rps"), "requests per second (ok)", "throughput"),
        (per_core, "requests/s per core of server CPU", "efficiency: req/s ÷ server CPU used"),
    ], "Successful requests vs concurrency", mark=lambda ax, get: _mark_knees(data, ax, get))


def _failures(t: TrialRecord) -> dict[str, int]:
    r = result_of(t)
    return {} if r is None else r["failures"]


def _kinds(data: Results) -> list[str]:
    """The failure kinds to stack: this loadcmp's, then any other a trial counted (`tls_error` of an https
    engine), then the client's dropped requests."""
    found = [k for t in data.trials for k in _failures(t) if k not in FAIL_KINDS and k != "dropped"]
    return [*FAIL_KINDS, *dict.fromkeys(found), "dropped"]


# 2 ------------------------------------------------------------------------------------------
def failures_vs_concurrency(data: Results) -> Figure | None:
    """Failed requests per server vs concurrency, stacked by kind; None when nothing failed."""
    kinds = _kinds(data)
    if not any(_failures(t).get(k) for t in data.trials for k in kinds):
        return None
    servers = data.servers
    n = len(servers)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH, 3.8 * rows + 0.8), squeeze=False, sharey=True)
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
        for j, level in enumerate(levels):
            if not data.cell(s, level):
                ax.text(j, 0, "/", ha="center", va="bottom", fontsize=14, color="#555")
        kn = knee(data, s)
        if kn is not None:
            at = levels.index(kn.level)
            ax.annotate(f"failures begin:\n{kn.rate:.1%} failed", (at, bottom[at]),
                        xytext=(0, 4), textcoords="offset points", ha="center", va="bottom", fontsize=8, color="#333")
        ax.set_title(s, fontsize=10)
        ax.set_xticks(x, [f"{lv:,}" for lv in levels], rotation=45 if len(levels) > 4 else 0,
                      ha="right" if len(levels) > 4 else "center")
        ax.set_xlabel("concurrent clients")
        if i % cols == 0:
            ax.set_ylabel("failed requests\n(count, mean of trials)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        if bottom.sum() == 0:
            ax.text(0.5, 0.5, "no failures", transform=ax.transAxes, ha="center", color="#2ca02c")
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    axes[0][0].set_ylim(0, axes[0][0].get_ylim()[1] * 1.18)  # room for "failures begin" (the y axis is shared)
    missing = any(not data.cell(s, lv) for s in servers for lv in levels)
    fig = finish(fig, "Failures vs concurrency, by kind" + ("  ('/' = level could not run)" if missing else ""))
    handles = [plt.Rectangle((0, 0), 1, 1, color=KIND_COLORS.get(k, "#333")) for k in kinds if k in used]
    fig.legend(handles, [k for k in kinds if k in used], loc="lower center", ncol=min(len(used), 4))
    fig.subplots_adjust(bottom=0.25 if rows == 1 else 0.14)
    return fig


# 5 ------------------------------------------------------------------------------------------
def memory_and_processes(data: Results) -> Figure | None:
    """Server peak memory and process/thread count vs concurrency; None when the server was not sampled."""
    if not has_server_data(data, "mem_peak_bytes"):
        return None
    col = colors(data)
    fig, (a, b) = plt.subplots(1, 2, figsize=(WIDTH, 4.6))
    for s in data.servers:
        xs, es = per_level(data, s, lambda t: server_value(t, "mem_peak_bytes"))
        errplot(a, xs, es, col[s], s, scale=MiB)
        xs, es = per_level(data, s, lambda t: server_value(t, "pids_peak"))
        errplot(b, xs, es, col[s], s)
        xs, es = per_level(data, s, lambda t: server_value(t, "procs_peak"))
        errplot(b, xs, es, col[s], s, style="--s")
    caps: dict[int, list[str]] = {}
    for r in data.runs:
        for name, info in r.doc.get("servers", {}).items():
            if cap := info.get("memory_bytes"):
                caps.setdefault(int(cap), []).append(name)
    for cap, names in caps.items():
        a.axhline(cap / MiB, color="#555", ls="--", lw=1)
        a.text(min(data.levels), cap / MiB, f" memory cap of {', '.join(names)}", va="bottom", fontsize=8,
               color="#555")
    a.set_ylabel("peak memory (MiB)")
    a.set_title("server memory, peak per trial", fontsize=10)
    b.set_ylabel("peak count (solid threads, dashed processes)")
    b.set_title("server processes and threads", fontsize=10)
    for ax in (a, b):
        levels_axis(ax, data.levels)
        ax.set_ylim(bottom=0)
    fig = finish(fig, "Server memory and processes vs concurrency" + bars_note(data))
    legend_below(fig, a)  # servers by colour; panel b's y label says which line is threads, which processes
    fig.subplots_adjust(bottom=0.24)
    return fig


# 6 ------------------------------------------------------------------------------------------
def workers_and_connections(data: Results) -> Figure | None:
    """Busy workers (status pages) and TCP connections vs concurrency, the panels that have data."""
    return _level_panels(data, [
        (lambda t: server_value(t, "busy_workers_peak"), "busy workers, peak (count)",
         "busy workers\n(the stack's busy_workers column)"),
        (lambda t: server_value(t, "tcp_established_peak"), "ESTABLISHED sockets, peak",
         "open connections\non the server port"),
        (lambda t: server_value(t, "tcp_peak"), "sockets in any state, peak", "all sockets\n(TIME_WAIT included)"),
    ], "Busy workers and TCP connections vs concurrency")


# 0 ------------------------------------------------------------------------------------------
def capacity_probes(data: Results) -> Figure | None:
    """A capacity search per server: each probe on the load axis in order (met ●, missed ✕, confirmations
    ■ / ▲), and the edge found shaded from the level met to the level missed; None without a search."""
    found = data.capacity
    if not found:
        return None
    col = colors(data)
    labels = list(found)
    fig, ax = plt.subplots(figsize=(WIDTH, 2.2 + 0.8 * len(labels)))
    levels = [st["level"] for _, doc in found.values() for st in doc["path"]]
    for y, label in enumerate(labels):
        search, doc = found[label]
        iv = cap_interval(doc)
        if iv is not None:
            right = iv[1] if math.isfinite(iv[1]) else max(levels) * 1.3
            ax.fill_betweenx([y - 0.3, y + 0.3], max(iv[0], min(levels) * 0.8), right, color=col[label], alpha=0.18,
                             lw=0)
            if doc["kind"] in ("capacity", "at_least", "not_reached") and doc["level"] is not None:
                ax.plot([doc["level"]] * 2, [y - 0.34, y + 0.34], color=col[label], lw=2.4)
        for i, st in enumerate(doc["path"], 1):
            confirm = st["stage"] == "confirm"
            marker = ("s" if st["met"] else "^" if st["met"] is False else "D") if confirm else \
                ("o" if st["met"] else "x")
            colour = "#2ca02c" if st["met"] else "#d62728" if st["met"] is False else "#9a6700"
            dy = -0.2 if confirm else 0.0  # above the probes (the axis runs downwards)
            ax.plot([st["level"]], [y + dy], marker, color=colour, ms=7 if confirm else 6, mfc="none" if confirm
                    else colour, mew=1.6)
            if not confirm:
                ax.annotate(str(i), (st["level"], y), xytext=(0, -12), textcoords="offset points", ha="center",
                            fontsize=7, color="#555")
    for handle, text in ((("o", "#2ca02c", "#2ca02c"), "probe met"), (("x", "#d62728", "#d62728"), "probe missed"),
                         (("s", "#2ca02c", "none"), "confirmed met"), (("^", "#d62728", "none"), "confirmed missed"),
                         (("D", "#9a6700", "none"), "confirmation unsure")):
        ax.plot([], [], handle[0], color=handle[1], mfc=handle[2], label=text)
    ax.plot([], [], "-", color="#555", lw=2.4, label="capacity found (shaded: up to the level missed)")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.invert_yaxis()
    unit = next(iter(found.values()))[0]["unit"]
    if max(levels) / max(1, min(levels)) >= 8:
        plain_log(ax, "x", span=max(levels) / max(1, min(levels)))
    ax.set_xlabel("concurrent clients" if unit == "clients" else "requests per second (offered)")
    target = next(iter(found.values()))[0]["target"]
    fig = finish(fig, f"Capacity search: {target} (numbers: the order of the probes)")
    legend_below(fig, ax, ncol=3)
    fig.subplots_adjust(bottom=0.36 if len(labels) < 3 else 0.26)
    return fig


@dataclass(frozen=True)
class Drawn:
    """One figure of the report: its file stem and caption, and the figure, or the line said instead."""

    stem: str
    caption: str
    figure: Figure | None
    instead: str | None = None  #: when there is nothing to draw: why, in one line
    lacking: str | None = None  #: what a file that could not be read took from it (said on the console too)


def figures(data: Results, level: int | None = None) -> list[Drawn]:
    """The report's figures in order (a capacity search's first); those with nothing to show carry one line
    instead."""
    lv = level if level is not None else default_level(data)
    first = [Drawn("0-tune", "The tuning study: each trial's value in the order it ran, the best so far, the "
                   "baseline dashed; beside it, which parameters mattered.", tune_history(data))] \
        if tune_doc(data) else []
    first += [Drawn("0-capacity", "The capacity search of each server: every probe on the load axis in the order "
                   "it ran (met or missed), the confirmation trials' verdicts, and the edge found.",
                   capacity_probes(data))] if data.capacity else []
    return first + [
        Drawn("1-success", "Successful requests in the measured window and requests/s"
              + (" and requests/s per core of server CPU" if any(per_core(t) for t in data.trials) else "")
              + ", per server, as concurrency grows"
              + ("; a ring marks where a server's failures begin." if any(knee(data, s) for s in data.servers)
                 else "."),
              success_vs_concurrency(data), "No request succeeded at any level."),
        Drawn("2-failures", "Failed requests by kind (refused, timeouts, resets, 5xx …) at each level.",
              failures_vs_concurrency(data), "No request failed at any level: there is no failure to draw."),
        _timeline(data, lv),
        Drawn("4-latency", f"How latency is spread at {lv:,} clients, pooled over the trials: histogram and "
              "percentile spectrum, log scales.", latency_distribution(data, lv),
              f"No response was timed at {lv:,} clients: no latency to draw."),
        Drawn("5-memory", "Peak server memory and number of processes/threads per level.",
              memory_and_processes(data), _not_sampled(data, "memory or processes")),
        Drawn("6-workers", "Busy workers from the status pages and sockets on the server port per level.",
              workers_and_connections(data), _not_sampled(data, "busy workers or sockets")),
        *timeparts_figure(data),
    ]


def timeparts_figure(data: Results) -> list[Drawn]:
    """--trace: where the time of p99 went, per level (none for a run that was not traced)."""
    fig = timeparts.figure(data)
    return [] if fig is None else [Drawn("7-timeparts", "Where the time of p99 went (--trace): each part's "
                                         "milliseconds, stacked per level, one panel per server.", fig)]


UNREAD_ROWS = {"timeline": "some servers' per-second rows", "server": "the server's rows"}
"""What figure 3 lacks when a folder's per-second table (`store.reader.Unread.table`) could not be read."""


def _timeline(data: Results, lv: int) -> Drawn:
    """Figure 3, and what a per-second table that could not be read took from it: the whole figure
    (timeline.parquet) or the server's rows (server.parquet)."""
    unread = {side: "; ".join(f"{u.file} is missing" if u.damage is None else f"{u.file} is damaged ({u.damage})"
                              for u in data.unread if u.table == side) for side in UNREAD_ROWS}
    fig = timeline(data, lv, unsampled="server.parquet could not be read" if unread["server"] and
                   data.server.empty else "the server was not sampled")
    caption = (f"Second by second at {lv:,} clients (trial {first_trial(data, lv)}): throughput, failures and "
               "latency" + (", with the server's CPU, memory and sockets below." if not data.server.empty else ".")
               + (" Dotted upright lines: each --event as it fired." if any(events_of(t) for t in data.trials) else ""))
    if fig is None and unread["timeline"]:
        why = f"not drawn: {unread['timeline']}"
        return Drawn("3-timeline", caption, None, f"Second by second at {lv:,} clients, {why}: the per-second "
                     "records this figure draws are kept there.", why)
    if fig is None:
        return Drawn("3-timeline", caption, None, f"No per-second record at {lv:,} clients to draw.")
    lacking = "; ".join(f"drawn without {what}: {unread[side]}" for side, what in UNREAD_ROWS.items() if unread[side])
    if not lacking:
        return Drawn("3-timeline", caption, fig)
    return Drawn("3-timeline", f"{caption} {lacking[:1].upper()}{lacking[1:]}.", fig, lacking=lacking)


def _not_sampled(data: Results, what: str) -> str:
    if all(r.doc.get("kind") == "bench" for r in data.runs):
        return f"No server {what} to draw: bench loads a URL and does not sample the server."
    return f"No server {what} to draw: the server was not sampled."


def default_level(data: Results) -> int:
    """The highest level every server was measured at (else the highest at all)."""
    levels = data.levels
    for level in reversed(levels):
        if all(data.cell(s, level) for s in data.servers):
            return level
    return levels[-1]

