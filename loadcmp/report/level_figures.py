"""The report's figures at one level: second by second (3), and how latency is spread (4)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

from typing import TYPE_CHECKING

from ..facts import events_of
from ..store.reader import Results, metrics_of
from ..units import ms
from .axes import MiB, WIDTH, auto_y, colors, finish, legend_below, plain_log, plt

if TYPE_CHECKING:
    import pandas as pd

SERVER_ROWS = (("cpu_pct", "server CPU %\n(100 = one core)"), ("mem_bytes", "server memory MiB"),
               ("tcp_estab", "TCP sockets\n(solid estab., dotted TIME_WAIT)"))


APART_ROWS = ("cpu_pct", "mem_bytes")
"""The rows where the roles measured apart (an app's database) are drawn beside the server."""


def apart_roles(sv: pd.DataFrame) -> list[str]:
    """The column prefixes of the roles measured apart (`db_` of `db_cpu_pct`)."""
    return sorted(c.removesuffix("cpu_pct") for c in getattr(sv, "columns", ()) if c.endswith("_cpu_pct"))


def limits_of(data: Results) -> dict[str, tuple[str, int]]:
    """Status columns whose peak a limit is known for (connections in use against max_connections)."""
    out: dict[str, tuple[str, int]] = {}
    for t in data.trials:
        for k, (setting, limit) in (metrics_of(t).get("limits") or {}).items():
            out.setdefault(k, (str(setting), limit))
    return out


def first_trial(data: Results, level: int) -> int | None:
    """The first trial with per-second rows at a level (None: none has)."""
    tl = data.timeline
    if tl.empty:
        return None
    trials = sorted(set(tl[tl.level == level].trial))
    return int(trials[0]) if trials else None


def timeline(data: Results, level: int, trial: int | None = None,
             unsampled: str = "the server was not sampled") -> Figure | None:
    """Per second at one level: req/s, failures/s, p50/p99 latency; the server's CPU, memory
    and TCP connections on the same time axis (those rows only where the server was sampled;
    `unsampled` says why there are none). None when no trial has per-second rows there."""
    trial = trial if trial is not None else first_trial(data, level)
    if trial is None:
        return None
    col = colors(data)
    apart = apart_roles(data.server)
    shown = _server_rows(data, apart)
    fig, grid = plt.subplots(2 + len(shown), 1, figsize=(WIDTH, 2.2 * (2 + len(shown)) + 1), sharex=True,
                             squeeze=False)
    axes = list(grid[:, 0])
    lat_values: list[float] = []
    for s in data.servers:
        lat_values += _client_lines(axes[0], axes[1], data, (s, level, trial), col[s])
        if shown:
            _server_lines(axes[2:], shown, apart, data, (s, level, trial), col[s])
        for ev in (e for t in data.cell(s, level) if t["trial"] == trial for e in events_of(t)):  # --event's
            for ax in axes:
                ax.axvline(ev["start_s"], color=col[s], lw=0.9, ls=(0, (1, 2)))
    _label_axes(axes, shown, lat_values)
    below = "client side above, server side below" if shown else f"client side ({unsampled})"
    fig = finish(fig, f"Timeline at {level:,} clients (trial {trial}): {below}")
    legend_below(fig, axes[0])
    fig.subplots_adjust(bottom=0.08 if shown else 0.2)
    return fig


Cell = tuple[str, int, int]
"""A server, a level and a trial: whose per-second rows a line draws."""


def _server_rows(data: Results, apart: list[str]) -> list[tuple[str, str]]:
    """The server-side rows that have samples (column, y label); the roles measured apart beside the server
    in CPU and memory, and a row per status column whose limit is known."""
    sv = data.server
    beside = f"\n(dash-dot: {', '.join(p.rstrip('_') for p in apart)})" if apart else ""
    shown = [(k, label + (beside if k in APART_ROWS else ""))
             for k, label in SERVER_ROWS if not sv.empty and k in sv and sv[k].notna().any()]
    limits = {k: v for k, v in limits_of(data).items()
              if k.startswith(tuple(apart)) and k in sv and sv[k].notna().any()}
    return shown + [(k, f"{k}\n(of {setting} {limit:,})") for k, (setting, limit) in limits.items()]


def _rows(frame: pd.DataFrame, cell: Cell) -> pd.DataFrame:
    """One cell's per-second rows in order (an empty frame when the table is)."""
    if frame.empty:
        return frame
    s, level, trial = cell
    return frame[(frame.server == s) & (frame.level == level) & (frame.trial == trial)].sort_values("second")


def _client_lines(rate: Axes, latency: Axes, data: Results, cell: Cell, c: str) -> list[float]:
    """A server's ok and failed per second, and its p99 and p50; returns the latencies drawn (for the scale)."""
    d = _rows(data.timeline, cell)
    if d.empty:
        return []
    t = d.second + 1
    rate.plot(t, d.ok, color=c, label=cell[0], lw=1.6)
    rate.plot(t, d.failed, color=c, lw=1.2, ls=":")
    latency.plot(t, d.p99_ms, color=c, lw=1.6)
    latency.plot(t, d.p50_ms, color=c, lw=1.0, ls="--")
    return [float(x) for x in d.p99_ms.dropna()] + [float(x) for x in d.p50_ms.dropna()]


def _server_lines(axes: list[Axes], shown: list[tuple[str, str]], apart: list[str], data: Results, cell: Cell,
                  c: str) -> None:
    """A server's sampled rows, one axis each; its roles measured apart dash-dot, TIME_WAIT dotted."""
    d = _rows(data.server, cell)
    if d.empty:
        return
    t = d.second + 1
    for ax, (key, _) in zip(axes, shown, strict=True):
        ax.plot(t, d[key] / MiB if key == "mem_bytes" else d[key], color=c, lw=1.6)
        for pre in apart if key in APART_ROWS else ():
            if pre + key in d:
                ax.plot(t, d[pre + key] / MiB if key == "mem_bytes" else d[pre + key], color=c, lw=1.2, ls="-.")
        if key == "tcp_estab" and "tcp_time_wait" in d:
            ax.plot(t, d.tcp_time_wait, color=c, lw=1.0, ls=":")


def _label_axes(axes: list[Axes], shown: list[tuple[str, str]], lat_values: list[float]) -> None:
    """Units on every row; counts from 0, latency on the scale its values need, whole seconds below."""
    axes[0].set_ylabel("per second\n(solid ok, dotted failed)")
    axes[1].set_ylabel("latency ms\n(solid p99, dashed p50)")
    for ax, (_, label) in zip(axes[2:], shown, strict=True):
        ax.set_ylabel(label)
    axes[-1].set_xlabel("seconds into the measured window")
    for ax in axes:
        if ax is not axes[1]:
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    auto_y(axes[1], lat_values)
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))


