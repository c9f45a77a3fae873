"""What a capacity search is: its target, where it starts and stops, how fine, how sure.

From `loadcmp capacity`'s flags over an experiment file's `[capacity]` table (the same keys:
`slo`, `resolution`, `start`, `max`, `probe_time`, `confirm`, `max_confirm`); every problem at once, as the
spec's validation does. The load itself (servers, page, schedule, settings) is a `RunSpec`:
a probe is a trial of it at one level, for `probe_time` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from ..errors import Problems, UsageError
from ..load.run.limits import HEADROOM, UNLIMITED, nofile
from ..units import MAX_COUNT, parse_duration, parse_percent
from ..verdicts.slo import Target, parse_slo
from .spec import RunSpec

KEYS = ("slo", "resolution", "start", "max", "probe_time", "confirm", "max_confirm")
"""What an experiment file's [capacity] table may hold."""

START = 10
"""The first level probed (clients, or requests/s)."""
PROBE_S = 5.0
"""Measured seconds of a probe: long enough for a p99 of a few hundred requests, short enough for ~20 of them."""
CONFIRM = 3
"""Trials at the level found and at the one above: the fewest a 95 % interval decides on (`verdicts.judge`)."""
MOST_TRIALS = 5
"""Without --max-confirm, the trials an unsure confirmation may grow to (or --confirm's, if more). A 95 % t interval
over n trials is t(n-1)/sqrt(n) standard deviations wide each side: 2.48 at 3, 1.24 at 5, 0.77 at 9. Five halve the
first interval; four more would narrow it by another 38 % for 80 % more trials, at a level whose trials sit on the
target, where the edge is said as an interval instead."""
RESOLUTION = 0.10
CEILING = 100_000
"""Where a search stops when nothing else bounds it."""


@dataclass(frozen=True)
class CapacitySpec:
    """A capacity search's own settings (the load's are the RunSpec's)."""

    target: Target
    start: int = START
    max: int = CEILING
    max_reason: str = f"the search stops at {CEILING:,}"
    resolution: float = RESOLUTION
    confirm: int = CONFIRM
    probe_time: float = PROBE_S
    factor: float = 2.0
    unit: Literal["clients", "requests/s"] = "clients"
    max_confirm: int | None = None
    """The most trials an unsure confirmation may grow to (None: MOST_TRIALS, or confirm if more)."""

    @property
    def most_trials(self) -> int:
        """The trials a confirmation may grow to, one at a time, while it cannot decide."""
        return self.max_confirm if self.max_confirm is not None else max(MOST_TRIALS, self.confirm)

    def probe_spec(self, spec: RunSpec, level: int) -> RunSpec:
        """The run of one probe: that level; with the rate schedule, that rate (its in-flight cap: --max-inflight,
        else one second's requests)."""
        if self.unit == "requests/s":
            return replace(spec, levels=(level,), rate=float(level))
        return replace(spec, levels=(level,))


def default_max(spec: RunSpec, unit: str) -> tuple[int, str]:
    """The highest level this machine's open-file limit lets the client hold, and why."""
    if unit == "requests/s" and spec.max_inflight is not None:
        return CEILING, (f"the search stops at {CEILING:,} requests/s (the in-flight cap {spec.max_inflight:,} "
                         "bounds the open files, not the rate)")
    hard = nofile()[1]
    if hard == UNLIMITED:
        return CEILING, f"no open-file limit is set; the search stops at {CEILING:,}"
    most = min(MAX_COUNT, (hard - HEADROOM) * spec.workers)
    per = "" if unit == "clients" else ", one second's requests in flight at most"
    return most, (f"the open-file limit ({hard:,} per process, ulimit -Hn) lets {spec.workers} client "
                  f"process{'es' if spec.workers > 1 else ''} hold {most:,} connections{per}; raise it as root "
                  "or add --workers to go further")


def _whole(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise UsageError(f"{what}: expected a whole number, got {v!r}")
    if not 1 <= v <= MAX_COUNT:
        raise UsageError(f"{what}: must be between 1 and {MAX_COUNT:,}, got {v}")
    return v


def convert(key: str, v: Any, what: str) -> Any:
    if key == "slo":
        if not isinstance(v, str):
            raise UsageError(f"{what}: expected checks like 'p99<500ms, failed_rate<1%', got {v!r}")
        return parse_slo(v, what)
    if key == "resolution":
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise UsageError(f"{what}: expected a percentage like \"10%\", got {v!r}")
        r = parse_percent(str(v), what)
        if not 0 < r <= 1:
            raise UsageError(f"{what}: must be above 0% and at most 100%, got {v}")
        return r
    if key == "probe_time":
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise UsageError(f"{what}: expected a duration like \"5s\", got {v!r}")
        return parse_duration(v, what, allow_zero=False)
    return _whole(v, what)


BAD = object()
"""A flag's value that could not be read (its problem said already): no value, and no "not given" either."""


class Unread(UsageError):
    """No search for a flag that could not be read (`BAD`): its own problem is said, this adds none."""

    @property
    def messages(self) -> list[str]:
        return []


def capacity_spec(spec: RunSpec, table: dict[str, Any], flags: dict[str, Any], where: str = "[capacity]"
                  ) -> CapacitySpec:
    """The file's [capacity] table, then the flags given (already parsed); all problems at once."""
    problems = Problems()
    values: dict[str, Any] = {}
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        problems.add(f"{where} has unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})")
    for key in KEYS:
        if key in table:
            try:
                values[key] = convert(key, table[key], f"{where} {key}")
            except UsageError as e:
                problems.take(e)
    values.update({k: v for k, v in flags.items() if v is not None and v is not BAD})
    if "slo" not in values and flags.get("slo") is not BAD:
        problems.add("no target: give --slo 'p99<500ms, failed_rate<1%' (or slo in a [capacity] table)")
    unit: Literal["clients", "requests/s"] = "requests/s" if spec.schedule == "rate" else "clients"
    top, why = default_max(spec, unit)
    if "max" in values:
        top, why = values["max"], "the most asked for"
    start = values.get("start", START)
    if start > top:
        problems.add(f"--start {start:,} is above the most the search may go to, {top:,} ({why})")
    confirm, most = values.get("confirm", CONFIRM), values.get("max_confirm")
    if most is not None and most < confirm:
        problems.add(f"--max-confirm {most:,} is below --confirm {confirm:,}: a confirmation starts with "
                     "--confirm trials and may only grow")
    problems.raise_if_any(UsageError)
    if "slo" not in values:  # a --slo that could not be read: its problem is the caller's to say
        raise Unread("a --slo that could not be read")
    return CapacitySpec(values["slo"], start, top, why, values.get("resolution", RESOLUTION), confirm,
                        values.get("probe_time", PROBE_S), unit=unit, max_confirm=most)
