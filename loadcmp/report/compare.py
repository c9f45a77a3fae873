"""Ratios between servers per level, and comparison lines that say only what the data supports.

A level where a side was client-bound (`load.record.saturation`) measured the client's pace
there; its rate is still a lower bound on what that server serves. So the bound side
is named the larger when the ratio's interval says so ("served at least 1.89× the
requests of ..."); any other such level is inconclusive, with the reason and the
advice: a bound smaller side, both sides bound, or too few trials.

A ratio B/A of means gets a 95 % interval from the trials' standard errors
(delta method on the log scale) when each side has 3 trials or more. A verdict
names a difference only when that interval excludes 1; with fewer trials it
gives the ratio and says that it is no finding.

Which labels are compared (`pairs`): those on the same page with the same keep-alive, each against the
first of its group. A run of several protocols (labels like `nginx[h2]`) answers two questions instead of
comparing everything with its first label: the stacks within each protocol (caddy[h2] against nginx[h2]),
and each stack against itself on its first protocol (nginx[h2] against nginx[h1]).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..store.reader import Results, metrics_of
from ..records import LoadSummary, TrialRecord
from ..protocols import DEFAULT as DEFAULT_PROTO
from .streams import streams_of
from .tables import MIN_TRIALS, Estimate, t95

Getter = Callable[[TrialRecord], float | int | None]
"""One number of a measured trial (None: not known)."""


@dataclass(frozen=True)
class Ratio:
    """B/A with its 95 % interval (None: not computable, or fewer than 3 trials a side)."""

    value: float | None
    low: float | None
    high: float | None

    def text(self) -> str:
        if self.value is None:
            return "-"
        s = f"{self.value:.2f}×"
        if self.low is not None and self.high is not None:
            s += f" ({self.low:.2f}–{self.high:.2f})"
        return s

    @property
    def significant(self) -> bool | None:
        if self.low is None or self.high is None:
            return None
        return self.low > 1 or self.high < 1


def _est(data: Results, server: str, level: int, get: Getter) -> Estimate:
    vals = [get(t) for t in data.cell(server, level)]
    return Estimate.of([v for v in vals if v is not None])


def ratio(b: Estimate, a: Estimate) -> Ratio:
    if a.mean is None or b.mean is None or a.mean == 0:
        return Ratio(None, None, None)
    r = b.mean / a.mean
    if a.interval is None or b.interval is None or b.mean <= 0:
        return Ratio(r, None, None)  # an interval from fewer than MIN_TRIALS trials says nothing
    se_a, se_b = a.log_se, b.log_se  # each side's on the log scale (`Estimate.log_se`)
    if se_a is None or se_b is None:
        return Ratio(r, None, None)
    rel = math.sqrt(se_a ** 2 + se_b ** 2)
    t = t95(max(1, min(a.n, b.n) - 1))
    return Ratio(r, r * math.exp(-t * rel), r * math.exp(t * rel))


def _result(t: TrialRecord) -> LoadSummary:
    """The measurement of a trial from `Results.cell` (which holds only measured ones)."""
    return t["result"]


METRICS: dict[str, tuple[str, Getter]] = {
    "rps": ("requests/s", lambda t: _result(t)["rps"]),
    "p99": ("p99 latency, pooled", lambda t: _result(t)["latency_ms"]["p99"]),  # ratio_table: `_pooled_p99`
    "failed": ("failures", lambda t: _result(t)["failed"]),
    "mem": ("peak memory", lambda t: metrics_of(t).get("mem_peak_bytes")),
}


@dataclass(frozen=True)
class RatioRow:
    """One server B against the baseline A at one level: B/A for each of `METRICS`."""

    level: int
    server: str
    baseline: str
    ratios: dict[str, Ratio]  #: METRICS key -> ratio


def ratio_table(data: Results) -> tuple[str, list[RatioRow]]:
    """B/A per level for every server B against the first server A; with several protocols, for every
    compared pair (`pairs`), and no one baseline ('')."""
    servers = data.servers
    if len(servers) < 2:
        return (servers[0] if servers else ""), []
    several = protocols_in(data) is not None
    compared = pairs(data) if several else [(servers[0], other) for other in servers[1:]]
    rows = []
    for level in data.levels:
        for base, other in compared:
            ratios = {key: ratio(_est(data, other, level, get), _est(data, base, level, get))
                      for key, (_, get) in METRICS.items() if key != "p99"}
            rows.append(RatioRow(level, other, base, {**ratios, "p99": _pooled_p99(data, other, base, level)}))
    return ("" if several else servers[0]), rows


def _pooled_p99(data: Results, b: str, a: str, level: int) -> Ratio:
    """B/A of the pooled p99s (the one percentile of the report): a ratio without an interval."""
    pb, pa = (data.pooled_latency(s, level).percentile(99) for s in (b, a))
    return Ratio(pb / pa if pb is not None and pa else None, None, None)


def comparison_lines(data: Results) -> list[str]:
    """One plain sentence per level and pair, about requests served."""
    servers = data.servers
    if len(servers) < 2:
        return []
    out = []
    get = METRICS["rps"][1]
    advised = False
    for level in data.levels:
        for base, other in pairs(data):
            unit = pair_unit(data, base, other)
            ea, eb = _est(data, base, level, get), _est(data, other, level, get)
            if ea.mean is None or eb.mean is None:
                missing = base if ea.mean is None else other
                out.append(f"At {level:,} {unit} {missing} has no measurement, so there is nothing to compare.")
                continue
            r = ratio(eb, ea)
            bound = [(name, b) for name in (base, other) if (b := data.client_bound(name, level))]
            if (least := at_least(data, base, other, level)) is not None:
                hi, lo_name, rr = least
                ests = {base: ea, other: eb}
                out.append(f"{hi} served at least {rr.low:.2f}× the requests of {lo_name} at {level:,} {unit}: "
                           f"{bound_text((hi, ests[hi]), (lo_name, ests[lo_name]))}.")
                continue
            if bound:
                who = " and ".join(name for name, _ in bound)
                out.append(f"Inconclusive at {level:,} {unit}: the client, not the server, was the bottleneck "
                           f"for {who}: {bound[0][1].reason}."
                           + (f" The ratio {r.text()} measures the client." if r.value is not None else "")
                           + (f" {_sentence(bound[0][1].advice)}" if bound[0][1].advice and not advised else ""))
                advised = advised or bool(bound[0][1].advice)
                continue
            if not r.value:
                zero = base if r.value is None else other
                out.append(f"At {level:,} {unit} {zero} served no successful request, so no ratio can be given.")
                continue
            hi, lo_name, rr = (other, base, r) if r.value >= 1 else (base, other, inverse(r))
            if r.significant is None:
                n = min(ea.n, eb.n)
                out.append(f"{hi} served {rr.value:.2f}× the requests of {lo_name} at {level:,} {unit} "
                           f"({'one trial' if n == 1 else f'{n} trials'} each: an interval needs {MIN_TRIALS} or "
                           f"more, so this is no finding; use --trials {MIN_TRIALS}).")
            elif r.significant:
                out.append(f"{hi} served {rr.value:.2f}× ({rr.low:.2f}–{rr.high:.2f}) the requests of {lo_name} "
                           f"at {level:,} {unit}.")
            else:
                out.append(f"No significant difference in requests served between {base} and {other} at "
                           f"{level:,} {unit} (ratio {r.text()}).")
    return out


def pair_unit(data: Results, a: str, b: str) -> str:
    """What two compared labels' level counts: 'clients', or 'connections × 4 streams' where both carry -m; where
    only one does (a stack against itself over h1), 'clients (nginx[h2]'s: connections × 4 streams)'."""
    ms = {s: streams_of(data, s) for s in (a, b)}
    if len(set(ms.values())) == 1:
        return "clients" if ms[a] == 1 else f"connections × {ms[a]} streams"
    return "clients (" + "; ".join(f"{s}'s: connections × {m} streams" for s, m in ms.items() if m > 1) + ")"


