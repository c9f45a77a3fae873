"""The five write-ups (the seeds) fitted to a time budget, before anything starts.

`loadcmp seeds` runs the write-ups' experiment files as `loadcmp run FILE` would, with flags
that cut them to fit a budget. `estimate` says how long a run takes from its spec alone:

    trials x (window + warm-up + TRIAL_S) + server starts x START_S + REPORT_S

where a trial's window is `-t`, or for `-n` the requests at ASSUMED_RPS (at most `-t`), and a
server starts once per trial, or once per set-up when it is kept across levels (`reuse_server`).

`fit` keeps the same share of every file's levels and of its window, the largest share whose
estimates add up to the budget ("in proportion"): the levels kept are spread over the range,
its lowest and highest included; a window is cut to no less than MIN_WINDOW, and a ramp's to
no less than its ramp-up plus two paces (a shorter window never reaches the level it claims).
Trials are never cut: a verdict needs 3 of them (`verdicts.judge`), nor `-n`, the write-up's
own request count. Each cut is written down in words, as a flag would say it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..load.schedules import Ramp
from ..experiment.spec import RunSpec

SEEDS = ("paper-2013", "pphc-2022", "cnblogs-2014", "windows-2025", "atmarkit-2014")
"""The write-ups' experiment files in configs/experiments/, in the order they are run."""

START_S = 4.0
"""A fresh server: its start, readiness, primer, evidence read and stop (2.5-7 s per trial here)."""
TRIAL_S = 1.0
"""Per trial beyond its window and warm-up: the last samples, the store's write."""
REPORT_S = 20.0
"""One write-up's report with its figures."""
ASSUMED_RPS = 1000.0
"""Requests/s a `-n` trial is estimated at: below what any stack serves of the seeds' static pages
here, so its estimate errs long (a slower trial still ends at its `-t` cap)."""
MIN_WINDOW = 5.0
"""The shortest window a cut leaves: below it the 1 Hz server samples say little."""


@dataclass(frozen=True)
class Cut:
    """One write-up fitted to its share: the flags for `loadcmp run FILE` and what they cut."""

    name: str
    path: Path
    spec: RunSpec  #: the file as it is
    overrides: dict[str, Any]  #: RunSpec fields, as -c and -t would give them
    cuts: tuple[str, ...]  #: each cut in words ("-t 30s -> 20s")
    full_s: float  #: the file's estimate as it is
    estimate_s: float  #: its estimate as cut


def estimate(spec: RunSpec) -> float:
    """Seconds a run of `spec` takes here, from its spec alone (module docstring)."""
    setups = len(spec.variants())
    trials = len(spec.levels) * spec.trials * setups
    window = spec.duration if spec.requests is None else min(spec.duration, spec.requests / ASSUMED_RPS)
    starts = setups if spec.reuse_server else trials
    return trials * (window + spec.warmup + TRIAL_S) + starts * START_S + REPORT_S


def spread(levels: tuple[int, ...], n: int) -> tuple[int, ...]:
    """`n` of `levels`, evenly over their range, the lowest and highest included (one: the highest)."""
    if n >= len(levels):
        return levels
    if n == 1:
        return levels[-1:]
    return tuple(levels[round(i * (len(levels) - 1) / (n - 1))] for i in range(n))


def _floor(spec: RunSpec) -> float:
    """The shortest window a cut may leave this spec."""
    sched = spec.schedule_for(spec.levels[0])
    if isinstance(sched, Ramp):
        return max(MIN_WINDOW, sched.ramp_up + 2 * sched.pace)
    return MIN_WINDOW


def shrink(spec: RunSpec, keep: float) -> tuple[dict[str, Any], list[str]]:
    """The flags that keep `keep` (0..1] of a spec's levels and of its window, and the cuts in words."""
    over: dict[str, Any] = {}
    cuts: list[str] = []
    n = max(1, math.ceil(keep * len(spec.levels) - 1e-9))
    if n < len(spec.levels):
        over["levels"] = spread(spec.levels, n)
        left = [lv for lv in spec.levels if lv not in over["levels"]]
        cuts.append(f"-c {_levels(spec.levels)} -> {_levels(over['levels'])} "
                    f"({len(left)} of {len(spec.levels)} levels left out: {_levels(tuple(left))})")
    if spec.requests is None:
        window = max(min(spec.duration, _floor(spec)), math.floor(spec.duration * keep))
        if window < spec.duration:
            over["duration"] = float(window)
            cuts.append(f"-t {_secs(spec.duration)} -> {_secs(window)}")
    return over, cuts


def fit(files: list[tuple[str, Path, RunSpec]], budget: float) -> list[Cut]:
    """Every file cut by the same share, the largest whose estimates add up to `budget` seconds;
    a UsageError when even the deepest cut does not fit."""
    def total(keep: float) -> float:
        return sum(estimate(replace(spec, **shrink(spec, keep)[0])) for _, _, spec in files)

    keep = 1.0
    if total(keep) > budget:
        least = total(0.0)
        if least > budget:
            raise UsageError(f"a budget of {_secs(budget)} cannot hold the {len(files)} write-ups: cut to one level "
                             f"and the shortest windows they still take about {_secs(least)}; give --budget "
                             f"{math.ceil(least / 60)}m or more")
        low, high = 0.0, 1.0
        for _ in range(40):  # the estimate grows with the share kept
            mid = (low + high) / 2
            low, high = (mid, high) if total(mid) <= budget else (low, mid)
        keep = low
    out = []
    for name, path, spec in files:
        over, cuts = shrink(spec, keep)
        out.append(Cut(name, path, spec, over, tuple(cuts), estimate(spec), estimate(replace(spec, **over))))
    return out


def _levels(levels: tuple[int, ...]) -> str:
    return ",".join(map(str, levels))


def _secs(s: float) -> str:
    """30s, 2m, 1m30s, 1h5m: as -t and --budget take them."""
    s = round(s)
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    text = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{sec}s" if sec or not (h or m) else "")
    return text
