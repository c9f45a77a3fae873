"""`loadcmp export`: stored runs as the series the live endpoint serves, each value at its second.

A trial's seconds are stamped from its window's start on the wall clock (`window_start`, kept since runs
recorded it). An older run's trials are laid end to end from the run's start, and the export says so. The
per-second rows give the counts and gauges; each trial's end gives its latency histogram (the recorder's, per
page too), its streams, handshakes, journeys, log lines and causes.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import generate_latest

from ..errors import StoreError, UsageError
from ..load.record.histogram import Histogram
from ..facts import EventDoc, events_of
from ..records import TrialRecord
from ..store.reader import Results, load_results
from ..protocols import DEFAULT as DEFAULT_PROTO
from . import Format
from .exposition import Hist, Value, families
from .families import ALL_PAGES, FAMILIES, TRIAL_LABELS
from .points import (Labels, Series, client_points, event_points, server_points, trial_labels, trial_points,
                     zero_points)



@dataclass
class Export:
    """What an export holds: every family's values with their timestamps, and what it says of itself."""

    values: list[Value] = field(default_factory=list)
    hists: list[Hist] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    laid_out: list[str] = field(default_factory=list)
    """Runs stored before trials kept their window's start: their trials laid end to end from the run's start."""
    skipped: list[str] = field(default_factory=list)
    """Folders that could not be read, with why."""
    _made: list[Metric] | None = None

    def metrics(self) -> list[Metric]:
        """The families, each series' values in time order (made once: the values are all in)."""
        if self._made is None:
            self._made = families(sorted(self.values, key=lambda v: (v[0], v[1], v[3] or 0.0)), self.hists)
        return self._made

    def counts(self) -> tuple[int, int]:
        """Distinct series and samples (a histogram's buckets, sum and count each a series), as Prometheus
        stores them."""
        samples = [(s.name, tuple(sorted(s.labels.items()))) for m in self.metrics() for s in m.samples]
        return len(set(samples)), len(samples)


def run_folders(root: Path) -> list[Path]:
    """`root` when it is a results folder, else the results folders under it (a write-up's one level further)."""
    if (root / "run.json").is_file():
        return [root]
    found = sorted({p.parent for p in [*root.glob("*/run.json"), *root.glob("*/*/run.json")]})
    if not found:
        raise UsageError(f"{root}: no stored run here (a results folder holds a run.json)")
    return found


def collect(root: Path) -> Export:
    out = Export()
    for folder in run_folders(root):
        try:
            res = load_results(folder)
        except StoreError as e:
            out.skipped.append(f"{folder}: {e}")
            continue
        add_run(out, res, folder.name)
    if not out.runs:
        raise UsageError(f"{root}: no run could be read ({'; '.join(out.skipped)})")
    return out


def add_run(out: Export, res: Results, run: str) -> None:
    """One folder's trials, second by second."""
    out.runs.append(run)
    clock = _Clock(res)
    if clock.laid_out:
        out.laid_out.append(run)
    series = Series()
    for rec in res.trials:
        if not rec.get("result"):
            continue
        start = clock.start(rec)
        proto = ((res.run.get("servers") or {}).get(rec["server"]) or {}).get("proto", DEFAULT_PROTO)
        trial = trial_labels(run, rec["server"], proto, rec["level"], rec["trial"])
        _seconds(out, series, trial, rec, res, start)
        _events(out, series, trial, events_of(rec), start)
        end = start + float(rec["result"]["duration_s"])
        _stamp(out, series, series.take(trial, trial_points(rec)), end)
        _latency(out, trial, rec, end)


def _events(out: Export, series: Series, trial: Labels, events: list[EventDoc], start: float) -> None:
    """A trial's --event counts: each action's laid at 0 at the window's start, then each event counted at its end,
    in the order they ended (a restart fired before the one before it came back ends after it)."""
    for ev in {e["action"]: e for e in events}.values():
        _stamp(out, series, series.take(trial, event_points(ev, zero=True)), start)
    for ev in sorted(events, key=lambda e: e["end_s"]):
        _stamp(out, series, series.take(trial, event_points(ev)), start + ev["end_s"])


