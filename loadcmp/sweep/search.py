"""The capacity search itself, pure: where a set-up stops meeting its target.

It sees the world through two functions, so that it can be tested without a server:
`probe(level)` runs one short trial and says met or missed; `confirm(level)` makes sure a
level has its confirmation trials and judges them with 95 % intervals (`verdicts.slo`).
`loadcmp.sweep.capacity` gives it the real ones, which run trials as `run` does.

The way, as MLRsearch and k6's breakpoint tests walk it:

1. step up geometrically from the start (x `factor`) until a probe misses the target;
2. bisect (geometric midpoints) between the last level met and the first missed until they
   are within `resolution` of each other;
3. confirm both: the level found must be met and the level above it missed, each judged on
   `confirm` trials. When a confirmation disagrees with the probe, the search says so and goes
   on from there (below a level that confirms missed, above one that confirms met). A confirmation
   that cannot decide (an interval straddles the target) gets one more trial at a time, up to
   `max_confirm`, unless it says why more would not decide it (`Confirmed.settled`: trials split on
   TCP's SYN retry whose pooled share sits on what the target allows); one still undecided ends the
   search `unsure`, never as a capacity.

What it ends with (`Found.kind`):

- `capacity`: the highest level met, with the first missed above it;
- `at_least`: as capacity, but the client was the limit at the edge: the server may hold more;
- `below_start`: the first level already misses, confirmed (the target is never met here);
- `not_reached`: met up to `max`, the level it may not go past (and why);
- `unsure`: a confirmation at the edge stayed undecided over `max_confirm` trials: the edge lies
  between the highest level met below it and the lowest missed above it (either may be unknown);
- `interrupted`: stopped (Ctrl-C) before it ended; `failed`: a probe measured nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..verdicts.slo import Confirmed

Kind = Literal["capacity", "at_least", "below_start", "not_reached", "unsure", "interrupted", "failed"]
Stage = Literal["step", "bisect", "confirm"]

ROUNDS = 4
"""Confirmations that may disagree with the probes before the search stops trusting either."""


@dataclass(frozen=True)
class Probed:
    """One probe's answer: met (None: nothing measured), and whether the client set the pace."""

    level: int
    met: bool | None
    client_bound: bool = False
    text: str = ""
    """What decided it, in words (the checks and their values, or why nothing was measured)."""


@dataclass(frozen=True)
class Step:
    """One entry of the search's path."""

    level: int
    stage: Stage
    met: bool | None
    client_bound: bool
    text: str


@dataclass(frozen=True)
class Plan:
    """How the search walks."""

    start: int
    max: int
    max_reason: str
    """Why it may not go past `max`: the open-file limit, --max."""
    resolution: float = 0.10
    factor: float = 2.0
    confirm: int = 3
    """Trials a confirmation is judged on first."""
    max_confirm: int = 3
    """Trials a confirmation may grow to, one at a time, while it cannot decide."""


