"""Tables from a results folder: per server x level, with means and 95 % intervals.

Built from stored results only (`results.Results`), so the run's end-of-sweep
table, `--json`, the HTML and the Markdown report all say the same numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from ..load.record.summary import over_trials
from ..records import TrialRecord
from ..store.reader import Results, causes_of, metrics_of
from ..units import ms
from .capacity import capacity_json
from .causes import note
from .handshakes import bound_said, facts
from .journeys import journeys_json
from .events import events_json
from .timeparts import cell_json
from .jsonrows import page_rows, whole
from .states import states_json
from .streams import clients, streams_json, unit_of

# Student's t, two-sided 95 %, by degrees of freedom (1..30); 1.96 beyond.
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t95(df: int) -> float:
    return _T95[df - 1] if 1 <= df <= len(_T95) else 1.96


MIN_TRIALS = 3
"""Trials a cell needs before a 95 % interval is shown: from two, the t-interval is
wider than most values (t = 12.7), so two trials show their range instead."""


@dataclass(frozen=True)
class Estimate:
    """A mean over trials with its 95 % interval (`low`, `high`: None for one trial)
    and the range of the trials. Readers show `interval` (3+ trials) or the range.

    The one rule for intervals (`of`): a plain number gets Student's t-interval around its
    arithmetic mean. A skewed quantity that cannot go below zero (a latency: `skewed=True`)
    is judged on the log scale: the t-interval of the logs, taken back, which is the
    geometric mean times and divided by one factor (a ratio interval). Its bounds are
    never negative; should a value be 0 or less (no log), the plain interval is
    used with its low end held at 0, the least a latency can be."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    least: float | None = None
    most: float | None = None
    skewed: bool = False
    logs: bool = False
    """The interval was taken on the log scale (a skewed quantity whose values are all above 0)."""

    @classmethod
    def of(cls, values: Iterable[float | None], skewed: bool = False) -> Estimate:
        v = [float(x) for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
        if not v:
            return cls(None, None, None, 0, skewed=skewed)
        logs = skewed and min(v) > 0
        w = [math.log(x) for x in v] if logs else v
        m = sum(w) / len(w)
        centre = math.exp(m) if logs else m
        if len(v) < 2:
            return cls(centre, None, None, len(v), v[0], v[0], skewed, logs)
        sd = math.sqrt(sum((x - m) ** 2 for x in w) / (len(w) - 1))
        h = t95(len(w) - 1) * sd / math.sqrt(len(w))
        low, high = (math.exp(m - h), math.exp(m + h)) if logs else (max(0.0, m - h) if skewed else m - h, m + h)
        return cls(centre, low, high, len(v), min(v), max(v), skewed, logs)

    @property
    def log_se(self) -> float | None:
        """The standard error of the mean's log (relative standard error): what a ratio of two means needs
        (`report.compare.ratio`). None without an interval or a positive mean."""
        if self.low is None or self.high is None or self.mean is None or self.mean <= 0 or self.n < 2:
            return None
        t = t95(self.n - 1)
        if self.logs:
            return math.log(self.high / self.mean) / t
        return (self.high - self.mean) / t / self.mean

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % interval, only from MIN_TRIALS trials on."""
        if self.n < MIN_TRIALS or self.low is None or self.high is None:
            return None
        return self.low, self.high

    @property
    def spread(self) -> tuple[float, float] | None:
        """What a bar or a cell shows around the mean: the interval, else the range of 2 trials."""
        if self.interval:
            return self.interval
        if self.n >= 2 and self.least is not None and self.most is not None:
            return self.least, self.most
        return None

    def text(self, fmt: str = "{:,.0f}") -> str:
        """'1,234 ±56' (3+ trials), '1,234 (1,200–1,270)' (2 trials: their range), '1,234' (one)."""
        if self.mean is None:
            return "-"
        s = fmt.format(self.mean)
        if self.interval and self.skewed:  # not symmetric about the mean: both ends
            return s + f" ({fmt.format(self.interval[0])}–{fmt.format(self.interval[1])})"
        if self.interval:
            return s + f" ±{fmt.format((self.interval[1] - self.interval[0]) / 2)}"
        if self.spread and fmt.format(self.spread[0]) != fmt.format(self.spread[1]):
            return s + f" ({fmt.format(self.spread[0])}–{fmt.format(self.spread[1])})"
        return s


METRICS = ("ok", "failed", "unfinished", "rps", "p50_ms", "p90_ms", "p99_ms", "max_ms", "cpu_pct",
           "mem_peak_bytes", "pids_peak", "failed_rate", "bytes", "duration_s", "webbench_susceed", "webbench_failed")
LATENCY = frozenset({"p50_ms", "p90_ms", "p99_ms", "max_ms"})
"""The latency columns: their intervals are taken on the log scale (`Estimate.of`)."""


def aggregate(res: Results) -> pd.DataFrame:
    """One row per server x level: mean (and 95 % interval) of each metric over
    the trials that ran, how many did, and why the others did not."""
    rows = []
    df = res.summary
    for server in res.servers:
        for level in res.levels:
            sub = df[(df.server == server) & (df.level == level)]
            if sub.empty:
                continue
            ran = sub[sub.ok.notna()]
            row: dict[str, Any] = {"server": server, "level": level, "trials": len(sub), "measured": len(ran)}
            for m in METRICS:
                e = Estimate.of(ran[m].tolist(), skewed=m in LATENCY) if m in ran else Estimate(None, None, None, 0)
                row[m] = e.mean
                row[f"{m}_low"] = e.low
                row[f"{m}_high"] = e.high
            reasons = [r for r in sub.reason.tolist() if isinstance(r, str) and r]
            row["statuses"] = ",".join(sorted(set(sub.status.astype(str))))
            row["reason"] = "; ".join(dict.fromkeys(reasons)) or None
            rows.append(row)
    return pd.DataFrame(rows)


def failures_by_kind(res: Results) -> pd.DataFrame:
    """Mean failures per kind, per server x level."""
    rows = []
    for t in res.trials:
        r = t.get("result")
        if not r:
            continue
        rows.append({"server": t["server"], "level": t["level"], "trial": t["trial"], **r["failures"]})
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows).fillna(0)
    return df.groupby(["server", "level"], sort=False).mean(numeric_only=True).drop(columns=["trial"]).reset_index()


def summary_doc(res: Results) -> dict[str, Any]:
    """The `--json` summary of a run: the contract's keys (`jsonrows.ROW_KEYS`) per server x level, each page
    of a load of several pages after its whole (`jsonrows.page_rows`), means over the trials with their
    95 % interval (`ci95`, from 3 trials; 2 give `rps_range`), latency pooled over the trials, and
    the requests' counts, status codes and phases over the trials (`load.record.summary.over_trials`)."""
    agg = aggregate(res)
    fk = failures_by_kind(res)
    out = []
    for _, r in agg.iterrows():
        item: dict[str, Any] = {"server": r.server, "level": int(r.level), **whole(res, r.server, int(r.level)),
                                "trials": int(r.trials), "measured_trials": int(r.measured), "status": r.statuses,
                                "reason": r.reason}
        for k in ("ok", "failed", "unfinished", "rps", "duration_s", "bytes", "cpu_pct", "mem_peak_bytes",
                  "pids_peak", "failed_rate"):
            item[k] = _num(r[k])
        item["latency_ms"] = _pooled_ms(res, r.server, int(r.level)) or {
            "p50": _num(r.p50_ms), "p90": _num(r.p90_ms), "p99": _num(r.p99_ms), "max": _num(r.max_ms)}
        item["rps_per_core"] = cell_estimate(res, r.server, int(r.level), per_core).mean
        item.update(over_trials([d for t in res.cell(r.server, int(r.level)) if (d := t.get("result"))]))
        if not fk.empty:
            m = fk[(fk.server == r.server) & (fk.level == r.level)]
            item["failures"] = {k: _num(v) for k, v in m.iloc[0].drop(["server", "level"]).items()} if len(m) else {}
        else:
            item["failures"] = {}
        item["webbench"] = {"susceed": _num(r.webbench_susceed), "failed": _num(r.webbench_failed)}
        bound = res.client_bound(r.server, int(r.level))
        item["client_bound"] = bound is not None
        if bound is not None:
            item["client_bound_reason"] = bound.reason
            item["client_advice"] = _joined(bound.advice, bound_said(bound))
        cell, info = res.cell(r.server, int(r.level)), res.info(r.server)
        if (tls := facts(cell, info[1].get("tls") if info else None)) is not None:
            item["tls"] = tls
        if (streams := streams_json(cell)) is not None:
            item["streams"] = streams
        item.update(journeys_json(cell))
        item.update(events_json(res, r.server, int(r.level)))
        item.update(cell_json(res, r.server, int(r.level)))  # --trace: `time_parts`
        item.update(states_json(res, r.server, int(r.level)))  # connections by state (report.states)
        if replays := [t["result"]["replay"] for t in cell if "replay" in t.get("result", {})]:
            item["replay"] = replays  # a replayed log: each trial's (`traffic.logreplay.ReplayDoc`)
        if nets := [n for t in cell if (n := cast(dict[str, Any], t.get("result") or {}).get("net"))]:
            item["net"] = nets  # --net: each trial's path asked and seen, its proxy's cost (`facts.NetFacts`)
        if r.measured >= MIN_TRIALS:
            item["ci95"] = {k: [_num(r[f"{k}_low"]), _num(r[f"{k}_high"])]
                            for k in ("ok", "failed", "rps", "mem_peak_bytes") if r[f"{k}_low"] is not None
                            and not _isnan(r[f"{k}_low"])}
        elif r.measured == 2:
            est = cell_estimate(res, r.server, int(r.level), rps)
            item["rps_range"] = [est.least, est.most]
        out += [item, *page_rows(res, r.server, int(r.level))]  # a load of several pages: each page after it
    doc = {"results_dir": str(res.path), "status": res.status, "name": res.name,
           "servers": res.servers, "levels": res.levels, "results": out, "problems": res.problems,
           "findings": [f for run in res.runs for f in run.doc.get("findings", [])]}
    found = capacity_json(res)
    return doc if found is None else {**doc, "capacity": found}


def _pooled_ms(res: Results, server: str, level: int) -> dict[str, Any] | None:
    """A cell's latency percentiles over every request of its trials (None: no histogram stored)."""
    h = res.pooled_latency(server, level)
    if h.count == 0:
        return None
    pct = {f"p{q}": ms(h.percentile(q), 3) for q in (50, 90, 99)}
    return {**pct, "max": ms(h.max_s, 3), "mean": ms(h.mean, 3),
            "pooled": True}


def _joined(text: str | None, more: str | None) -> str | None:
    """Two sentences as one text (either may be None): a client-bound cell's advice and its handshakes'."""
    if not more:
        return text
    more = more[0].upper() + more[1:] + "."
    return f"{text} {more}" if text else more


def _isnan(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _num(v: object) -> Any:
    if _isnan(v):
        return None
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    return float(v) if hasattr(v, "__float__") else v


def per_core(t: TrialRecord) -> float | None:
    """Requests/s per core of server CPU the trial used (its measured CPU, 100 % = one core):
    what a server gets from the CPU it burns, beside what it gets in all."""
    r, cpu = t.get("result"), metrics_of(t).get("cpu_pct")
    if not r or not cpu or cpu <= 0:
        return None
    return float(r["rps"]) / (cpu / 100)


def cell_estimate(res: Results, server: str, level: int, get: Callable[[TrialRecord], float | None]) -> Estimate:
    """One number of a cell's measured trials, as mean, interval (3+ trials) and range."""
    return Estimate.of([v for t in res.cell(server, level) if (v := get(t)) is not None])


def rps(t: TrialRecord) -> float:
    """A measured trial's requests/s."""
    return float(t["result"]["rps"])


P99_COLUMN = "p99 ms, pooled"
"""Percentiles are pooled everywhere: the percentile of every request of the cell's trials together."""


def table1(res: Results) -> tuple[list[tuple[str, str]], list[list[str]]]:
    """The paper's Table 1: clients in rows; per server ok / failed (and webbench's count where
    it differs), req/s, req/s per server core, pooled p99, peak memory; '/' where a level
    could not run, with the reason in `notes`."""
    from ..units import format_bytes

    agg = aggregate(res)
    servers = res.servers
    webbench = webbench_differs(agg)
    cores = any(per_core(t) is not None for t in res.trials)
    memory = any(metrics_of(t).get("mem_peak_bytes") for t in res.trials)
    what = ["ok / failed", *([WEBBENCH_COLUMN] if webbench else []), "req/s", *([PER_CORE_COLUMN] if cores else []),
            P99_COLUMN, *(["mem peak"] if memory else [])]
    # a capacity search by rate chose rates: its level is the offered rate, not a number of clients
    by_rate = any(doc["unit"] == "requests/s" for doc, _ in res.capacity.values())
    header = [("", "offered req/s" if by_rate else "clients")] + [(s, w) for s in servers for w in what]
    rows = []
    for level in res.levels:
        row = [f"{level:,}"]
        for s in servers:
            m = agg[(agg.server == s) & (agg.level == level)]
            if m.empty or _isnan(m.iloc[0].ok):
                row += ["/"] * len(what)
                continue
            r = m.iloc[0]
            mark = "" if r.statuses == "ok" else " *"
            bound = res.client_bound(s, level) is not None
            row += [f"{r.ok:,.0f} / {r.failed:,.0f}{mark}"]
            if webbench:
                row += ["-" if _isnan(r.webbench_susceed) else f"{r.webbench_susceed:,.0f} / {r.webbench_failed:,.0f}"]
            rate = cell_estimate(res, s, level, rps).text()
            row += [f"≥ {rate}{CLIENT_BOUND_MARK}" if bound else rate]  # the client's limit: a lower bound
            if cores:
                row += [cell_estimate(res, s, level, per_core).text()]
            p99 = res.pooled_latency(s, level).percentile(99)
            row += [_ms(ms(p99))]
            if memory:
                row += [format_bytes(r.mem_peak_bytes) if not _isnan(r.mem_peak_bytes) else "-"]
        rows.append(row)
    return header, rows


PER_CORE_COLUMN = "req/s per core"


def long_form(header: list[tuple[str, str]], rows: list[list[str]], servers: list[str]
              ) -> tuple[list[str], list[list[str]]]:
    """Table 1 with one row per level and server, for more servers than a page is wide:
    columns clients, server, then each server's columns once."""
    per = (len(header) - 1) // max(1, len(servers))
    cols = [header[0][1], "server", *(w for _, w in header[1:1 + per])]
    out = [[row[0], server, *row[1 + i * per:1 + (i + 1) * per]] for row in rows for i, server in enumerate(servers)]
    return cols, out


def _ms(v: object) -> str:
    return "-" if _isnan(v) else f"{v:,.1f}"


def legend(header: list[tuple[str, str]], rows: list[list[str]], res: Results | None = None) -> str:
    """What Table 1's columns and marks mean, naming only those it holds."""
    cells = [c for r in rows for c in r[1:]]
    whats = {w for _, w in header}
    out = ["ok / failed: loadcmp's strict count of successful and failed requests"]
    if WEBBENCH_COLUMN in whats:
        out.append("webbench's count: what webbench would have printed for them (see the notes)")
    elif res is not None and any("webbench" in r for t in res.trials if (r := t.get("result"))):
        out.append("webbench would have printed the same counts (it differs only where error pages are answered)")
    spread = []
    if any(" ±" in c for c in cells):
        spread.append("± half the 95 % interval")
    if any(re.search(r"\(\S+–\S+\)", c) for c in cells):
        spread.append(f"(low–high) the range of 2 trials, as an interval needs {MIN_TRIALS} or more")
    out.append("req/s: the mean over the trials" + (", with " + " or ".join(spread) if spread else ""))
    if PER_CORE_COLUMN in whats:
        out.append("req/s per core: each trial's req/s divided by the server CPU it used (100 % = one core)")
    out.append("p99 pooled: the 99th percentile of every request of the level's trials together, as in the figures")
    if "mem peak" in whats:
        out.append("mem peak: the server's peak memory")
    if "/" in cells:
        out.append("'/' = the level could not run")
    if any(c.endswith(" *") for c in cells):
        out.append("'*' = a trial did not end normally (see the notes)")
    if any(CLIENT_BOUND_MARK.strip() in c for c in cells):
        out.append(f"≥ … {CLIENT_BOUND_MARK.strip()} = the client, not the server, limited the rate: the server served "
                   "at least this")
    return "; ".join(out) + "."


WEBBENCH_COLUMN = "webbench's count"
"""A Table 1 column, shown when webbench would have counted differently from loadcmp."""
WEBBENCH_NOTE = ("webbench's count: what webbench would have printed for the same requests (Speed ... susceed / "
                 "failed): any answer read to the end is a success, error pages (5xx) included; only a connection "
                 "refused, reset or timed out is a failure. ok / failed is loadcmp's strict count.")


def webbench_differs(agg: pd.DataFrame) -> bool:
    """Whether webbench would have told another story than the strict count for some cell."""
    if agg.empty or "webbench_susceed" not in agg:
        return False
    known = agg[agg.webbench_susceed.notna() & agg.ok.notna()]
    return bool(((known.webbench_susceed - known.ok).abs() > 0.5).any())


CLIENT_BOUND_MARK = " ‡"
"""Marks a Table 1 rate the client limited; `notes` says why."""


def notes(res: Results) -> list[str]:
    """Why a cell is '/', starred or marked client-bound: the trial reasons, once each."""
    out = [WEBBENCH_NOTE] if webbench_differs(aggregate(res)) else []
    bound = [(s, lv, b) for s in res.servers for lv in res.levels if (b := res.client_bound(s, lv))]
    for s, lv, b in bound:
        out.append(_joined(f"‡ {s} at {clients(res, s, lv)} was client-bound: {b.reason}.", bound_said(b)) or "")
    if bound:
        s, lv, b = bound[-1]
        out.append("‡ these rates are the client's limit, so each is a lower bound on what its server serves (at "
                   "least this): a comparison is drawn from one only where the bound decides it, never that it is "
                   "the smaller."
                   + (f" Advice ({s} at {clients(res, s, lv)}): {b.advice}" if b.advice else ""))
    for t in res.trials:
        if t["status"] != "ok" and t.get("reason"):
            out.append(f"{t['server']} at {t['level']} {unit_of(res, t['server'])} (trial {t['trial']}): {t['reason']}")
    # a cause seen in several trials of a cell is one note: the first trial's words and figures
    same: dict[tuple[str, int, str], list[tuple[int, str]]] = {}
    for t in res.trials:
        for c in causes_of(t):
            said = note(c, t["result"]["failures"], t["result"].get("slow_connects"))
            same.setdefault((t["server"], t["level"], c["cause"]), []).append((t["trial"], said))
    for (server, level, _), seen in same.items():
        trials = len(res.cell(server, level))
        where = (f" ({len(seen)} of {trials} trials; figures of trial {seen[0][0]})" if trials > 1 else "")
        out.append(f"{server} at {level} {unit_of(res, server)}{where}: {seen[0][1]}")
    return list(dict.fromkeys(out))
