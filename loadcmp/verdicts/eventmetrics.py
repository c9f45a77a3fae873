"""Checks and findings on what a trial's events cost (`--event`): `reload.failed`, `kill_worker.recovery`.

A metric of an event is `ACTION.NAME`: the action as the stack's data names it, its words joined by `_`
(`reload`, `reload_php`, `kill_worker`, `restart_web`, `pause_db`; every `set KEY=VALUE` is `set`), then one of
`EVENT_METRICS`. Its figures are each event's cost as the report computes it from the trial's stored seconds
(`report.events.cell_costs`), never from text loadcmp wrote:

- `failed`, `unanswered`: per event of the action (the trial's sum over its events of that action, divided by
  them), so runs with more or fewer events compare;
- `failed_rate`: the failed over the requests that ended in those events' windows (served or failed);
- `recovery`: the longest of the trial's events (seconds; one never back within its window is infinite);
- `p99_ratio`: the highest p99 of an event's window against the 5 s before it;
- `events`: how many of the action's events fired in the trial.

A trial gives one value; a finding's interval is over trials, as every finding's. No value, in one line, is a
reason: no event of that action in the cell (its events named), an event of it that failed (its command or its
container; its cost says nothing of the server), or a recovery with no second before it to compare.

A client-bound side does not leave a count inconclusive (`judge`): a request an event failed is the server's
failure, whatever the client's pace. `==` (findings and smoke checks) is judged on counts exactly: supported when
every trial measured the value (with at least `judge.MIN_TRIALS` trials), not supported when one did not (a
counterexample is one at any count).

Kept free of pandas at import (the spec validates checks when the CLI starts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..records import FindingVerdict

if TYPE_CHECKING:
    from ..report.events import EventCost
    from ..store.reader import Results

EVENT_METRICS: dict[str, tuple[str, str]] = {
    "failed": ("", "requests failed in the windows of the action's events, per event"),
    "failed_rate": ("ratio", "failed / (served + failed) in the windows of the action's events"),
    "unanswered": ("", "requests sent that never got an answer (reset, timeout, protocol error, stream reset, "
                       "goaway) in the windows of the action's events, per event"),
    "recovery": ("seconds", "the longest time from an event until throughput was back within 10 %"),
    "p99_ratio": ("", "the highest p99 of an event's window against the 5 s before it"),
    "events": ("", "events of the action fired per trial"),
}
"""An event metric's name -> (kind, meaning), as `checks.METRICS`."""
EXACT = frozenset({"failed", "unanswered", "failed_rate", "events"})
"""Counts: `==` may judge them (every trial measured the value, or one did not)."""
UNANSWERED = ("reset", "timeout", "protocol_error", "stream_reset", "goaway")
"""How a request that was sent ends when no answer comes (a refused connect was never sent; a 5xx is an answer)."""
SET = "set"


def split(metric: str) -> tuple[str, str] | None:
    """`reload_php.failed` -> ("reload_php", "failed"); None for a metric of the load (`rps`, `p`)."""
    action, dot, name = metric.rpartition(".")
    return (action, name) if dot and action else None


def is_event(metric: str) -> bool:
    return split(metric) is not None


def counted(metric: str) -> bool:
    """Whether a metric is what an event's requests counted (`EXACT`): `==` judges it, a client-bound side
    bounds it not."""
    got = split(metric)
    return got is not None and got[1] in EXACT


def check_event_metric(text: str, metric: str, q: str | None) -> None:
    """Refuse an event metric whose name is unknown, or one given a percentile."""
    got = split(metric)
    assert got is not None
    if got[1] not in EVENT_METRICS:
        raise UsageError(f"check {text!r}: unknown event metric {got[1]!r} in {metric!r}; known: "
                         f"{', '.join(f'{got[0]}.{k}' for k in EVENT_METRICS)}")
    if q is not None:
        raise UsageError(f"check {text!r}: only p(N) takes a number; {metric} takes none")


def kind(metric: str) -> str:
    """An event metric's kind (its scale): ratio, seconds, or a plain number."""
    got = split(metric)
    assert got is not None
    return EVENT_METRICS[got[1]][0]


def key_of(action: str) -> str:
    """The name a check gives an action: its words joined by `_` (every `set KEY=VALUE` is `set`)."""
    words = action.split()
    return SET if words and words[0] == SET else "_".join(words)


