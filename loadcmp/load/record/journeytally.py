"""What the journeys of one load did: each journey's starts, completions and the step it failed at (why);
mergeable across workers by adding. Each step's requests are recorded as a page of the load (`journey/step`,
the recorder's per-page counts); this keeps what a page cannot say: whether the journey got through.

Kept in the load, beside the recorder, because a `Result` carries it; the journeys themselves (their steps,
their engine) are the traffic package's.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    """Every journey's counts of one load, by journey name."""

    journeys: dict[str, JourneyCount] = field(default_factory=dict)

    def journey(self, name: str) -> JourneyCount:
        return self.journeys.setdefault(name, JourneyCount())

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
        return out

    def completion_rate(self) -> float | None:
        """All journeys together: completed / (started - cut)."""
        total = JourneyCount()
        for j in self.journeys.values():
            total = total.merged(j)
        return total.completion_rate()
