"""A write-up's findings (`loadcmp.verdicts.findings`) judged on the measured results.

Verdicts. Every level (and, without a label, every server) is judged on its own, and the
claim must hold at each:

- supported: at every level the 95 % interval of the mean over trials (Student t), or of the
  ratio left/right (delta method on the log scale, `report.compare.ratio`) against the factor,
  lies entirely on the claimed side. A latency is skewed and never below zero: its mean is the
  geometric mean and its interval the t-interval of the logs taken back (`estimate`), so no
  bound of it is ever negative;
- not supported: at some level it lies entirely on the wrong side;
- inconclusive, with the reason: an interval straddles the threshold; a level has no data; a
  label is not in the results; a side was client-bound at that level and its bound decides
  nothing (below); or too few trials (below).

Client-bound sides. A side the client limited (`load.record.saturation`) measured the client's pace, not
the server's. For a throughput metric (`checks.THROUGHPUT`) that is still a lower bound: the server
serves at least what got through. So the level is judged as usual, and a verdict stands only where
the bound can give it: that the bound side is the larger (its interval, or the ratio's, lies above
the threshold on its own). A verdict that would need it to be the smaller — the claim that it serves
less, or that the other serves more — stays inconclusive, and so does every comparison with both
sides client-bound (two lower bounds order nothing). Latency, failures and the servers' figures get
no bound from a client-bound side: such a level stays inconclusive. What an event's requests counted
(`eventmetrics.EXACT`: its failures) is judged as measured: a request the server failed is its failure whatever
the client's pace.

Few trials. With fewer than 3 trials on a side an interval says little (two trials give
t = 12.7, one gives none), so such a level is decided only by a large margin: the mean (or the
ratio) must be past the threshold by a factor of 2 — at least twice it for `>`, at most half
for `<` — and, with 2 trials, the interval must agree. The factor of 2 is beyond the spread
seen between two trials of one cell on these machines (1.6x in tests/fixtures/run-2x3x2).
Otherwise the level is inconclusive and the reason asks for 3 trials or more; so is a
threshold of 0, which leaves no margin to measure. A trial without
a successful request has no latency and counts as no trial for latency metrics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from . import busymetrics
from .checks import OPS, THROUGHPUT, kind_of, show
from .eventmetrics import counted, exact, is_event, per_trial
from .findings import Finding, FindingCheck, Side, labels
from .retry import Bound, rests_on
from ..records import FindingDoc, FindingVerdict

if TYPE_CHECKING:  # pandas: only when results are judged
    from ..report.tables import Estimate
    from ..store.reader import Results

MIN_TRIALS = 3
"""Trials per side below which only a large margin decides."""
MARGIN = 2.0
"""How far past the threshold (a factor) a value from fewer than MIN_TRIALS trials must be."""
UNDECIDED = "a client-bound side's lower bound cannot decide it"
"""`decide`'s reason when the verdict would need the end of the interval that a bound leaves open."""
Open = Literal["above", "below"]
"""Where the true value may lie beyond a measurement: above a lower bound, below an upper one."""
_SCALE = {"ratio": "ratio", "time": "ms", "bytes": "bytes", "": "", "level": "level", "seconds": "s"}


def decide(value: float, low: float | None, high: float | None, n: int, op: str, target: float,
           open_: Open | None = None) -> tuple[FindingVerdict, str | None]:
    """One level: where the interval [low, high] of `value` (n trials on its smaller side)
    lies against `target` for the claim `value op target` (see the module docstring).

    `open_` says the true value may lie beyond the measurement that way ("above": the value is a
    lower bound, "below": an upper one, from a client-bound side): a verdict that needs the
    other end is inconclusive."""
    verdict, reason = _decide(value, low, high, n, op, target)
    if open_ is None or verdict == "inconclusive":
        return verdict, reason
    says_large = (verdict == "supported") == (op in (">", ">="))
    if says_large == (open_ == "above"):
        return verdict, reason
    return "inconclusive", UNDECIDED


