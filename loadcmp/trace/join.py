"""After a trial: the servers' trace lines joined to the client's rows (requests.parquet) by trace id.

Each client row gets its front server's line (the program that took the request: nginx, Caddy, lighttpd or
Apache), its upstream's (php-fpm, or Apache behind nginx) and its database's (the queries MariaDB ran for it, where
an app's data logs them), then its parts (`breakdown.split`). What does not
match is counted by why: a client row with an answer and no line (the log dropped it, or it was rotated away), a
client row without an answer and no line (the request never reached the server), a line without a client row (a
warm-up request, or one the client kept no row of).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import pandas as pd

from .breakdown import PARTS, COLUMN, split
from .serverlogs import DATABASES, FRONTS, ServerLine

KEYS = ("label", "level", "trial")
"""What names a trial in requests.parquet and parts.parquet."""

NO_LINE_ANSWERED = "answered, but no server logged it (a log that dropped lines, or was rotated mid-window)"
NO_LINE_UNANSWERED = "no answer and no server line (the request never reached the server)"
NO_ROW_WARMUP = "a server line with no client row, before the window (a warm-up request)"
NO_ROW = "a server line with no client row (a request the client kept no row of)"
UPSTREAM_ONLY = "an upstream line whose front logged nothing"
DB_ONLY = "a database line whose request no web server logged"


def client_ids(requests: pd.DataFrame) -> pd.Series:
    """The client's trace ids as 32 lowercase hex: the one place that reads how requests.parquet keeps them
    (a `trace_id` string, or two uint64 columns `trace_hi`, `trace_lo`)."""
    if "trace_id" in requests.columns:
        return requests["trace_id"].astype(str).str.lower()
    hi, lo = (requests[c].astype("uint64") for c in ("trace_hi", "trace_lo"))
    return pd.Series([f"{h:016x}{lo_:016x}" for h, lo_ in zip(hi, lo, strict=True)], index=requests.index,
                     dtype=object)


@dataclass
class Joined:
    """One trial's requests with their parts, and what did not match, by why."""

    parts: pd.DataFrame
    unmatched: Counter[str] = field(default_factory=Counter)

    def matched_share(self) -> float | None:
        """The share of answered requests a server logged (None: none answered)."""
        answered = self.parts[self.parts["status"] > 0]
        return float(answered["front"].ne("").mean()) if len(answered) else None


def _rank(program: str) -> int:
    """A program's place on a request's way: the fronts in `FRONTS`' order, then what serves behind them."""
    return FRONTS.index(program) if program in FRONTS else len(FRONTS)


def _added(a: ServerLine, b: ServerLine) -> ServerLine:
    """Two lines of one program with one id (a journey step's redirects carry the step's id): their times summed,
    stamped at the first."""
    def both(x: float, y: float) -> float:
        return x if y != y else y if x != x else x + y  # NaN: that line does not say

    return replace(a, at=min(a.at, b.at), total_ms=both(a.total_ms, b.total_ms),
                   upstream_connect_ms=both(a.upstream_connect_ms, b.upstream_connect_ms),
                   upstream_ms=both(a.upstream_ms, b.upstream_ms), queries=a.queries + b.queries,
                   status=b.status if b.at >= a.at else a.status)


def servers_by_id(lines: Iterable[ServerLine]) -> tuple[pd.DataFrame, Counter[str]]:
    """Per trace id: its front's program, whole time and upstream time, its upstream's program and time, and its
    database's time and queries (NaN and 0 where no database logged it); upstream and database lines without a
    front line counted. A program that logged an id more than once (a step and its redirects) has its lines' times
    summed; with nginx in front of Apache, Apache is nginx's upstream."""
    by: dict[str, dict[str, ServerLine]] = {}
    for ln in lines:
        mine = by.setdefault(ln.trace_id, {})
        mine[ln.program] = _added(mine[ln.program], ln) if ln.program in mine else ln
    rows, missing = [], Counter[str]()
    for t, progs in by.items():
        d = next((ln for p, ln in progs.items() if p in DATABASES), None)
        way = sorted((ln for p, ln in progs.items() if p not in DATABASES), key=lambda x: _rank(x.program))
        if not way or way[0].program not in FRONTS:
            if way:
                missing[UPSTREAM_ONLY] += 1
            if d is not None:
                missing[DB_ONLY] += 1
            continue
        f, u = way[0], (way[1] if len(way) > 1 else None)
        rows.append({"trace_id": t, "front": f.program, "front_ms": f.total_ms, "front_up_ms": f.upstream_ms,
                     "front_at": f.at, "upstream": u.program if u else "", "up_ms": u.total_ms if u else float("nan"),
                     "db_ms": d.total_ms if d else float("nan"), "db_queries": d.queries if d else 0})
    cols = ["trace_id", "front", "front_ms", "front_up_ms", "front_at", "upstream", "up_ms", "db_ms", "db_queries"]
    return pd.DataFrame(rows, columns=cols), missing


def join(requests: pd.DataFrame, lines: Iterable[ServerLine], window: tuple[float, float]) -> Joined:
    """One trial's client rows joined to its servers' lines; `window` is the measured window (epoch seconds)."""
    lines = list(lines)
    servers, unmatched = servers_by_id(lines)
    req = requests.assign(trace_id=client_ids(requests)).reset_index(drop=True)
    both = req.merge(servers, on="trace_id", how="left")
    both["front"] = both["front"].fillna("")
    both["upstream"] = both["upstream"].fillna("")
    both["db_queries"] = both["db_queries"].fillna(0).astype("int32")
    parts = split(both)
    keep = [c for c in (*KEYS, "trace_id", "t_start", "latency_ms", "status", "kind", "proto", "front", "upstream",
                        "db_queries") if c in both.columns]
    out = pd.concat([both[keep], parts], axis=1)
    lost = out["front"].eq("")
    unmatched[NO_LINE_ANSWERED] += int((lost & (out["status"] > 0)).sum())
    unmatched[NO_LINE_UNANSWERED] += int((lost & (out["status"] <= 0)).sum())
    rows = set(out["trace_id"])
    extra = servers[~servers["trace_id"].isin(rows)]
    unmatched[NO_ROW_WARMUP] += int((extra["front_at"] < window[0]).sum())
    unmatched[NO_ROW] += int((extra["front_at"] >= window[0]).sum())
    return Joined(out, +unmatched)


def empty_parts() -> pd.DataFrame:
    """parts.parquet's columns, no rows."""
    return pd.DataFrame(columns=[*KEYS, "trace_id", "t_start", "latency_ms", "status", "kind", "proto", "front",
                                 "upstream", "db_queries", *[COLUMN[p] for p in PARTS], "over"])
