"""--trace: where the time went. Per label and level, the share of p50 and p99 in each part of a request's time
(`trace.breakdown`), in sentences; the join's figures (matched, unmatched by why); the slowest traced requests
with their parts; the parts stacked per level as a figure; `--json`'s `time_parts` of a cell.

Read from parts.parquet and trace.json (`store.traceparts`); nothing here for a run that was not traced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from ..store import traceparts
from ..store.reader import Results
from ..trace.breakdown import COLUMN, PARTS, SHORT, UPSTREAM_WORDS, shares, words

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LEGEND = ("Share of p99: each part's mean over the slowest 1 % of the traced requests, against their latency's "
          "mean. client queue: behind a busy client before it was sent; listen queue + network: what no server "
          "logged of the client's time (unexplained); web server: the front server's own time less its upstream's; "
          "upstream queue: the wait for a php-fpm worker (or the Apache back end), where the front timed its "
          "upstream; upstream: PHP's (or the back end's) own time, less the database's; database: the database's "
          "own time for the request's queries, where the app's data logs it (MariaDB's performance_schema). "
          "Matched: the answered requests a server logged. Parts come from times each measured on one side.")
SLOWEST = 20
SLOWEST_LEGEND = (f"The {SLOWEST} slowest traced requests of the run, each part in ms (– where no server logged it); "
                  "the trace id finds its lines in the servers' trace logs and in a tracing back end "
                  "(--trace-export).")
CAUSE_PART = {"kernel.listen_overflow": "unexplained", "apache.max_request_workers": "unexplained",
              "fpm.max_children": "upstream_wait", "nginx.upstream_connect_eagain": "upstream_wait"}
"""The existing causes, by the part their evidence explains."""


def parts_of(data: Results) -> pd.DataFrame | None:
    """Every folder's parts.parquet, its labels as the report names them (None: no run traced)."""
    frames = []
    for run in data.runs:
        df = traceparts.read_parts(run.path)
        if df is None or df.empty:
            continue
        names = {old: new for new, (r, old) in data.origin.items() if r is run}
        missing = {COLUMN[p]: float("nan") for p in PARTS if COLUMN[p] not in df}  # a part a folder predates
        frames.append(df.assign(label=df["label"].map(lambda x, n=names: n.get(x, x)), **missing))
    return pd.concat(frames, ignore_index=True) if frames else None


def _matched(parts: pd.DataFrame) -> pd.DataFrame:
    """The answered requests a server logged: those whose time splits into parts."""
    return parts[(parts["status"] > 0) & parts["front"].ne("")]


def cell_requests(parts: pd.DataFrame, label: str, level: int) -> pd.DataFrame:
    """One cell's answered requests a server logged (none: an empty frame)."""
    ok = _matched(parts)
    return ok[(ok["label"] == label) & (ok["level"] == level)]


def _cells(parts: pd.DataFrame) -> list[tuple[str, int, pd.DataFrame]]:
    """The answered requests a server logged, per label and level, in the report's order."""
    ok = _matched(parts)
    return [(str(key[0]), int(cast(int, key[1])), g)
            for key, g in ok.groupby(["label", "level"], sort=True)]


def _shown(parts: pd.DataFrame) -> list[str]:
    """The parts any request spent time in (a plain-http run has no TLS column)."""
    return [p for p in PARTS if parts[COLUMN[p]].fillna(0).abs().sum() > 0]


def share_rows(data: Results, parts: pd.DataFrame | None = None) -> tuple[list[str], list[list[str]]]:
    """The section's table: per label and level, requests, matched share, p50 and p99, and each part's share of
    p99."""
    parts = parts_of(data) if parts is None else parts
    if parts is None:
        return [], []
    shown = _shown(parts)
    head = ["server", "clients", "traced", "matched", "p50 ms", "p99 ms", *[SHORT[p] for p in shown]]
    rows = []
    for lab, lev, g in _cells(parts):
        cell = parts[(parts["label"] == lab) & (parts["level"] == lev)]
        answered = cell[cell["status"] > 0]
        sh = shares(g, g["latency_ms"].astype(float), 0.99)
        lat = g["latency_ms"].astype(float)
        rows.append([lab, f"{lev:,}", f"{len(cell):,}", f"{len(g) / max(len(answered), 1):.1%}",
                     f"{lat.quantile(0.5):,.1f}", f"{lat.quantile(0.99):,.1f}",
                     *[f"{sh.get(p, 0):.0%}" for p in shown]])
    return head, rows