def _decide(value: float, low: float | None, high: float | None, n: int, op: str,
            target: float) -> tuple[FindingVerdict, str | None]:
    claimed = OPS[op]
    side: FindingVerdict | None = None
    if low is not None and high is not None:
        if claimed(low, target) and claimed(high, target):
            side = "supported"
        elif not claimed(low, target) and not claimed(high, target):
            side = "not supported"
        if n >= MIN_TRIALS:
            if side is not None:
                return side, None
            return "inconclusive", "the 95 % interval straddles the threshold"
    toward, away = (MARGIN, 1 / MARGIN) if op in (">", ">=") else (1 / MARGIN, MARGIN)
    margin: FindingVerdict | None = None
    if target > 0:  # a threshold of 0 leaves no margin to measure
        margin = ("supported" if claimed(value, target * toward)
                  else "not supported" if not claimed(value, target * away) else None)
    if margin is not None and (low is None or side == margin):
        return margin, None
    if n >= MIN_TRIALS:
        return "inconclusive", f"no interval, and the value is within a factor of {MARGIN:g} of the threshold"
    clear = " and its interval clear of it" if n == 2 else ""
    return "inconclusive", (f"only {n} trial{'s' if n != 1 else ''}: with fewer than {MIN_TRIALS}, the value must be "
                            f"past the threshold by a factor of {MARGIN:g}{clear}; run --trials {MIN_TRIALS} or more")


class SideDoc(TypedDict):
    """One side of a check at one level, as a finding's `values` keeps it."""

    server: str
    level: int
    mean: float | None
    low: float | None
    high: float | None
    n: int  #: trials
    client_bound: NotRequired[bool]  #: present (true) where the client, not the server, set the pace


class RatioDoc(TypedDict):
    """left/right at one level: the ratio of the means and its 95 % interval (None: too few trials)."""

    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class _Level:
    """One server at one level, judged."""

    level: int
    verdict: FindingVerdict
    reason: str | None
    left: SideDoc
    right: SideDoc | None = None
    ratio: RatioDoc | None = None

    def doc(self) -> dict[str, object]:
        d: dict[str, object] = {"level": self.level, "verdict": self.verdict, "reason": self.reason,
                                "left": self.left}
        return d if self.right is None else {**d, "right": self.right, "ratio": self.ratio}


@dataclass(frozen=True)
class FindingResult:
    """A finding's verdict, the values that decided it, and a sentence saying so.

    `values` is plain JSON: `metric`, `scale` (ratio 0..1, ms, bytes, or "" for a plain number),
    `op`, `threshold` (in that scale) or `factor`, and `levels`, one entry per server and level:
    `level`, `verdict`, `reason`, `left` ({server, level, mean, low, high, n}) and, for a
    comparison, `right` (the same) and `ratio` ({value, low, high}, left/right)."""

    finding: Finding
    verdict: FindingVerdict
    values: dict[str, Any]
    reason: str | None
    text: str

    def to_doc(self) -> FindingDoc:
        return {"claim": self.finding.claim, "check": self.finding.check.text, "verdict": self.verdict,
                "values": self.values, "reason": self.reason, "text": self.text}


def evaluate(results: Results, findings: list[Finding]) -> list[FindingResult]:
    """Every finding judged on stored results, in the order given."""
    return [_judge(results, f) for f in findings]


def _judge(res: Results, f: Finding) -> FindingResult:
    c = f.check
    values: dict[str, Any] = {"metric": c.left.figure, "scale": _SCALE[kind_of(c.left.metric)], "op": c.op,
                              "factor" if c.right else "threshold": c.value}
    if c.left.metric == "capacity":
        return _judge_capacity(res, f, values)
    missing = [lb for lb in labels(c) if not res.has(lb)]
    if missing:
        reason = f"{', '.join(missing)} not run (this run has {', '.join(res.servers) or 'nothing'})"
        return FindingResult(f, "inconclusive", {**values, "levels": []}, reason, f"inconclusive: {reason}")
    levels = c.left.levels.pick(res.levels) if c.left.levels else res.levels
    rows = [(s, _level(res, c, s, lv)) for s in ([c.left.label] if c.left.label else res.servers) for lv in levels]
    values["levels"] = [r.doc() for _, r in rows]
    if not rows:
        reason = (f"no level of the run is in {c.left.levels} (it ran {', '.join(map(str, res.levels))})"
                  if res.levels else "nothing was measured")
        return FindingResult(f, "inconclusive", values, reason, f"inconclusive: {reason}")
    verdicts = {r.verdict for _, r in rows}
    verdict: FindingVerdict = ("not supported" if "not supported" in verdicts
                               else "supported" if verdicts == {"supported"} else "inconclusive")
    grouped: dict[str, list[str]] = {}
    for s, r in rows:
        if r.verdict == verdict and r.reason:
            grouped.setdefault(r.reason, []).append(f"{r.level}" if c.left.label else f"{s} at {r.level}")
    at = "at " if c.left.label else ""
    why = "; ".join(f"{at}{', '.join(where)}: {w}" for w, where in grouped.items())
    return FindingResult(f, verdict, values, why or None, _sentence(c, verdict, rows, why or None))


