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

from ..load.histogram import Histogram
from ..load.summary import second_row
from ..records import TrialRecord
from .exposition import families
from .points import Labels, Series, client_points, server_points, trial_labels, trial_points, zero_points

Row = Mapping[str, Any]

if TYPE_CHECKING:
    from aiohttp import web
    from prometheus_client.metrics_core import Metric

    from ..load.spec import Live

ALL_PAGES = "(all)"
"""The page label of a load of several pages as a whole (a mix, a replay, journeys)."""
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
    @property
    def page(self) -> str: ...


class Writer(Protocol):
    """What the metrics read of the results folder's writer (`store.writer.RunWriter`)."""

    @property
    def path(self) -> Path: ...
    @property
    def run(self) -> Mapping[str, Any]: ...


@dataclass
class Trial:
    """A trial as the metrics know it: its labels, the seconds its live calls brought, its window's start."""

    labels: Labels
    shown: set[int] = field(default_factory=set)
    t0: float | None = None
    """The window's start on the wall clock (from the first live call), which stamps each second."""


@dataclass
class Metrics:
    """A command's series, told by its hooks; `registry` is what `/metrics` serves."""

    run: str = ""
    """The run's folder name once the writer has one (bench without --out: empty)."""
    series: Series = field(default_factory=Series)
    lock: threading.Lock = field(default_factory=threading.Lock)
    registry: CollectorRegistry = field(default_factory=lambda: CollectorRegistry(auto_describe=False))
    key: tuple[str, str, int, int] = ("", "h1", 0, 0)
    """The trial under way: label, protocol, level, trial."""
    page: str = ""
    protos: dict[str, str] = field(default_factory=dict)
    """Each label's protocol, for the server rows (which carry the label, level and trial)."""
    trials: dict[tuple[str, int, int], Trial] = field(default_factory=dict)
    """Each trial's labels as its first values carry them, and what its live seconds brought."""
    seen: int = 0
    changed: float = 0.0
    """When a value last changed (monotonic)."""
    scrapes: list[float] = field(default_factory=list)
    """When the last scrapes were (monotonic), the last two kept."""
    read: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self.registry.register(_Collector(self))

    def labels(self, label: str, level: int, trial: int) -> Labels:
        return trial_labels(self.run, label, self.protos.get(label, "h1"), level, trial)

    def _trial(self, label: str, level: int, n: int) -> Trial:
        if (label, level, n) not in self.trials:
            self.trials[(label, level, n)] = Trial(self.labels(label, level, n))
        return self.trials[(label, level, n)]

    def trial_start(self, p: Planned, i: int, n: int, seconds: float) -> None:
        self.begin(p.label, p.level, p.trial, proto=p.proto, page=p.page)

    def begin(self, server: str, level: int, trial: int, i: int | None = None, n: int | None = None,
              proto: str = "h1", page: str = "") -> None:
        """A trial starts (its warm-up): its counters at 0."""
        with self.lock:
            self.protos[server] = proto
            self.key = (server, proto, level, trial)
            self.page = page
            self.series.take(self._trial(server, level, trial).labels, zero_points(page))
            self.changed = time.monotonic()

    def live(self, lv: Live) -> None:
        """The window's closed seconds (merged across workers by the fleet, as the page takes them), each stamped
        with the end of its second on the wall clock, as the stored export stamps it: Prometheus then keeps each
        second where it was, however late a scrape reads it."""
        if not lv.closed:
            return
        with self.lock:
            label, _, level, n = self.key
            t = self._trial(label, level, n)
            if t.t0 is None:
                t.t0 = time.time() - lv.elapsed
                self.series.take(t.labels, zero_points(self.page), at=t.t0)
            for j, s in lv.closed:
                if j in t.shown:
                    continue
                t.shown.add(j)
                if s.pages and self.page != ALL_PAGES:  # a load of several pages: its whole is (all)
                    self.series.drop(t.labels, self.page)
                    self.page = ALL_PAGES
                    self.series.take(t.labels, zero_points(ALL_PAGES), at=t.t0)
                self.series.take(t.labels, client_points(second_row(j, s), self.page), at=t.t0 + j + 1)
                self.series.take_latency(t.labels, self.page, s.lat_h)
            self.changed = time.monotonic()

    def sample(self, row: Row) -> None:
        with self.lock:
            self.series.take(self._trial(str(row["server"]), int(row["level"]), int(row["trial"])).labels,
                             server_points(row))

    def stored(self, writer: Writer, timeline: Iterable[Row] = (), server: Iterable[Row] = ()) -> None:
        """The writer's watch: the run's name, and each newly stored trial's end. The trial's stored rows add
        the seconds no live call brought (the last ones: the page takes them from the same rows), and its
        latency histogram, the recorder's whole, replaces what the seconds added up to."""
        with self.lock:
            self.run = Path(writer.path).name
            trials: list[TrialRecord] = list(writer.run.get("trials", []))
            for rec in trials[self.seen:]:
                proto = (writer.run.get("servers", {}).get(rec["server"]) or {}).get("proto", "h1")
                self.protos.setdefault(rec["server"], proto)
                t = self._trial(rec["server"], rec["level"], rec["trial"])
                self.series.take(t.labels, trial_points(rec))
                if rec is trials[-1]:
                    self._rest(rec, t, [r for r in timeline if r.get("page") is None])
            self.seen = len(trials)
            self.changed = time.monotonic()

    def _rest(self, rec: TrialRecord, t: Trial, rows: list[Row]) -> None:
        page = ALL_PAGES if rec.get("page_hists") else rec.get("page", self.page)
        t0 = t.t0 if t.t0 is not None else rec.get("window_start")
        for row in rows:
            if row["second"] not in t.shown:
                at = None if t0 is None else t0 + row["second"] + 1
                self.series.take(t.labels, client_points(row, page), at=at)
        if hist := rec.get("latency_hist"):
            self.series.hists.pop((*t.labels, page), None)
            self.series.take_latency(t.labels, page, Histogram.from_dict(hist))

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
            hists = [(labels, b, None) for labels, b in self.series.hists.items()]
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