@dataclass
class Found:
    """Where the search ended, how, and the way it took."""

    kind: Kind
    level: int | None = None
    """capacity / at_least: the highest level met; not_reached: the highest probed; below_start: the start;
    unsure: the highest level met below the undecided edge (None: none was)."""
    missed: int | None = None
    """The lowest level missed above `level` (below_start: the start; unsure: None when none was)."""
    path: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a reader must know: disagreements, an unsure confirmation, where and why it stopped."""
    confirmed: dict[int, Confirmed] = field(default_factory=dict)
    undecided: list[int] = field(default_factory=list)
    """unsure: the levels whose confirmation stayed unsure."""

    @property
    def value(self) -> float | None:
        """The search's answer as one number (a tuning study's objective): the level found or reached, 0 below
        the start; None where there is none (unsure, interrupted, failed)."""
        if self.kind in ("capacity", "at_least", "not_reached") and self.level is not None:
            return float(self.level)
        return 0.0 if self.kind == "below_start" else None


Prober = Callable[[int], Probed | None]
"""Runs one probe at a level; None: stopped before it measured."""
Confirmer = Callable[[int, int], Confirmed | None]
"""Brings a level to this many confirmation trials and judges them all; None: stopped."""


class _Stopped(Exception):
    """A probe or a confirmation was stopped (Ctrl-C): the search ends `interrupted`."""


class _Failed(Exception):
    """A probe measured nothing: the server did not start or answer."""


def midpoint(low: int, high: int) -> int:
    """The geometric midpoint, a whole level strictly between (low + 1 when none is)."""
    mid = round(math.sqrt(low * high))
    return min(max(mid, low + 1), high - 1)


def close(low: int, high: int, resolution: float) -> bool:
    """Whether the edge is bracketed tightly enough: within the resolution, or next to each other."""
    return high - low <= 1 or high <= low * (1 + resolution)


class Search:
    """One server's search (see the module docstring); `run()` walks it."""

    def __init__(self, plan: Plan, probe: Prober, confirm: Confirmer,
                 on_step: Callable[[Found], None] = lambda f: None) -> None:
        self.plan = plan
        self._probe = probe
        self._confirm = confirm
        self.on_step = on_step
        self.found = Found("interrupted")
        self.met: dict[int, bool] = {}
        """Every level's last word: a probe's, overridden by its confirmation."""

    def run(self) -> Found:
        try:
            return self._walk()
        except _Stopped:
            self.found.kind = "interrupted"
            self.found.notes.append("stopped before the search ended: the probes so far are kept")
        except _Failed as e:
            self.found.kind = "failed"
            self.found.notes.append(str(e))
        return self.found

    def probe(self, level: int, stage: Stage) -> bool:
        r = self._probe(level)
        if r is None:
            raise _Stopped
        self.found.path.append(Step(level, stage, r.met, r.client_bound, r.text))
        self.on_step(self.found)
        if r.met is None:
            raise _Failed(f"nothing was measured at {level:,}: {r.text}")
        self.met[level] = r.met
        return r.met

    def confirm(self, level: int) -> Confirmed:
        """A level judged on `confirm` trials, and on one more at a time while it is unsure, up to `max_confirm`."""
        wanted = self.plan.confirm
        while True:
            c = self._confirm(level, wanted)
            if c is None:
                raise _Stopped
            more = c.verdict == "unsure" and c.settled is None and wanted < self.plan.max_confirm
            self.found.confirmed[level] = c
            self.found.path.append(Step(level, "confirm", None if c.verdict == "unsure" else c.verdict == "met",
                                        c.client_bound is not None, f"{c.verdict} over {c.n} trials: {c.text}"
                                        + ("; one more trial" if more else "")))
            self.on_step(self.found)
            if not more:
                return c
            wanted += 1

    def _end(self, kind: Kind, level: int | None, missed: int | None, note: str | None = None) -> Found:
        f = self.found
        f.kind, f.level, f.missed = kind, level, missed
        if note:
            f.notes.append(note)
        return f

    def _walk(self) -> Found:
        p = self.plan
        low: int | None = None
        high: int | None = None
        level = p.start
        for _ in range(ROUNDS + 1):
            if high is None:  # 1. step up (from the start, or from a level met)
                low, high = self._step_up(level, low)
                if high is None:
                    return self._end("not_reached", low, None,
                                     f"the target was met up to {low:,}, where the search stops: {p.max_reason}")
            if low is None:  # the first level missed: make sure it was not noise
                c = self.confirm(high)
                if c.verdict == "met":
                    self._disagree(high, "met", "searching on above it")
                    level, high = high, None
                    continue
                if c.verdict == "unsure":
                    return self._unsure([c])
                return self._end("below_start", high, high)
            while not close(low, high, p.resolution):  # 2. bisect
                mid = midpoint(low, high)
                if self.probe(mid, "bisect"):
                    low = mid
                else:
                    high = mid
            lc = self.confirm(low)  # 3. confirm
            if lc.verdict == "missed":
                self._disagree(low, "missed", "searching on below it")
                high, low = low, self._met_below(low)
                if low is None:
                    return self._end("below_start", high, high,
                                     f"no level below {high:,} was met: the capacity is below the start")
                continue
            hc = self.confirm(high)
            if hc.verdict == "met":
                self._disagree(high, "met", "searching on above it")
                low, high = high, self._missed_above(high)
                level = low
                continue
            return self._edge(low, high, lc, hc)
        return self._end("capacity" if low is not None else "below_start", low if low is not None else high, high,
                         f"the confirmations disagreed with the probes {ROUNDS} times: the edge is noisy here, "
                         "take it as approximate")

    def _step_up(self, level: int, low: int | None) -> tuple[int | None, int | None]:
        """Up from `level` until a probe misses: (the last level met, the first missed); (the limit, None) when
        every level up to it was met."""
        p = self.plan
        while True:
            if not (self.met[level] if level in self.met else self.probe(level, "step")):
                return low, level
            low = level
            if level >= p.max:
                return low, None
            level = min(p.max, max(level + 1, math.ceil(level * p.factor)))

    def _edge(self, low: int, high: int, lc: Confirmed, hc: Confirmed) -> Found:
        """The end once both sides of the edge are confirmed: unsure, at least (the client was the limit), or
        the capacity."""
        bound = self._bound_at(low, high)
        if any(c.verdict == "unsure" for c in (lc, hc)):
            if bound:
                self.found.notes.append(f"the client was the limit at the edge ({bound})")
            return self._unsure([c for c in (lc, hc) if c.verdict == "unsure"])
        if bound:
            return self._end("at_least", low, high, f"the client was the limit at the edge ({bound}): the "
                             "server may hold more than this")
        return self._end("capacity", low, high)

    def _unsure(self, undecided: list[Confirmed]) -> Found:
        """Ends the search where confirmations stayed unsure: between the highest level met below them and the
        lowest missed above them, by every level's last word."""
        levels = [c.level for c in undecided]
        words = {lv: ok for lv, ok in self.met.items() if lv not in levels}
        low = max((lv for lv, ok in words.items() if ok and lv < min(levels)), default=None)
        high = min((lv for lv, ok in words.items() if not ok and lv > max(levels)), default=None)
        at = " and ".join(f"{c.level:,} ({c.n} trials)" for c in undecided)
        self.found.undecided = levels
        why = "; ".join(c.settled for c in undecided if c.settled) or (
            f"an interval straddles the target, and --max-confirm {self.plan.max_confirm} allows no more trials")
        return self._end("unsure", low, high, f"the confirmation at {at} stayed unsure: {why}; the edge lies "
                         f"{between(low, high, levels[0])}")

    def _disagree(self, level: int, said: str, then: str) -> None:
        probes = [s for s in self.found.path if s.level == level and s.stage != "confirm"]
        was = "met" if probes and probes[-1].met else "missed"
        self.found.notes.append(f"the confirmation at {level:,} disagrees with its probe ({said}, the probe {was}): "
                                f"{then}")
        self.met[level] = said == "met"

    def _met_below(self, level: int) -> int | None:
        return max((lv for lv, ok in self.met.items() if ok and lv < level), default=None)

    def _missed_above(self, level: int) -> int | None:
        return min((lv for lv, ok in self.met.items() if not ok and lv > level), default=None)

    def _bound_at(self, low: int, high: int) -> str | None:
        """Whether the client set the pace at the edge: at the level found or the first one missed."""
        for lv in (low, high):
            c = self.found.confirmed.get(lv)
            if c is not None and c.client_bound:
                return f"at {lv:,}: {c.client_bound}"
            if any(s.client_bound for s in self.found.path if s.level == lv):
                return f"at {lv:,}"
        return None


def between(low: int | None, high: int | None, around: int, unit: str = "") -> str:
    """An unsure edge's bracket in words: `between 100 and 178`, `below 178`, `above 100`, or `around 50`
    (the level left undecided) when no level met below it nor missed above it."""
    u = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"between {low:,} and {high:,}{u}"
    if high is not None:
        return f"below {high:,}{u}"
    return f"above {low:,}{u}" if low is not None else f"around {around:,}{u}"


def search(plan: Plan, probe: Prober, confirm: Confirmer, on_step: Callable[[Found], None] = lambda f: None) -> Found:
    """One server's search, start to end (see the module docstring)."""
    return Search(plan, probe, confirm, on_step).run()
