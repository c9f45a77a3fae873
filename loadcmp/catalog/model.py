"""What the catalog of stored runs answers with: typed values, no pandas, no DuckDB.

`compare` (two runs, cell by cell) and `history` (one metric over every stored run,
with its change points) return these; the CLI, the `serve` pages and `smoke --history`
only render them. A cell is what two runs can share: label x level x page x the workload sent (the protocol as
asked and negotiated, the streams per connection, the traffic source with its parameters, the app), so that two
workloads never share a row of compare nor a series of history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

RunState = Literal["complete", "interrupted", "running", "abandoned", "broken"]
"""complete: ended and whole; interrupted: ended early, keeps what it measured;
running: its owner is still alive; abandoned: its owner died before it ended;
broken: no readable run.json (`reason` says why)."""

Verdict = Literal["better", "worse", "no difference", "too few trials", "not measured", "client-bound"]
"""client-bound: req/s where the client limited a side, in the direction its lower bound cannot show (as the
findings judge it, one-sided: `report.compare.at_least`)."""


@dataclass(frozen=True)
class RunEntry:
    """One results folder as the catalog lists it (every folder, whatever its state)."""

    path: Path
    state: RunState
    name: str = ""
    run_id: str = ""
    kind: str = ""  #: run, smoke, capacity, tune, seeds ...
    started: str = ""  #: ISO time, as run.json has it; sorts oldest first
    reason: str | None = None  #: why broken / abandoned / interrupted, in words


@dataclass(frozen=True, order=True)
class CellKey:
    """What two runs can share: a label at a level on a page, with the workload that was sent."""

    label: str
    level: int
    page: str
    protocol: str
    """HTTP/1.1 as "http" or "https"; else the protocol asked, "h2", "h2c", "h3", with " as X" where the server
    negotiated X instead."""
    streams: int = 1  #: requests in flight per connection (-m on h2, h2c, h3; 1 on HTTP/1.1)
    traffic: str = ""  #: the traffic source and its parameters, `traffic.source.Source.said` ("": one page)
    app: str = ""  #: the application the pages ran on (--app; "": none)

    def workload(self) -> str:
        """What was sent, in words: `h2, 4 streams; mix /a=60,/b=40; app wordpress`."""
        bits = [self.protocol + (f", {self.streams} streams" if self.streams != 1 else "")]
        bits += [self.traffic] if self.traffic else []
        bits += [f"app {self.app}"] if self.app else []
        return "; ".join(bits)

    def text(self) -> str:
        return f"{self.label}@{self.level} {self.page} ({self.workload()})"


DifferenceKind = Literal["workload", "setting", "config", "version", "machine", "loadcmp", "page", "spec"]
"""What part of the set-up a Difference is in; `workload`: what was sent (a cell's protocol, streams, traffic or
app), said first."""


@dataclass(frozen=True)
class Difference:
    """One thing that differs in the set-up between two runs (or at a change point).

    `scope` is a label for what belongs to one server (settings, configs, versions), or ""
    for what belongs to the run (machine, loadcmp version, page hashes)."""

    kind: DifferenceKind
    scope: str
    key: str  #: e.g. "fpm.max_children", "web/nginx.conf", "php", "cpu_model"
    before: str | None  #: None: absent in the earlier run
    after: str | None  #: None: absent in the later run
    diff: str = ""  #: a unified diff for rendered configs; "" otherwise

    def text(self) -> str:
        where = f"{self.scope}: " if self.scope else ""
        return f"{where}{self.key} {self.before if self.before is not None else '(none)'} -> " \
               f"{self.after if self.after is not None else '(none)'}"


@dataclass(frozen=True)
class Value:
    """A metric in one cell of one run: the mean over trials and its 95 % interval."""

    mean: float | None
    low: float | None
    high: float | None
    n: int  #: measured trials
    client_bound: bool = False  #: the client limited a trial of the cell: its req/s is a lower bound (`bound_cells`)


@dataclass(frozen=True)
class MetricDelta:
    """One metric of a shared cell, run A against run B."""

    metric: str  #: one of METRICS
    a: Value
    b: Value
    ratio: float | None  #: B / A
    ratio_low: float | None
    ratio_high: float | None
    verdict: Verdict


@dataclass(frozen=True)
class CompareRow:
    cell: CellKey
    deltas: list[MetricDelta]
    setup_differs: bool  #: a difference scoped to this cell's label (or to the run) exists
    client_bound: str = ""  #: "A", "B" or "A and B": the side whose client limited its req/s ("" neither)


@dataclass(frozen=True)
class PartShare:
    """One part of a traced request's time (`trace.breakdown.PARTS`) in one cell: its share of p50 and of p99 in
    run A and in run B (0..1)."""

    part: str
    name: str  #: as the report's table heads it ("upstream queue")
    a_p50: float
    b_p50: float
    a_p99: float
    b_p99: float


@dataclass(frozen=True)
class PartsMoved:
    """A cell both runs traced (--trace): its p50 and p99 in each, their parts side by side, and the part that moved
    most, in one sentence."""

    label: str
    level: int
    a_p50_ms: float
    b_p50_ms: float
    a_p99_ms: float
    b_p99_ms: float
    parts: list[PartShare]
    moved: str  #: the part whose time changed most (`PARTS`' name), "" when none did
    sentence: str


@dataclass(frozen=True)
class Comparison:
    """`loadcmp compare A B`: what differs first, then every shared cell; where both traced, which part moved."""

    a: RunEntry
    b: RunEntry
    differences: list[Difference]
    rows: list[CompareRow]
    only_a: list[CellKey] = field(default_factory=list)
    only_b: list[CellKey] = field(default_factory=list)
    parts: list[PartsMoved] = field(default_factory=list)


@dataclass(frozen=True)
class HistoryQuery:
    """`loadcmp history` filters; None matches anything."""

    metric: str = "rps"
    label: str | None = None
    stack: str | None = None
    level: int | None = None
    page: str | None = None
    protocol: str | None = None


@dataclass(frozen=True)
class Point:
    """A series' value at one stored run."""

    run: RunEntry
    cell: CellKey
    value: Value


@dataclass(frozen=True)
class ChangePoint:
    """Where a series changed: the first run after the change, found with no hand-set threshold."""

    cell: CellKey
    index: int  #: into the series' points: the first point after the change
    run: RunEntry
    before: float  #: mean of the segment before
    after: float  #: mean of the segment after
    change: float | None  #: (after - before) / before; None where before is 0 (a failed rate from none)
    pvalue: float
    direction: Literal["better", "worse"]
    differences: list[Difference]  #: set-up at this run against the run before it
    metric: str = ""  #: the metric that changed (one of METRICS)


@dataclass(frozen=True)
class Series:
    cell: CellKey
    points: list[Point]
    change_points: list[ChangePoint]


@dataclass(frozen=True)
class History:
    """`loadcmp history`: a metric over every stored run, oldest first, per cell."""

    query: HistoryQuery
    series: list[Series]
    runs: list[RunEntry]  #: every folder found, in every state (none silently skipped)


METRICS: dict[str, tuple[str, bool]] = {
    "rps": ("req/s", True),
    "p50": ("ms", False),
    "p99": ("ms", False),
    "failed_rate": ("%", False),
    "cpu_per_request": ("ms", False),  #: the server's CPU time per ok request
    "mem_peak": ("bytes", False),  #: the server's memory peak
}
"""Each metric a row or a history shows: its unit and whether higher is better."""
