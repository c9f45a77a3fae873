"""Checks and findings on a server's busy workers: `busy_workers` and `busy_share` (`BUSY_METRICS`).

A trial's figure is its peak over the window's seconds in server.parquet (the status pages' `busy_workers`, the
stack's `busy_workers` columns), never from text loadcmp wrote:

- `busy_workers`: the most workers busy in a second;
- `busy_share`: that peak over the label's worker limit (the stack's `busy_limit`, e.g. prefork.MaxRequestWorkers,
  as the label ran it), 0..1.

A page the server's own workers serve goes unanswered when every worker is held (`busy_unread`,
`observe.statuspages.BUSY_UNREAD`): such a second counts as every worker busy, the limit, since the page that
would count them could not be served. So "prefork's workers all held" is `apache-prefork:busy_share@400 >= 0.99`,
judged with an interval over trials as every finding. Mod_status counts its own request's worker among the busy:
a page that answered with all of them busy is the limit too.

No value, in one line, is a reason: the label's pages count no busy workers, or (`busy_share`) its stack names no
worker limit. Kept free of pandas at import (the spec validates checks when the CLI starts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ..store.reader import Results

BUSY_METRICS: dict[str, tuple[str, str]] = {
    "busy_workers": ("", "peak busy workers in a second of the window (a second its status page went unanswered, "
                         "every worker held, counts as the limit)"),
    "busy_share": ("ratio", "peak busy workers / the label's worker limit (its stack's busy_limit), 0..1"),
}
"""A busy metric's name -> (kind, meaning), as `checks.METRICS`."""
UNREAD = "busy_unread"  # observe.statuspages.BUSY_UNREAD: verdicts read stored columns, not the observer


def is_busy(metric: str) -> bool:
    return metric in BUSY_METRICS


def _limit(res: Results, server: str) -> int | None:
    from ..report.states import limit_of

    got = limit_of(res, server)
    return got[1] if got else None


def _peak(res: Results, server: str, level: int, trial: int, limit: int | None) -> float | None:
    """A trial's peak busy workers from its window's seconds (an unanswered second is the limit), or the trial
    record's `busy_workers_peak` where server.parquet has none of its seconds."""
    sv = res.server
    if not sv.empty and {"server", "level", "trial"} <= set(sv.columns):
        rows = sv[(sv.server == server) & (sv.level == level) & (sv.trial == trial)]
        if len(rows):
            busy = rows["busy_workers"].dropna() if "busy_workers" in rows else rows.iloc[0:0]
            unread = bool(rows[UNREAD].fillna(0).sum()) if UNREAD in rows else False
            peak = float(cast(float, busy.max())) if len(busy) else None
            if unread and limit is not None:
                return float(limit) if peak is None else max(peak, float(limit))
            return peak
    from ..store.reader import metrics_of

    got = next((metrics_of(t).get("busy_workers_peak") for t in res.cell(server, level) if t["trial"] == trial), None)
    return None if got is None else float(got)


def per_trial(res: Results, metric: str, server: str, level: int) -> tuple[list[float], str | None]:
    """One value per measured trial of a cell (a finding's sample), or why there is none."""
    trials = [t["trial"] for t in res.cell(server, level) if t.get("result")]
    if not trials:  # nothing measured: the finding's own "no data" says so
        return [], None
    limit = _limit(res, server)
    if metric == "busy_share" and not limit:
        return [], f"{server}'s stack names no worker limit (busy_limit), so busy_share has no scale"
    peaks = [p for t in trials if (p := _peak(res, server, level, t, limit)) is not None]
    if not peaks:
        return [], f"{server}'s status pages counted no busy workers at {level}"
    # A restart's old workers still finishing can count past the limit for a second: the share is held to 1 (all held).
    return ([min(1.0, p / limit) for p in peaks] if metric == "busy_share" and limit else peaks), None


def pooled(res: Results, metric: str, server: str) -> float | str:
    """A smoke check's value: a label's peak over every level and trial, or why there is none."""
    vals: list[float] = []
    why = "nothing was measured"
    for level in res.levels:
        got, reason = per_trial(res, metric, server, level)
        vals += got
        why = reason or why
    return max(vals) if vals else why
