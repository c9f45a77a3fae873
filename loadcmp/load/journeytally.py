"""What the journeys of one load did: each journey's starts, completions and the step it failed at, and each
step measured as a page of its own (`journey/step`); mergeable across workers by adding.

Kept in the load, beside the recorder, because a `Result` carries it; the journeys themselves (their steps,
their engine) are the traffic package's.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from .histogram import Histogram


@dataclass
class StepTally:
    """One step's requests inside the window: answered ok, failed (any other outcome), their latency."""

    ok: int = 0
    failed: int = 0
    lat: Histogram = field(default_factory=Histogram)
    raw: Any = field(default_factory=lambda: array("d"))
    """Latencies not yet folded into `lat` (folded when the load ends: `JourneyTally.fold`)."""

    def fold(self) -> None:
        if len(self.raw):
            self.lat = self.lat.merge(Histogram.of(self.raw))
            self.raw = array("d")

    def merged(self, o: StepTally) -> StepTally:
        self.fold()
        o.fold()
        return StepTally(self.ok + o.ok, self.failed + o.failed, self.lat.merge(o.lat))


@dataclass
class JourneyCount:
    """One journey's outcomes: started inside the window, completed (every step done and every extract found),
    failed at a step (by the step's name and why), and those the window's close cut off."""

    started: int = 0
    completed: int = 0
    failed_at: dict[str, int] = field(default_factory=dict)
    """`step: why` -> how many journeys ended there (a status not expected, an extract that found nothing)."""
    cut: int = 0
    """Still under way when the window closed: neither completed nor failed."""

    def merged(self, o: JourneyCount) -> JourneyCount:
        failed = dict(self.failed_at)
        for k, n in o.failed_at.items():
            failed[k] = failed.get(k, 0) + n
        return JourneyCount(self.started + o.started, self.completed + o.completed, failed, self.cut + o.cut)

    def completion_rate(self) -> float | None:
        """Completed / (started - cut); None when none ended."""
        ended = self.started - self.cut
        return self.completed / ended if ended > 0 else None


@dataclass
class JourneyTally:
    """Every journey's counts and every step's tally of one load."""

    journeys: dict[str, JourneyCount] = field(default_factory=dict)
    steps: dict[str, StepTally] = field(default_factory=dict)
    """By page: `journey/step`."""

    def journey(self, name: str) -> JourneyCount:
        return self.journeys.setdefault(name, JourneyCount())

    def step(self, page: str, ok: bool, latency: float | None) -> None:
        t = self.steps.setdefault(page, StepTally())
        if ok:
            t.ok += 1
        else:
            t.failed += 1
        if latency is not None:
            t.raw.append(latency)

    def fold(self) -> None:
        """Every step's raw latencies into its histogram (before the tally leaves its process)."""
        for t in self.steps.values():
            t.fold()

    @classmethod
    def merge(cls, parts: list[JourneyTally | None]) -> JourneyTally | None:
        """None when no part ran journeys."""
        got = [p for p in parts if p is not None]
        if not got:
            return None
        out = cls()
        for p in got:
            for k, j in p.journeys.items():
                out.journeys[k] = out.journeys[k].merged(j) if k in out.journeys else j
            for k, s in p.steps.items():
                out.steps[k] = out.steps[k].merged(s) if k in out.steps else s
        return out

    def completion_rate(self) -> float | None:
        """All journeys together: completed / (started - cut)."""
        total = JourneyCount()
        for j in self.journeys.values():
            total = total.merged(j)
        return total.completion_rate()