def _of(df: pd.DataFrame, rec: TrialRecord) -> pd.DataFrame:
    if df.empty:
        return df
    mine = df[(df["server"] == rec["server"]) & (df["level"] == rec["level"]) & (df["trial"] == rec["trial"])]
    return mine.sort_values("second")


def _rows(df: pd.DataFrame) -> Iterator[dict[str, Any]]:
    for row in df.to_dict("records"):
        yield {str(k): v for k, v in row.items()}


def _seconds(out: Export, series: Series, trial: Labels, rec: TrialRecord, res: Results, start: float) -> None:
    """The trial's per-second rows: the load's, its pages', the server's, each at the end of its second."""
    pages = _of(res.pages, rec)
    _stamp(out, series, series.take(trial, zero_points(ALL_PAGES)), start)
    for row in _rows(_of(res.timeline, rec)):
        _stamp(out, series, series.take(trial, client_points(row, ALL_PAGES)), start + row["second"] + 1)
    for row in _rows(pages):
        _stamp(out, series, series.take(trial, client_points(row, str(row["page"]))), start + row["second"] + 1)
    for row in _rows(_of(res.server, rec)):
        _stamp(out, series, series.take(trial, server_points(row)), start + row["second"] + 1)


def _stamp(out: Export, series: Series, keys: list[tuple[str, Labels]], ts: float) -> None:
    out.values += [(name, labels, series.values[(name, labels)], ts) for name, labels in dict.fromkeys(keys)]


def _latency(out: Export, trial: Labels, rec: TrialRecord, ts: float) -> None:
    """The recorder's histogram of the whole trial (and of each page), at the window's end."""
    hists: dict[str, Any] = dict(rec.get("page_hists") or {})
    whole = rec.get("latency_hist")
    if whole:
        hists = {ALL_PAGES: whole, **hists}
    scratch = Series()
    for page, doc in hists.items():
        labels = scratch.take_latency(trial, page, Histogram.from_dict(doc))
        out.hists.append((labels, scratch.hists[labels], ts))


@dataclass
class _Clock:
    """Where each trial's window starts on the wall clock."""

    res: Results
    laid_out: bool = False
    next_s: float = 0.0

    def __post_init__(self) -> None:
        self.laid_out = any(t.get("result") and "window_start" not in t for t in self.res.trials)
        started = self.res.run.get("started")
        try:
            self.next_s = datetime.fromisoformat(started).timestamp() if started else 0.0
        except ValueError:
            self.next_s = 0.0

    def start(self, rec: TrialRecord) -> float:
        if "window_start" in rec and not self.laid_out:
            return float(rec["window_start"])
        at = self.next_s
        result = rec.get("result")
        self.next_s += (float(result["duration_s"]) if result else 0.0) + 1.0
        return at


def render(ex: Export, fmt: Format) -> bytes:
    """The export in its format: OpenMetrics text (`promtool tsdb create-blocks-from openmetrics` loads it),
    or CSV with one row per sample."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(ex.metrics()))
    if fmt == "openmetrics":
        return generate_latest(registry)
    return _csv(ex.metrics()).encode()


def _csv(metrics: list[Metric]) -> str:
    own = sorted({label for f in FAMILIES.values() for label in f.labels} | {"le"})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["timestamp", "metric", "value", *TRIAL_LABELS, *own])
    for m in metrics:
        for s in m.samples:
            ts = "" if s.timestamp is None else float(s.timestamp)
            w.writerow([ts, s.name, s.value, *(s.labels.get(k, "") for k in (*TRIAL_LABELS, *own))])
    return buf.getvalue()


@dataclass(frozen=True, eq=False)
class _Fixed:
    """A collector of families made beforehand (what `generate_latest` reads)."""

    made: list[Metric]

    def collect(self) -> list[Metric]:
        return self.made