def _biggest(sh: dict[str, float]) -> tuple[str, float]:
    return max(sh.items(), key=lambda kv: kv[1]) if sh else ("", 0.0)


def lines(data: Results, parts: pd.DataFrame | None = None) -> list[str]:
    """The section in sentences: where each cell's p99 and p50 went, what did not match, requests marked."""
    parts = parts_of(data) if parts is None else parts
    if parts is None:
        return []
    out = []
    for lab, lev, g in _cells(parts):
        lat = g["latency_ms"].astype(float)
        up = str(g["upstream"].mode().iat[0]) if g["upstream"].ne("").any() else ""
        p99, s99 = _biggest(shares(g, lat, 0.99))
        p50, s50 = _biggest(shares(g, lat, 0.5))
        out.append(f"{lab} at {lev:,} clients: {s99:.0%} of its p99 ({lat.quantile(0.99):,.1f} ms) "
                   f"{words(p99, up)}{_evidence(data, lab, lev, p99)}; of its p50, {s50:.0%} {words(p50, up)}.")
        if said := _database(data, lab, g, up):
            out.append(f"{lab} at {lev:,} clients: {said}")
        if (n := int(g["over"].sum())):
            whose = "request's servers" if n == 1 else "requests' servers"
            out.append(f"{lab} at {lev:,} clients: {n:,} {whose} said more time than the client saw (a log line "
                       f"written after the answer left); marked, the listen queue counted negative.")
    out += unmatched_lines(data)
    return out


def _database(data: Results, label: str, cell: pd.DataFrame, upstream: str) -> str:
    """The database's part of a cell, from its own figures (its share of p99 and p50, its queries a request); for an
    app whose database logged none of the cell's requests, that its part is unknown, not zero, and why: its database
    logs none (the app's data has no database trace log), or it logged none of these ('' where no app ran and no
    database logged)."""
    if cell["database_ms"].notna().any():
        lat = cell["latency_ms"].astype(float)
        p99, p50 = (shares(cell, lat, q).get("database", 0.0) for q in (0.99, 0.5))
        known = cell[cell["database_ms"].notna()]
        n, ms = known["db_queries"].astype(float).mean(), known["database_ms"].astype(float).mean()
        return (f"the database's own figures: {p99:.0%} of its p99 and {p50:.0%} of its p50 were in its queries "
                f"({n:,.0f} a request, {ms:,.1f} ms in all on average).")
    got = data.info(label)
    app = got[1].get("app") if got else None
    if not app:
        return ""
    why = {True: f"the app {app}'s database logged none of these requests",
           False: f"the app {app} logs no database time per request",
           None: "no database logged these requests"}[database_logs(str(app))]
    inside = UPSTREAM_WORDS.get(upstream, upstream or "the upstream")
    return f"the database's part is unknown ({why}); it is inside {inside}'s part."


def database_logs(app: str) -> bool | None:
    """Whether the app's data has its database write a trace log (a role's script `trace.serverlogs.DUMPS` finds);
    None where the app is not known here (a run made elsewhere)."""
    from fnmatch import fnmatch

    from ..errors import LoadcmpError
    from ..lab.apps import catalog
    from ..trace.serverlogs import DUMPS

    try:
        known = catalog().get(app)
    except LoadcmpError:
        return None
    if known is None:
        return None
    files = [*known.files, *(f for role in known.roles for f in role.files)]
    return any(fnmatch(f"/etc/loadcmp/{dest}", DUMPS) for dest, _ in files)


