"""The servers' connections by state, per level, beside their busy workers: what their status pages counted once a
second (Apache's scoreboard, nginx's reading / writing / waiting, lighttpd's and php-fpm's own states), as the
stack's data names them (`[status.KIND] states`, stored with each label as `states`: `records.ServerInfo`).

A slow or idle client shows here and nowhere else on the server's side: a worker held by an idle keep-alive
connection is busy to its pool but serves nobody. A page the server's own workers serve (Apache's) goes unanswered
when every worker is held; those seconds have no figures, and are counted (`busy_unread`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .connects import cell_section
from .streams import clients

if TYPE_CHECKING:
    from ..store.reader import Results

UNREAD = "busy_unread"  # observe.statuspages.BUSY_UNREAD: the report reads stored columns, not the observer


@dataclass(frozen=True)
class State:
    """One state column of a cell: its words, its mean over the seconds a page gave it, its peak."""

    column: str
    said: str
    mean: float
    peak: float


@dataclass(frozen=True)
class CellStates:
    """A cell's connections by state over its trials' windows."""

    states: list[State]
    seconds: int  #: the samples of the cell's windows
    unanswered: int  #: of those, the seconds the page that counts busy workers went unanswered
    busy_peak: float | None
    limit: tuple[str, int] | None  #: the setting that caps busy workers, and its value


def limit_of(data: Results, server: str) -> tuple[str, int] | None:
    """The setting that caps a label's busy workers (its stack's `busy_limit`) and its value as the label ran it."""
    found = data.info(server)
    key = found[1].get("busy_limit") if found else None
    settings = (found[1].get("settings") or {}) if found else {}
    return (key, int(settings[key])) if key is not None and key in settings else None


def cell_states(data: Results, server: str, level: int) -> CellStates | None:
    """A cell's states from server.parquet (None: its label stored no states, or no sample gave one)."""
    found = data.info(server)
    words: dict[str, str] = dict((found[1].get("states") or {}) if found else {})
    sv = data.server
    if not words or sv.empty or "server" not in sv or "level" not in sv:
        return None
    rows = sv[(sv.server == server) & (sv.level == level)]
    states = [State(col, said, float(vals.mean()), float(vals.max())) for col, said in words.items()
              if col in rows and len(vals := rows[col].dropna())]
    if not states:
        return None
    busy = rows["busy_workers"].dropna() if "busy_workers" in rows else rows.iloc[0:0]
    unread = int(rows[UNREAD].fillna(0).sum()) if UNREAD in rows else 0
    peak = float(cast(float, busy.max())) if len(busy) else None
    return CellStates(states, len(rows), unread, peak, limit_of(data, server))


def _n(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or float(v).is_integer() else f"{v:,.1f}"


def cell_line(data: Results, server: str, level: int) -> str | None:
    """'apache-prefork at 300 clients: busy workers peaked at 149 of prefork.MaxRequestWorkers 150; idle in
    keep-alive 120 (140), …; its status page went unanswered 8 of 15 seconds.'"""
    c = cell_states(data, server, level)
    if c is None:
        return None
    parts = []
    if c.busy_peak is not None:
        parts.append(f"busy workers peaked at {_n(c.busy_peak)}" + (f" of {c.limit[0]} {c.limit[1]:,}" if c.limit
                                                                    else ""))
    parts.append(", ".join(f"{s.said} {_n(s.mean)} ({_n(s.peak)})" for s in c.states))
    if c.unanswered:
        parts.append(f"its status page went unanswered {c.unanswered:,} of {c.seconds:,} seconds (every worker held)")
    return f"{server} at {clients(data, server, level)}: " + "; ".join(parts) + "."


def connection_states(data: Results) -> list[str]:
    """The report's section: each cell's connections by state (none stored: no section)."""
    return cell_section(data, cell_line,
                        "From the status pages, once a second: each state's mean over the seconds its page answered, "
                        "its peak in brackets. A worker idle in keep-alive is busy to its pool but serves nobody until "
                        "its client's next request; a page the server's own workers serve goes unanswered when every "
                        "worker is held, and those seconds have no figures.")


def states_json(data: Results, server: str, level: int) -> dict[str, Any]:
    """A `--json` row's `states` (none stored: {}): each column's state in words, mean and peak; the seconds sampled
    and those the page went unanswered; the busy workers' peak."""
    c = cell_states(data, server, level)
    if c is None:
        return {}
    return {"states": {"seconds": c.seconds, "unanswered": c.unanswered, "busy_workers_peak": c.busy_peak,
                       "columns": {s.column: {"state": s.said, "mean": round(s.mean, 2), "peak": s.peak}
                                   for s in c.states}}}