def _value(name: str, costs: Sequence[EventCost], trials: int) -> float | str:
    """One figure of a group of events of one action (one trial's, or a label's pooled), or why there is none."""
    if name == "events":
        return len(costs) / trials
    if broken := [c for c in costs if not c["ok"]]:
        c = broken[0]
        return f"its {c['action']} at {c['start_s']:g} s (trial {c['trial']}) failed: {c['said']}"
    if name == "failed":
        return sum(c["failed"] for c in costs) / len(costs)
    if name == "unanswered":
        return sum(c["failures"].get(k, 0) for c in costs for k in UNANSWERED) / len(costs)
    if name == "failed_rate":
        ended = sum(c["failed"] + c["served"] for c in costs)
        return sum(c["failed"] for c in costs) / ended if ended else 0.0
    if name == "recovery":
        based = [c for c in costs if c["recovery_why"] != "no baseline"]
        if not based:
            return "its events fired in the window's first second, with no second before them to compare"
        return max(math.inf if c["recovery_s"] is None else c["recovery_s"] for c in based)
    ratios = [c["p99_during_ms"] / c["p99_before_ms"] for c in costs
              if c["p99_during_ms"] is not None and c["p99_before_ms"]]
    return max(ratios) if ratios else "no p99 before and in its events' windows"


def _costs(res: Results, metric: str, server: str, level: int) -> tuple[list[EventCost], list[EventCost]]:
    """(the cell's events of the metric's action, all the cell's events)."""
    from ..report.events import cell_costs

    got = split(metric)
    assert got is not None
    every = cell_costs(res, server, level)
    return [c for c in every if key_of(c["action"]) == got[0]], every


def _none(metric: str, where: str, every: Sequence[EventCost]) -> str:
    action = split(metric)[0]  # type: ignore[index]
    had = sorted({key_of(c["action"]) for c in every})
    return (f"no {action} event in {where}" + (f" (its events: {', '.join(had)})" if had else " (it had no events)"))


def per_trial(res: Results, metric: str, server: str, level: int) -> tuple[list[float], str | None]:
    """One value per measured trial of a cell (a finding's sample), or why there is none (no event of that
    action, one that failed)."""
    mine, every = _costs(res, metric, server, level)
    name = split(metric)[1]  # type: ignore[index]
    trials = [t["trial"] for t in res.cell(server, level)]
    if not trials:  # nothing measured: the finding's own "no data" says so
        return [], None
    if not mine and name != "events":
        return [], _none(metric, f"{server} at {level}", every)
    out: list[float] = []
    for t in trials:
        v = _value(name, [c for c in mine if c["trial"] == t], 1) if name == "events" or any(
            c["trial"] == t for c in mine) else _none(metric, f"{server} at {level}, trial {t}", every)
        if isinstance(v, str):
            return [], v
        if math.isinf(v):
            late = next(c for c in mine if c["trial"] == t and c["recovery_why"] == "not back")
            return [], f"its {late['action']} at {late['start_s']:g} s (trial {t}) was not back within its window"
        out.append(v)
    return out, None


def pooled(res: Results, metric: str, server: str) -> float | str:
    """A smoke check's value: a label's events of the action over every level and trial, or why none."""
    mine: list[EventCost] = []
    every: list[EventCost] = []
    for level in res.levels:
        m, e = _costs(res, metric, server, level)
        mine, every = mine + m, every + e
    trials = sum(len(res.cell(server, level)) for level in res.levels)
    if not trials:
        return "nothing was measured"
    if not mine:
        return _none(metric, "this run", every)
    return _value(split(metric)[1], mine, trials)  # type: ignore[index]


def exact(values: Sequence[float], target: float, min_trials: int) -> tuple[FindingVerdict, str | None]:
    """`==` on counts over trials (see the module docstring)."""
    off = [v for v in values if v != target]
    if off:
        return "not supported", f"{len(off)} of {len(values)} trials measured otherwise (up to {max(off):g})"
    if len(values) < min_trials:
        return "inconclusive", (f"only {len(values)} trial{'s' if len(values) != 1 else ''}: an equality holds on "
                                f"{min_trials} or more, each exactly {target:g}; run --trials {min_trials} or more")
    return "supported", None