def at_least(data: Results, base: str, other: str, level: int) -> tuple[str, str, Ratio] | None:
    """(the larger, the smaller, larger/smaller) where exactly one side was client-bound and the
    ratio's 95 % interval puts it above the other: its rate is a lower bound on what it serves, so
    being the larger is all that can be shown of it (never that it is the smaller)."""
    bound = [s for s in (base, other) if data.client_bound(s, level)]
    if len(bound) != 1:
        return None
    get = METRICS["rps"][1]
    r = ratio(_est(data, other, level, get), _est(data, base, level, get))
    hi, lo, rr = (other, base, r) if bound[0] == other else (base, other, inverse(r))
    return (hi, lo, rr) if rr.low is not None and rr.low > 1 else None


def bound_text(bound: tuple[str, Estimate], other: tuple[str, Estimate] | None = None, unit: str = " req/s") -> str:
    """A client-bound rate as the lower bound it is, against the other side's: "nginx ≥ 17,000
    req/s (16,800–17,200, client-bound) against apache-event's 8,020–8,902"."""
    def span(e: Estimate) -> str:
        return f"{e.interval[0]:,.0f}–{e.interval[1]:,.0f}" if e.interval else f"{e.mean or 0:,.0f} (n={e.n})"

    name, e = bound
    text = f"{name} ≥ {e.mean or 0:,.0f}{unit} ({span(e) + ', ' if e.interval else ''}client-bound)"
    return text + (f" against {other[0]}'s {span(other[1])}" if other else "")


