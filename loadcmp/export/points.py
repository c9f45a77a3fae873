"""The records made series: a second's client row, a server row, a trial's end, and the one place that keeps
each series' value (`Series`), for the live endpoint (the value now) and the stored export (the value at each
second).

The rows are the ones the store keeps (timeline.parquet's `summary.second_row`, server.parquet's sampler rows,
run.json's trial records), so both sides say the same of the same second. Nothing is parsed from text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..load.record.histogram import Histogram
from ..facts import EventDoc
from ..records import OUTCOME_KINDS as KINDS, TrialRecord
from .families import LATENCY_EDGES, QUANTILES

Labels = tuple[str, ...]


@dataclass(frozen=True)
class Point:
    """One value of one series: `add` says it is an increment of a counter, otherwise the value itself."""

    family: str
    labels: Labels  #: the family's own labels' values, after the trial's
    value: float
    add: bool = False


@dataclass
class Buckets:
    """A latency histogram as Prometheus counts it: cumulative counts at `LATENCY_EDGES`, the sum, the count."""

    counts: list[int] = field(default_factory=lambda: [0] * len(LATENCY_EDGES))
    total: int = 0
    sum_s: float = 0.0

    def add(self, h: Histogram) -> None:
        for j, (k, _) in enumerate(LATENCY_EDGES):
            self.counts[j] += int(h.cnt[h.idx < k].sum())
        self.total += h.count
        self.sum_s += h.total_s

    def copy(self) -> Buckets:
        return Buckets(list(self.counts), self.total, self.sum_s)

    def pairs(self) -> list[tuple[str, float]]:
        return [*((le, float(c)) for (_, le), c in zip(LATENCY_EDGES, self.counts, strict=True)),
                ("+Inf", float(self.total))]


@dataclass
class Series:
    """Every series' value, by (family, trial labels + own labels); a counter's increments summed."""

    values: dict[tuple[str, Labels], float] = field(default_factory=dict)
    hists: dict[Labels, Buckets] = field(default_factory=dict)
    stamps: dict[tuple[str, Labels], float] = field(default_factory=dict)
    """When a value was true on the wall clock, where the record says (the end of a window's second)."""

    def take(self, trial: Labels, points: Iterable[Point], at: float | None = None) -> list[tuple[str, Labels]]:
        """Lay the points over the values, stamped `at` (None: when they are read); the keys that changed."""
        changed = []
        for p in points:
            key = (p.family, trial + p.labels)
            self.values[key] = self.values.get(key, 0.0) + p.value if p.add else p.value
            if at is None:
                self.stamps.pop(key, None)
            else:
                self.stamps[key] = at
            changed.append(key)
        return changed

    def take_latency(self, trial: Labels, page: str, h: Histogram) -> Labels:
        labels = (*trial, page)
        self.hists.setdefault(labels, Buckets()).add(h)
        return labels


def _num(v: Any) -> float | None:
    """A row's value as a float; None for a missing one (None, NaN)."""
    if v is None:
        return None
    f = float(v)
    return None if math.isnan(f) else f


def zero_points(page: str) -> Iterator[Point]:
    """A trial's counters at its window's start: 0, so that Prometheus's rate() sees the first second's counts
    (prometheus-client starts a labelled counter at 0 too)."""
    for p in client_points(dict.fromkeys(("started", "dropped", "bytes", *KINDS), 0), page):
        yield Point(p.family, p.labels, 0.0)


def client_points(row: Mapping[str, Any], page: str) -> Iterator[Point]:
    """A second of timeline.parquet (the load's own row, or a page's): its counts as increments, the rest as
    gauges. A page's row has no started, dropped, in-flight or client figures: those are the load's."""
    for kind in KINDS:
        if (n := _num(row.get(kind))) is not None:
            yield Point("loadcmp_requests", (page, kind), n, add=True)
    for family, col in (("loadcmp_requests_started", "started"), ("loadcmp_requests_dropped", "dropped"),
                        ("loadcmp_response_bytes", "bytes")):
        if (n := _num(row.get(col))) is not None:
            yield Point(family, (page,), n, add=True)
    if (n := _num(row.get("inflight"))) is not None:
        yield Point("loadcmp_requests_in_flight", (page,), n)
    for q, col in QUANTILES:
        if (ms := _num(row.get(col))) is not None:
            yield Point("loadcmp_request_latency_quantile_seconds", (page, q), ms / 1000)
    if (n := _num(row.get("client_cpu_pct"))) is not None:
        yield Point("loadcmp_client_cpu_percent", (), n)
    if (n := _num(row.get("loop_lag_ms"))) is not None:
        yield Point("loadcmp_client_loop_lag_seconds", (), n / 1000)


ROW_KEYS = frozenset({"server", "level", "trial", "second", "page"})
"""A server row's columns that say which trial and second it is."""
_ROLE_GAUGES = (("cpu_pct", "loadcmp_server_cpu_percent"), ("mem_bytes", "loadcmp_server_memory_bytes"),
                ("procs", "loadcmp_server_processes"), ("threads", "loadcmp_server_threads"))
_NOT_FIGURES = frozenset({"mem_rss_bytes", "mem_max_usage_bytes", "mem_limit_hits", "oom_kills", "tcp_total"})
"""Columns of a role that are no status figure (kept elsewhere, or a sum of others)."""
_OWN = _NOT_FIGURES | {c for c, _ in _ROLE_GAUGES}


def roles_apart(row: Mapping[str, Any]) -> list[str]:
    """The roles measured apart in a server row (an app's database): those with a `<role>_cpu_pct` column."""
    return [c[: -len("_cpu_pct")] for c in row if c.endswith("_cpu_pct") and c != "cpu_pct"]


def server_points(row: Mapping[str, Any]) -> Iterator[Point]:
    """A row of server.parquet: each role's CPU, memory, processes and status figures, the TCP states."""
    apart = roles_apart(row)
    prefixes = tuple(f"{r}_" for r in apart)
    for role, pre in (("server", ""), *zip(apart, prefixes, strict=True)):
        for col, family in _ROLE_GAUGES:
            if (n := _num(row.get(pre + col))) is not None:
                yield Point(family, (role,), n)
    for col, v in row.items():
        if col in ROW_KEYS or isinstance(v, str) or (n := _num(v)) is None:
            continue
        own = next((p for p in prefixes if col.startswith(p)), None)
        if own is not None:
            if (figure := col[len(own):]) not in _OWN:
                yield Point("loadcmp_server_status", (own[:-1], figure), n)
        elif col.startswith("tcp_") and col != "tcp_total":
            yield Point("loadcmp_server_tcp_connections", (col[4:],), n)
        elif col == "oom_kills":
            yield Point("loadcmp_server_oom_kills", (), n)
        elif col not in _OWN:
            yield Point("loadcmp_server_status", ("server", col), n)


def trial_points(rec: TrialRecord) -> Iterator[Point]:
    """A trial's end: its streams, TLS handshakes and journeys where it had them, its log lines and causes."""
    r: Mapping[str, Any] = rec.get("result") or {}
    if s := r.get("streams"):
        for what in ("connections", "streams", "goaways", "goaway_unprocessed", "retried"):
            yield Point("loadcmp_streams", (what,), float(s.get(what, 0)), add=True)
        yield Point("loadcmp_streams", ("resets",), float(sum((s.get("resets") or {}).values())), add=True)
    if t := r.get("tls"):
        for kind in ("full", "resumed"):
            yield Point("loadcmp_tls_handshakes", (kind,), float(t.get(kind, 0)), add=True)
    for doc in (r.get("journeys") or {}).values():
        for what in ("started", "completed", "failed", "cut"):
            yield Point("loadcmp_journeys", (what,), float(doc.get(what, 0)), add=True)
    for cause, lines in (rec.get("log_evidence") or {}).items():
        yield Point("loadcmp_server_log_lines", (cause,), float(lines), add=True)
    for c in rec.get("causes") or []:
        yield Point("loadcmp_server_causes", (c["cause"],), 1.0, add=True)


def event_points(doc: EventDoc, zero: bool = False) -> Iterator[Point]:
    """An --event that ended: 1 more of its action and outcome. `zero`: nothing added, but both of its action's
    outcomes laid (0 when new) at the window's start, so that the first one is a change."""
    if zero:
        yield from (Point("loadcmp_events", (doc["action"], o), 0.0, add=True) for o in ("ok", "failed"))
    else:
        yield Point("loadcmp_events", (doc["action"], "ok" if doc["ok"] else "failed"), 1.0, add=True)


def trial_labels(run: str, label: str, proto: str, level: int, trial: int) -> Labels:
    return (run, label, proto, str(level), str(trial))