def _evidence(data: Results, label: str, level: int, part: str) -> str:
    """The cause the servers' evidence found in the cell that explains `part` (its tunable and value), or ''."""
    for t in data.cell(label, level):
        for c in t.get("causes", []):
            if CAUSE_PART.get(c["cause"]) == part:
                return f" ({c['setting']} {c['value']})" if "setting" in c and "value" in c else f" ({c['cause']})"
    return ""


def unmatched_lines(data: Results) -> list[str]:
    """What did not match, per label and level, summed over the trials and named."""
    by: dict[tuple[str, int], dict[str, int]] = {}
    for run in data.runs:
        for m in traceparts.read_matches(run.path):
            d = by.setdefault((m["label"], m["level"]), {})
            for why, n in m["unmatched"].items():
                d[why] = d.get(why, 0) + n
    return [f"{lab} at {lev:,} clients, not matched: " + "; ".join(f"{n:,} {why}" for why, n in d.items())
            for (lab, lev), d in sorted(by.items()) if d]


def slowest_rows(data: Results, parts: pd.DataFrame | None = None, n: int = SLOWEST
                 ) -> tuple[list[str], list[list[str]]]:
    """The slowest traced requests, each with its parts (ms) and its id (to find its servers' lines)."""
    parts = parts_of(data) if parts is None else parts
    if parts is None or parts.empty:
        return [], []
    shown = _shown(parts)
    top = parts.dropna(subset=["latency_ms"]).nlargest(n, "latency_ms")
    head = ["server", "clients", "trial", "trace id", "status", "latency ms", *[SHORT[p] for p in shown]]
    rows = [[str(r["label"]), f"{int(r['level']):,}", str(int(r["trial"])), str(r["trace_id"]),
             str(int(r["status"])) if r["status"] > 0 else str(r["kind"]), f"{r['latency_ms']:,.1f}",
             *[("–" if pd.isna(r[COLUMN[p]]) else f"{r[COLUMN[p]]:,.1f}") for p in shown]]
            for _, r in top.iterrows()]
    return head, rows


def cell_json(data: Results, server: str, level: int) -> dict[str, Any]:
    """`--json`'s `time_parts` of a cell: each part's share of p50 and p99, the matched share (none untraced)."""
    parts = parts_of(data)
    if parts is None:
        return {}
    g = next((g for lab, lev, g in _cells(parts) if lab == server and lev == level), None)
    if g is None:
        return {}
    lat = g["latency_ms"].astype(float)
    cell = parts[(parts["label"] == server) & (parts["level"] == level) & (parts["status"] > 0)]
    return {"time_parts": {"requests": len(g), "matched": round(len(g) / max(len(cell), 1), 4),
                           "p50": {p: round(v, 4) for p, v in shares(g, lat, 0.5).items()},
                           "p99": {p: round(v, 4) for p, v in shares(g, lat, 0.99).items()}}}


def figure(data: Results) -> Figure | None:
    """The parts of p99 stacked per level (ms), one panel per label; None when no run traced."""
    import matplotlib.pyplot as plt

    parts = parts_of(data)
    if parts is None:
        return None
    cells = _cells(parts)
    labels = list(dict.fromkeys(lab for lab, _, _ in cells))
    shown = _shown(parts)
    fig, axes = plt.subplots(1, len(labels), figsize=(4.2 * len(labels), 3.6), squeeze=False, sharey=True)
    for ax, lab in zip(axes[0], labels, strict=True):
        mine = [(lev, g) for lb, lev, g in cells if lb == lab]
        bottom = [0.0] * len(mine)
        for p in shown:
            ms = [shares(g, g["latency_ms"].astype(float), 0.99).get(p, 0.0)
                  * float(g["latency_ms"].astype(float).quantile(0.99)) for _, g in mine]
            ax.bar([f"{lev:,}" for lev, _ in mine], ms, bottom=bottom, label=SHORT[p])
            bottom = [b + max(m, 0.0) for b, m in zip(bottom, ms, strict=True)]
        ax.set_title(lab)
        ax.set_xlabel("clients")
    axes[0][0].set_ylabel("p99 ms, by part")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