def _capacity_of(res: Results, label: str) -> tuple[float, float, float, int] | str:
    """A label's capacity as (value, low, high, confirmation trials): the edge the search bracketed,
    open-ended where it is a bound (client-bound, never missed); or why there is none."""
    from ..report.capacity import interval

    if label not in res.capacity:
        return f"no capacity search of {label} in these results (run `loadcmp capacity`)"
    search, doc = res.capacity[label]
    iv = interval(doc)
    if iv is None:
        return f"{label}'s capacity search ended {doc['kind']}"
    value = float(doc["level"]) if doc["level"] is not None and doc["kind"] != "below_start" else iv[1]
    return value, iv[0], iv[1], search["confirm"]


def _judge_capacity(res: Results, f: Finding, values: dict[str, Any]) -> FindingResult:
    """`capacity` findings: one figure per server, judged on the bracketed edge (both sides' bounds for a ratio)."""
    c = f.check
    rows: list[dict[str, Any]] = []
    for s in [c.left.label] if c.left.label else list(res.capacity) or res.servers:
        left = _capacity_of(res, s)
        right = _capacity_of(res, c.right.label or s) if c.right is not None else None
        why = next((x for x in (left, right) if isinstance(x, str)), None)
        row: dict[str, Any] = {"server": s, "verdict": "inconclusive", "reason": why}
        if why is None:
            assert isinstance(left, tuple)
            value, low, high, n = left
            if isinstance(right, tuple):
                row["right"] = {"server": c.right.label if c.right else s, "value": right[0], "low": right[1],
                                "high": right[2]}
                value, low, high = (value / right[0] if right[0] else math.inf, low / right[2] if right[2] else 0.0,
                                    high / right[1] if right[1] else math.inf)
                n = min(n, right[3])
            row.update(value=value, low=low, high=high, n=n)
            row["verdict"], row["reason"] = decide(value, low, high, n, c.op, c.value)
            row["reason"] = row["reason"] or _wrong(row["verdict"], low)
        rows.append(row)
    values["levels"], values["servers"] = [], rows
    verdicts = {r["verdict"] for r in rows}
    verdict: FindingVerdict = ("not supported" if "not supported" in verdicts
                               else "supported" if verdicts == {"supported"} and rows else "inconclusive")
    reason = "; ".join(dict.fromkeys(r["reason"] for r in rows if r["reason"] and r["verdict"] == verdict)) or None
    if not rows:
        reason = "nothing was measured"

    def shown(r: dict[str, Any]) -> str:
        if "value" not in r:
            return f"{r['server']} n/a"
        hi = "∞" if not math.isfinite(r["high"]) else f"{r['high']:,.2f}" if "right" in r else f"{r['high']:,.0f}"
        if "right" in r:
            return f"{r['server']}/{r['right']['server']} capacity ratio {r['value']:.2f}× ({r['low']:.2f}–{hi})"
        return f"{r['server']} capacity {r['value']:,.0f} ({r['low']:,.0f}–{hi})"

    target = f"{c.value:g}" if c.right else f"{c.value:,.0f}"
    text = f"{verdict}: {'; '.join(shown(r) for r in rows)} {c.op} {target}" + (f" ({reason})" if reason else "")
    return FindingResult(f, verdict, values, reason, text)


