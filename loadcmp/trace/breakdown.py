"""A request's time split into parts: what the client measured of its own, what the servers measured of theirs.

Every part is a duration measured on one side (the client's phases, a server's own times, the difference of two
times one server took); no part is a client time minus a server time of day. What is left of the client's latency
once its own phases and the front server's whole time are taken out is `unexplained`: the listen queue before the
server read the request, and the network; it is signed, and a request whose servers say more than its client saw
by over `SLACK_MS` is marked (`over`). Where the app's database logged a request's queries (MariaDB's own time
for them), that time is taken out of its upstream's as `database`; elsewhere the database's part is unknown (NaN),
not zero, and stays inside the upstream's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

SLACK_MS = 1.0
"""How far the parts may exceed the client's latency before a request is marked: nginx times to the
millisecond."""

CLIENT_PARTS = ("queue", "connect", "handshake", "write")
SERVER_PARTS = ("server", "upstream_wait", "upstream", "database")
PARTS = (*CLIENT_PARTS, "unexplained", *SERVER_PARTS)
"""The parts in the order a request goes through them; they add up to the client's latency."""

WORDS = {
    "queue": "waited behind a busy client before it was sent",
    "connect": "was connecting",
    "handshake": "was in the TLS handshake",
    "write": "was being sent",
    "unexplained": "waited in the listen queue (or the network) before the server read it",
    "server": "was in the web server itself",
    "upstream_wait": "waited for a {upstream} worker",
    "upstream": "ran in {upstream}",
    "database": "was in the database (its own time for the request's queries)",
}
"""Each part in words, as a sentence's predicate ("91 % of its p99 waited in the listen queue ...")."""

SHORT = {"queue": "client queue", "connect": "connect", "handshake": "TLS", "write": "send",
         "unexplained": "listen queue + network", "server": "web server", "upstream_wait": "upstream queue",
         "upstream": "upstream", "database": "database"}
"""Each part's name in a table's header and a figure's legend (the report's, compare's, the live page's)."""

UPSTREAM_WORDS = {"fpm": "php-fpm", "apache": "the Apache back end"}
"""The upstream by program, as the words name it."""

COLUMN = {p: f"{p}_ms" for p in PARTS}
"""Each part's column in parts.parquet."""


def words(part: str, upstream: str = "fpm") -> str:
    """A part's predicate, its upstream named."""
    return WORDS[part].format(upstream=UPSTREAM_WORDS.get(upstream, upstream or "the upstream"))


def split(df: pd.DataFrame) -> pd.DataFrame:
    """The parts (ms) of each joined request. `df` has the client's columns (t_intended, t_start, connect_ms,
    handshake_ms, write_ms, latency_ms) and the servers' (front_ms: the front's whole time; front_up_ms: the time
    it waited for its upstream, NaN where it does not say; up_ms: the upstream's own time, NaN where none logged;
    db_ms, optional: the database's time for its queries, NaN where none logged). A request no server logged has no
    server part: its whole remainder is `unexplained`."""
    import numpy as np
    import pandas as pd

    out = pd.DataFrame(index=df.index)
    out["queue_ms"] = ((df["t_start"] - df["t_intended"]) * 1000).clip(lower=0).fillna(0)
    for p in ("connect", "handshake", "write"):
        out[COLUMN[p]] = df[f"{p}_ms"].astype("float64").fillna(0).clip(lower=0)
    front, front_up, up = (df[c].astype("float64") for c in ("front_ms", "front_up_ms", "up_ms"))
    waited = front_up.where(front_up.notna(), up)  # what the front spent on its upstream, by its own clock first
    out["upstream_ms"] = pd.Series(np.fmin(up, waited), index=df.index).where(up.notna(), waited).fillna(0)
    out["upstream_wait_ms"] = (waited - up).clip(lower=0).where(front_up.notna() & up.notna(), 0.0)
    out["server_ms"] = (front - waited.fillna(0)).clip(lower=0)
    db = df["db_ms"].astype("float64") if "db_ms" in df.columns else pd.Series(np.nan, index=df.index)
    out["database_ms"] = pd.Series(np.fmin(db, out["upstream_ms"]), index=df.index).where(db.notna())
    out["upstream_ms"] -= out["database_ms"].fillna(0)  # the queries ran inside the upstream's own time
    out.loc[front.isna(), ["server_ms", "upstream_ms", "upstream_wait_ms", "database_ms"]] = np.nan
    known = out[[COLUMN[p] for p in (*CLIENT_PARTS, *SERVER_PARTS)]].fillna(0).sum(axis=1)
    out["unexplained_ms"] = df["latency_ms"].astype("float64") - known
    out["over"] = out["unexplained_ms"] < -SLACK_MS
    return out[[*[COLUMN[p] for p in PARTS], "over"]]


def shares(parts: pd.DataFrame, latency: pd.Series, q: float) -> dict[str, float]:
    """Each part's share of the latency at quantile `q` (0.5, 0.99): the parts' means over the requests around it
    (the top 1 % for p99; the middle tenth for p50) against their latencies' mean. Empty without requests; no
    `database` where no database logged those requests (its part is unknown, not zero)."""
    lat = latency.dropna()
    if lat.empty:
        return {}
    lo, hi = (lat.quantile(q), lat.max()) if q >= 0.9 else (lat.quantile(q - 0.05), lat.quantile(q + 0.05))
    near = lat[(lat >= lo) & (lat <= hi)].index
    total = float(lat.loc[near].mean())
    if not total > 0:
        return {}
    return {p: float(parts.loc[near, COLUMN[p]].fillna(0).mean()) / total for p in PARTS
            if COLUMN[p] in parts and (p != "database" or parts.loc[near, COLUMN[p]].notna().any())}
