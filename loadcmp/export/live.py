"""`/metrics` while a command runs: both sides in Prometheus's format, through `prometheus-client`.

`Metrics` takes the hooks the live page takes (`cli.live` lays them over the sweep's), at the same places: each
second of the window as it closes, each server row as the sampler keeps it, each trial once stored. Each call
does a few dictionary operations under a lock and returns; a scrape reads the values under the same lock. The
load never waits on a scraper.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from ..facts import EventDoc
from ..load.record.histogram import Histogram
from ..load.record.summary import second_row
from ..records import TrialRecord
from ..protocols import DEFAULT as DEFAULT_PROTO
from .exposition import families
from .families import ALL_PAGES
from .points import (Labels, Series, client_points, event_points, server_points, trial_labels, trial_points,
                     zero_points)

Row = Mapping[str, Any]

if TYPE_CHECKING:
    from aiohttp import web
    from prometheus_client.metrics_core import Metric

    from ..load.spec import Live

LINGER_S = 5.0
"""At the command's end, how long /metrics waits at most for a scraper to read the last values."""


class Planned(Protocol):
    """What the metrics read of a planned trial (`sweep.trial.Planned`)."""

    @property
    def label(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def trial(self) -> int: ...
    @property
    def proto(self) -> str: ...


class Writer(Protocol):
    """What the metrics read of the results folder's writer (`store.writer.RunWriter`)."""

    @property
    def path(self) -> Path: ...
    @property
    def run(self) -> Mapping[str, Any]: ...


@dataclass
class Trial:
    """A trial as the metrics know it: which it is, its labels (made when its first value comes, once the run
    has its name), the seconds its live calls brought, and its window's start on the wall clock."""

    key: tuple[str, int, int]
    """Its label, level and trial number, as the server rows and the stored record name it."""
    labels: Labels | None = None
    shown: set[int] = field(default_factory=set)
    t0: float | None = None
    """The window's start on the wall clock (from the first live call, warm-up included): it stamps each
    second at its end, as the stored export does."""
    zeroed: bool = False


@dataclass
class Metrics:
    """A command's series, told by its hooks; `registry` is what `/metrics` serves."""

    run: str = ""
    """The run's folder name once the writer has one (bench names its folder only once it stores: empty)."""
    series: Series = field(default_factory=Series)
    lock: threading.Lock = field(default_factory=threading.Lock)
    registry: CollectorRegistry = field(default_factory=lambda: CollectorRegistry(auto_describe=False))
    current: Trial | None = None
    """The trial under way."""
    trials: dict[tuple[str, int, int], Trial] = field(default_factory=dict)
    """The run's trials by label, level and trial (a command of several runs, `seeds`: the one being stored)."""
    protos: dict[str, str] = field(default_factory=dict)
    """Each label's protocol."""
    path: Path | None = None
    seen: int = 0
    """The trials of the writer at `path` already told."""
    changed: float = 0.0
    """When a value last changed (monotonic)."""
    scrapes: list[float] = field(default_factory=list)
    """When the last scrapes were (monotonic), the last two kept."""
    read: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self.registry.register(_Collector(self))

    def _labels(self, t: Trial) -> Labels:
        if t.labels is None:
            label, level, n = t.key
            t.labels = trial_labels(self.run, label, self.protos.get(label, DEFAULT_PROTO), level, n)
        return t.labels

    def trial_start(self, p: Planned, i: int, n: int, seconds: float) -> None:
        self.begin(p.label, p.level, p.trial, proto=p.proto)

    def begin(self, server: str, level: int, trial: int, i: int | None = None, n: int | None = None,
              proto: str = DEFAULT_PROTO) -> None:
        """A trial starts. Its values come with its warm-up's first live call: by then the run has its name."""
        with self.lock:
            self.protos[server] = proto
            self.current = self.trials[(server, level, trial)] = Trial((server, level, trial))

    def live(self, lv: Live) -> None:
        """Each live call of the trial under way. The first one in its window (the tick just after its start, before
        its first second closes) lays its counters at 0 at the window's start, so that `rate()` counts the first
        second. Then each closed second (merged across workers
        by the fleet, as the page takes them) is stamped with its end on the wall clock: Prometheus keeps each
        second where it was, however late a scrape reads it."""
        with self.lock:
            t = self.current
            if t is None:
                return
            labels = self._labels(t)
            if t.t0 is None:
                t.t0 = time.time() - lv.elapsed
            if not t.zeroed and lv.elapsed >= 0:  # Prometheus keeps no sample stamped after its scrape
                t.zeroed = True
                self.series.take(labels, zero_points(ALL_PAGES), at=t.t0)
            for j, s in lv.closed:
                if j not in t.shown:
                    t.shown.add(j)
                    self.series.take(labels, client_points(second_row(j, s), ALL_PAGES), at=t.t0 + j + 1)
                    self.series.take_latency(labels, ALL_PAGES, s.lat_h)
            self.changed = time.monotonic()

    def sample(self, row: Row) -> None:
        """A server row of the window (not the warm-up's, which only the page draws), stamped at the end of its
        second as the client's."""
        if int(row["second"]) < 0:
            return
        with self.lock:
            t = self.trials.get((str(row["server"]), int(row["level"]), int(row["trial"])))
            if t is None:
                return
            at = None if t.t0 is None else t.t0 + int(row["second"]) + 1
            self.series.take(self._labels(t), server_points(row), at=at)
            self.changed = time.monotonic()

    def stored(self, writer: Writer, timeline: Iterable[Row] = (), server: Iterable[Row] = ()) -> None:
        """The writer's watch: the run's name, and each newly stored trial's end. The trial's stored rows add
        the seconds no live call brought (the last ones: the page takes them from the same rows), and its
        latency histogram, the recorder's whole, replaces what the seconds added up to."""
        with self.lock:
            if writer.path != self.path:  # a new run (seeds: one after another)
                self.path, self.run, self.seen = writer.path, Path(writer.path).name, 0
                self.trials = {k: t for k, t in self.trials.items() if t is self.current}
            trials: list[TrialRecord] = list(writer.run.get("trials", []))
            for rec in trials[self.seen:]:
                key = (rec["server"], rec["level"], rec["trial"])
                proto = (writer.run.get("servers", {}).get(rec["server"]) or {}).get("proto", DEFAULT_PROTO)
                self.protos.setdefault(rec["server"], proto)
                t = self.trials.setdefault(key, Trial(key))
                if t.t0 is None:
                    t.t0 = rec.get("window_start")
                end = None if t.t0 is None or "result" not in rec else t.t0 + float(rec["result"]["duration_s"])
                self.series.take(self._labels(t), trial_points(rec), at=end)
                if rec is trials[-1]:
                    self._rest(rec, t, [r for r in timeline if r.get("page") is None])
            self.seen = len(trials)
            self.changed = time.monotonic()

    def _rest(self, rec: TrialRecord, t: Trial, rows: list[Row]) -> None:
        labels = self._labels(t)
        for row in rows:
            if row["second"] not in t.shown:
                at = None if t.t0 is None else t.t0 + row["second"] + 1
                self.series.take(labels, client_points(row, ALL_PAGES), at=at)
        if hist := rec.get("latency_hist"):
            self.series.hists.pop((*labels, ALL_PAGES), None)
            self.series.take_latency(labels, ALL_PAGES, Histogram.from_dict(hist))

    def event(self, doc: EventDoc, running: bool) -> None:
        """An --event of the trial under way: as the first of its action is fired, its counts are laid at 0 at the
        window's start (as the stored export lays them), so that the first one counts as a change; as each ends,
        counted, stamped at its end on the wall clock."""
        with self.lock:
            t = self.current
            if t is None:
                return
            labels = self._labels(t)
            if running:
                if ("loadcmp_events", (*labels, doc["action"], "ok")) not in self.series.values:
                    self.series.take(labels, event_points(doc, zero=True), at=t.t0)
            else:
                self.series.take(labels, event_points(doc), at=None if t.t0 is None else t.t0 + doc["end_s"])
            self.changed = time.monotonic()

    def done(self, status: str) -> None:
        """The end of a command that stored nothing: the series stay as they were last."""

    def linger(self, limit: float = LINGER_S) -> bool:
        """When a scraper reads /metrics and values changed since its last read, wait for its next one (at most
        two of its intervals, and `limit`), so that Prometheus keeps the last seconds too. Whether it read them."""
        with self.read:
            if not self.scrapes or self.scrapes[-1] >= self.changed:
                return True
            every = self.scrapes[-1] - self.scrapes[-2] if len(self.scrapes) > 1 else 1.0
            return self.read.wait_for(lambda: self.scrapes[-1] >= self.changed, min(limit, 2 * every + 0.5))

    def _scraped(self, at: float) -> None:
        with self.read:
            self.scrapes = [*self.scrapes[-1:], at]
            self.read.notify_all()

    def collect(self) -> list[Metric]:
        with self.lock:
            stamps = self.series.stamps
            values = [(name, labels, v, stamps.get((name, labels))) for (name, labels), v in self.series.values.items()]
            hists = [(labels, b.copy(), None) for labels, b in self.series.hists.items()]  # a second may add to b
        return families(values, hists)

    def routes(self, app: web.Application) -> None:
        """`GET /metrics` on the page's server (or a server of its own: `--metrics PORT`)."""
        from aiohttp import web

        async def metrics(request: web.Request) -> web.StreamResponse:
            encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
            at = time.monotonic()  # before reading: a value that changes while it is read waits for the next
            body = encoder(self.registry)
            self._scraped(at)
            return web.Response(body=body, headers={"Content-Type": content_type, "Cache-Control": "no-store"})

        app.router.add_get("/metrics", metrics)


@dataclass(frozen=True, eq=False)
class _Collector(Collector):
    metrics: Metrics

    def collect(self) -> Iterable[Metric]:
        return self.metrics.collect()

    def describe(self) -> Iterable[Metric]:
        return ()