def _level(res: Results, c: FindingCheck, server: str, level: int) -> _Level:
    from ..report.compare import ratio

    sides = [(server, level, _estimate(res, c.left, server, level))]
    if c.right is not None:
        rlevel = c.right.levels.low if c.right.levels and c.right.levels.low else level
        sides.append((c.right.label or server, rlevel, _estimate(res, c.right, c.right.label or server, rlevel)))
    bound = [res.client_bound(s, lv) is not None for s, lv, _ in sides]
    docs = [_side_doc(s, lv, e, b) for (s, lv, e), b in zip(sides, bound, strict=True)]
    metrics = [c.left.metric] + ([c.right.metric] if c.right else [])
    if all(map(counted, metrics)):  # the requests an event failed are counted whatever the client's pace
        bound = [False] * len(sides)
    r = ratio(sides[0][2], sides[1][2]) if len(sides) == 2 else None  # compare.ratio(b, a) is b/a
    value, low, high = (r.value, r.low, r.high) if r else (sides[0][2].mean, sides[0][2].low, sides[0][2].high)
    verdict: FindingVerdict = "inconclusive"
    if (reason := _unready(res, sides, c.left.metric, bound, metrics)) is None and c.op == "==":  # an event's count
        verdict, reason = exact(per_trial(res, c.left.metric, server, level)[0], c.value, MIN_TRIALS)
    elif reason is None:
        if value is None:
            reason = f"{sides[1][0]} {c.right.figure if c.right else ''} is 0: no ratio (write a threshold instead)"
        else:
            open_: Open | None = "above" if bound[0] else "below" if any(bound) else None
            verdict, reason = decide(value, low, high, min(e.n for _, _, e in sides), c.op, c.value, open_)
            reason = _undecided(sides, bound, c.right is not None) if reason == UNDECIDED else reason
            reason = reason or _wrong(verdict, low)
    threshold = Bound(c.left.metric, c.left.q, c.op, c.value) if r is None and c.right is None else None
    if threshold and verdict != "supported" and (why := rests_on(threshold, res.cell(server, level))):
        reason = f"{reason}; {why}" if reason else why  # a latency over its threshold for TCP's SYN retry
    if r is None:
        return _Level(level, verdict, reason, docs[0])
    return _Level(level, verdict, reason, docs[0], docs[1], RatioDoc(value=r.value, low=r.low, high=r.high))


def _side_doc(server: str, level: int, e: Estimate, client_bound: bool) -> SideDoc:
    """One side's figures; `client_bound` only where it is true, so a plain side's record stays as short."""
    d = SideDoc(server=server, level=level, mean=e.mean, low=e.low, high=e.high, n=e.n)
    if client_bound:
        d["client_bound"] = True
    return d


def _unready(res: Results, sides: list[tuple[str, int, Estimate]], metric: str, bound: list[bool],
             metrics: list[str]) -> str | None:
    """Why a level is inconclusive before any interval is looked at: no data, the ramp fell short, or
    a client-bound side that bounds nothing (not a throughput metric, or both sides bound)."""
    for (s, lv, e), m in zip(sides, metrics, strict=True):
        if e.n == 0:
            if is_event(m) and (why := per_trial(res, m, s, lv)[1]):
                return why  # no event of that action, or one that failed
            if busymetrics.is_busy(m) and (why := busymetrics.per_trial(res, m, s, lv)[1]):
                return why  # no busy workers counted, or no limit to scale them by
            return f"no data for {s}" + (f" at {lv}" if lv != sides[0][1] else "")
    short = [f"{s} {min(got):,}" for s, lv, _ in sides
             if (got := [r["users_reached"] for t in res.cell(s, lv)
                         if (r := t.get("result")) and "users_reached" in r])]
    if short:
        return (f"the ramp never reached {sides[0][1]:,} users in the window ({', '.join(short)}): "
                "-t is shorter than its ramp-up")
    limited = list(dict.fromkeys(s for (s, _, _), b in zip(sides, bound, strict=True) if b))
    if not limited:
        return None
    # the reason and advice per trial are in Table 1's notes; here, only whose
    if metric not in THROUGHPUT:
        return f"client-bound ({', '.join(limited)}: the client set the pace)"
    if all(bound) and len(sides) == 2:
        return (f"client-bound ({', '.join(limited)}): both rates are only lower bounds on what "
                "the servers serve, and two lower bounds order nothing")
    return None


def _undecided(sides: list[tuple[str, int, Estimate]], bound: list[bool], compared: bool) -> str:
    """Why a client-bound side's lower bound cannot give the verdict the interval points to."""
    who = next(s for (s, _, _), b in zip(sides, bound, strict=True) if b)
    what = "the smaller" if compared else "below the threshold"
    return f"client-bound ({who}: its rate is only a lower bound on what it serves, so it cannot be shown {what})"


def _wrong(verdict: FindingVerdict, low: float | None) -> str | None:
    if verdict != "not supported":
        return None
    if low is None:
        return f"the value is past the threshold the wrong way by more than a factor of {MARGIN:g}"
    return "the 95 % interval lies entirely on the wrong side"