def pairs(data: Results) -> list[tuple[str, str]]:
    """Which servers are compared: those on the same page and keep-alive ("nginx /a" with
    "apache /a", not with "nginx /b"), each against the first of its group. With several protocols: the
    stacks within each protocol, then each stack against itself on its first protocol."""
    protos = protocols_in(data)
    groups: dict[str, list[str]] = {}
    if protos is None:
        for s in data.servers:
            groups.setdefault(_group(s), []).append(s)
        return [(g[0], other) for g in groups.values() for other in g[1:]]
    selves: dict[str, list[str]] = {}
    for s in data.servers:
        bare = _bare(s, protos[s])
        groups.setdefault(f"{protos[s]}\0{_group(bare)}", []).append(s)
        selves.setdefault(bare, []).append(s)
    return [(g[0], other) for g in [*groups.values(), *selves.values()] for other in g[1:]]


def protocols_in(data: Results) -> dict[str, str] | None:
    """Each label's protocol when the labels carry theirs (`nginx[h2]`: a run of several protocols; an h1
    label of such a run may be stored without one: h1), else None."""
    protos = {}
    for s in data.servers:
        found = data.info(s)
        protos[s] = str(found[1].get("proto") or DEFAULT_PROTO) if found else DEFAULT_PROTO
    return protos if any(f"[{p}]" in s for s, p in protos.items()) else None


def _bare(label: str, proto: str) -> str:
    """A label without its protocol: `nginx[h2] /a` -> `nginx /a`."""
    return label.replace(f"[{proto}]", "", 1)


def comparable(data: Results, a: str, b: str) -> bool:
    """Whether two labels may be compared: the same page and keep-alive, and with several protocols the
    same protocol or the same stack."""
    protos = protocols_in(data)
    if protos is None:
        return same_group(a, b)
    bare_a, bare_b = _bare(a, protos[a]), _bare(b, protos[b])
    return bare_a == bare_b or (protos[a] == protos[b] and same_group(bare_a, bare_b))


def _group(label: str) -> str:
    """What a label says beyond its server: ' /index.html', ' /mem.php keep-alive', or ''."""
    return re.sub(r"^[^/ ]+", "", label)


def same_group(a: str, b: str) -> bool:
    """Whether two labels load the same page with the same keep-alive (so may be compared)."""
    return _group(a) == _group(b)


def inverse(r: Ratio) -> Ratio:
    """A/B from B/A (no ratio when B/A is 0 or unknown)."""
    if not r.value:
        return Ratio(None, None, None)
    return Ratio(1 / r.value, None if r.high is None else 1 / r.high, None if r.low is None else 1 / r.low)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