def latency_distribution(data: Results, level: int) -> Figure | None:
    """Latency histogram and percentile spectrum per server at one level (log scales), pooled over
    the trials; None when no response was timed there."""
    if not any(data.pooled_latency(s, level).count for s in data.servers):
        return None
    col = colors(data)
    fig, (a, b) = plt.subplots(1, 2, figsize=(WIDTH, 4.4))
    for s in data.servers:
        h = data.pooled_latency(s, level)
        if h.count == 0:
            continue
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
        vals = [ms(h.percentile(q)) or 0.0 for q in qs]
        b.plot(1 / (1 - qs / 100), vals, "-o", color=col[s], label=s, ms=3, lw=1.6)
    plain_log(a, "x")
    a.set_xlabel("latency (ms, log scale)")
    a.set_ylabel("share of responses (%)")
    a.set_title("histogram", fontsize=10)
    b.set_xscale("log")
    plain_log(b, "y")
    ticks = [2, 10, 100, 1000, 10000]
    b.set_xticks(ticks, ["50%", "90%", "99%", "99.9%", "99.99%"])
    b.xaxis.set_minor_locator(NullLocator())
    b.set_xlabel("percentile")
    b.set_ylabel("latency (ms, log scale)")
    b.set_title("percentile spectrum (wrk2 style)", fontsize=10)
    fig = finish(fig, f"Latency at {level:,} clients, pooled over the trials (from each request's intended start)")
    legend_below(fig, a)
    fig.subplots_adjust(bottom=0.25)
    return fig