def _estimate(res: Results, side: Side, server: str, level: int) -> Estimate:
    """The mean of a metric over the cell's trials, each trial measured on its own."""
    from .checks import measure

    if is_event(side.metric):  # from the trials' stored seconds; a recovery never back is no interval's value
        return estimate(side.metric, [v for v in per_trial(res, side.metric, server, level)[0] if math.isfinite(v)])
    if busymetrics.is_busy(side.metric):  # each trial's peak from its stored seconds
        return estimate(side.metric, busymetrics.per_trial(res, side.metric, server, level)[0])
    vals = [measure(side.metric, side.q, [t]) for t in res.cell(server, level)]
    return estimate(side.metric, [v for v in vals if v is not None and math.isfinite(v)])


def estimate(metric: str, values: list[float]) -> Estimate:
    """A check's metric over trials, by the one interval rule (`report.tables.Estimate.of`): a latency is
    skewed and never below zero, so its mean and interval are taken on the log scale."""
    from ..report.tables import Estimate

    return Estimate.of(values, skewed=kind_of(metric) == "time")


def _sentence(c: FindingCheck, verdict: FindingVerdict, rows: list[tuple[str, _Level]], reason: str | None) -> str:
    """E.g. "supported: nginx/apache-prefork rps ratio 1.80× (1.60–2.00) at 1000 > 1.5"; where a side
    was client-bound, its rate first as the bound it is: "nginx ≥ 17,000 req/s (16,800–17,200,
    client-bound) against apache-event's 8,020–8,902", and the ratio "≥" (or "≤")."""
    parts: dict[str, list[str]] = {}
    bounds: dict[str, list[str]] = {}  # a bound's text -> the levels it holds at
    lower = c.left.metric in THROUGHPUT
    for s, r in rows:
        sides = [r.left] + ([r.right] if r.right is not None else [])
        held = [bool(d.get("client_bound")) for d in sides]
        mark = ("≥ " if held[0] else "≤ ") if lower and held.count(True) == 1 else ""  # two bounds: no bound
        if mark and len(sides) == 2:
            bounds.setdefault(_bound_text(c.left.metric, sides), []).append(f"{r.level}")
        if c.right is None:
            subject = f"{s} {c.left.figure}"
            got = _shown(c.left.metric, r.left["mean"], r.left["low"], r.left["high"], r.left["n"])
        else:
            assert r.right is not None and r.ratio is not None
            rs, rf = r.right["server"], c.right.figure + (str(c.right.levels) if c.right.levels else "")
            subject = (f"{s}/{rs} {rf} ratio" if rf == c.left.figure else f"{s} {c.left.figure}/{rs} {rf} ratio")
            got = _shown(None, r.ratio["value"], r.ratio["low"], r.ratio["high"], min(r.left["n"], r.right["n"]))
        parts.setdefault(subject, []).append(f"{mark}{got} at {r.level}")
    target = f"{c.value:g}" if c.right else show(c.left.metric, c.value)
    body = "; ".join(f"{subject} {', '.join(got)}" for subject, got in parts.items())
    lead = "; ".join(f"{b} at {', '.join(lv)}" if len(rows) > 1 else b for b, lv in bounds.items())
    lead += ": " if lead else ""
    return f"{verdict}: {lead}{body} {c.op} {target}" + (f" ({reason})" if reason else "")


def _bound_text(metric: str, sides: list[SideDoc]) -> str:
    """A client-bound side as the lower bound it is, against the other side's interval."""
    from ..report.compare import bound_text
    from ..report.tables import Estimate

    est = [(d["server"], Estimate(d["mean"], d["low"], d["high"], d["n"])) for d in sides]
    first = next(i for i, d in enumerate(sides) if d.get("client_bound"))
    other = [e for i, e in enumerate(est) if i != first]
    return bound_text(est[first], other[0] if other else None, " req/s" if metric == "rps" else "")


def _shown(metric: str | None, v: float | None, low: float | None, high: float | None, n: int) -> str:
    def fmt(x: float) -> str:
        return f"{x:.2f}×" if metric is None else show(metric, x)

    if v is None:
        return "n/a"
    if low is None or high is None:
        return f"{fmt(v)} (n={n})"
    return f"{fmt(v)} ({fmt(low).rstrip('×')}–{fmt(high).rstrip('×')})"
