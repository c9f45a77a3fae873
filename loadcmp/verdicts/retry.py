"""A latency check against TCP's SYN retry: when the requests whose connect waited for it are what puts a
percentile over its target, the verdict says so, and a level whose trials split on it is judged on their share.

A full listen queue drops SYNs; each such client sends its SYN again after 1 s (then 2 s more), so its request
takes a second more. A check `p99<X` with X of 1 s or less allows 1 % of the requests over X: a trial where 1 % or
more waited for the retry misses it, one where fewer did may meet it, and little lies between. Such trials are
two modes, and a t interval over their percentiles straddles the target however many there are.

`rests_on`: the check is missed over these trials pooled, more of their requests waited for the retry than the
percentile allows, and without those requests it would be met. `split`: a level's trials fall in both modes
(some missed and resting on the retry, the others met with a share under the allowance); the level is judged on
the share of its requests that waited, pooled over its trials, the one figure the level's pooled percentile
rests on. Its 95 % interval takes the trial as the unit: whether a trial's clients wait for the retry is
decided a trial at a time (the queue is full for a while, or not), so its requests are no independent sample
and an interval over them (Wilson's) would be far too narrow. The pooled share's variance across the trials
(the ratio estimator's) with t's k-1 degrees of freedom decides met or missed; a verdict against the majority
of the trials is never given. The share is continuous where the trials' percentiles jump by a second, so it
decides in a few trials where an interval over the percentiles straddles the target however many there are.
Where it still contains the allowance after `SETTLE` trials, the level is at the edge and stays unsure with
that said.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Protocol

from ..facts import SlowConnects
from ..records import TrialRecord
from ..report.connects import pct, pooled
from ..units import ms
from .checks import OPS, measure


class Check(Protocol):
    """What this module reads of a check (`smoke.Check`, which imports this module)."""

    @property
    def metric(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def value(self) -> float: ...
    @property
    def q(self) -> float | None: ...

    def passes(self, measured: float) -> bool: ...

@dataclass(frozen=True)
class Bound:
    """A finding's `p(99) < 1s` on one label as such a check (`judge`: a finding has no `passes`)."""

    metric: str
    q: float | None
    op: str
    value: float

    def passes(self, measured: float) -> bool:
        return OPS[self.op](measured, self.value)


RETRIES = ((1000.0, 1), (3000.0, 3))
"""(a target in ms up to which the retry puts a request over it, the retry's delay in s): a connect that waited
1 s for the retry, and the request after it, take more than 1 s."""
SETTLE = 5
"""Trials after which a split level whose share's interval still contains the allowance stays unsure."""


@dataclass(frozen=True)
class Tail:
    """A latency percentile's check, and the slow connects of some trials pooled against what it allows."""

    name: str  #: the percentile as people write it: p99
    delay: int  #: the retry that puts a request over the target: 1 (s) or 3
    allowed: float  #: the share of requests the percentile allows over its target
    slow: int  #: requests whose connect waited for that retry
    requests: int
    each: tuple[tuple[int, int], ...] = ()  #: (slow, requests) of each trial: the interval's sample

    @property
    def share(self) -> float:
        return self.slow / self.requests if self.requests else 0.0

    def interval(self) -> tuple[float, float]:
        """The share's 95 % interval with the trial as the unit (whether a trial's clients wait for the retry is
        decided a trial at a time, not a request at a time): the pooled share's variance across the trials (the
        ratio estimator's, k/(k-1) sum((slow_i - share n_i)^2) / (sum n)^2), with t's k-1 degrees of freedom.
        Fewer than 2 trials: nothing is known (0 to 1)."""
        from scipy import stats  # loaded where a level is judged

        k, n, p = len(self.each), self.requests, self.share
        if k < 2 or not n:
            return 0.0, 1.0
        var = k / (k - 1) * sum((slow - p * m) ** 2 for slow, m in self.each) / n ** 2
        half = float(stats.t.ppf(0.975, k - 1)) * math.sqrt(var)
        return max(0.0, p - half), min(1.0, p + half)


def tail(check: Check, trials: list[TrialRecord]) -> Tail | None:
    """The check's tail against the retry over these trials; None for a check it cannot move (not an upper
    bound on a percentile, a target over 3 s) or trials that stored no slow connects."""
    if check.metric != "p" or check.q is None or check.op not in ("<", "<="):
        return None
    delay = next((d for upto, d in RETRIES if check.value <= upto), None)
    s = pooled(trials)
    if delay is None or s is None or not s["requests"]:
        return None
    def slow(d: SlowConnects) -> int:
        return d["over_1s"] if delay == 1 else d["over_3s"]

    each = tuple((slow(d), d["requests"]) for t in trials if (r := t.get("result")) and (d := r.get("slow_connects")))
    return Tail(f"p{check.q:g}", delay, (100 - check.q) / 100, slow(s), s["requests"], each)


def said(t: Tail, share: str | None = None, how: str = "rests on") -> str:
    """`p99 rests on TCP's 1 s SYN retry: 1.2 % of requests took ≥ 1 s to connect`."""
    return (f"{t.name} {how} TCP's {t.delay} s SYN retry: {share or pct(t.share)} of requests took ≥ {t.delay} s "
            "to connect")


def pct_range(low: float, high: float) -> str:
    """An interval of shares: `0.8–1.4 %`."""
    digits = 1 if high >= 0.001 else 2
    return f"{low * 100:.{digits}f}–{high * 100:.{digits}f} %"


def rests_on(check: Check, trials: list[TrialRecord]) -> str | None:
    """Why the check is missed over these trials pooled, when the retry is why: more requests waited for it than
    the percentile allows, and without them the percentile would meet the target. None otherwise."""
    from ..store.reader import pooled_latency  # numpy: only when results are judged

    t = tail(check, trials)
    if t is None or t.share < t.allowed:
        return None
    h = pooled_latency([x for x in trials if x.get("result")])
    now, without = ms(h.percentile(check.q or 100)), ms(h.percentile(check.q or 100, without_top=t.slow))
    if now is None or without is None or check.passes(now) or not check.passes(without):
        return None
    return said(t) + f" ({t.name} allows {pct(t.allowed)}; without them {t.name} would be {without:,.1f}ms)"


Verdict = Literal["met", "missed", "unsure"]


@dataclass(frozen=True)
class Split:
    """A level whose trials split into two modes on the retry, judged on their pooled share."""

    verdict: Verdict
    shown: str
    settled: str | None
    """Unsure after SETTLE trials: why more would not decide it; else None."""


def split(check: Check, trials: list[TrialRecord]) -> Split | None:
    """The level judged on its pooled share, when its trials split into the two modes (see the module
    docstring); None when they do not."""
    ran = [t for t in trials if t.get("result")]
    whole = tail(check, ran)
    if whole is None:
        return None
    over = [t for t in ran if rests_on(check, [t]) is not None]
    under = [t for t in ran if (v := measure(check.metric, check.q, [t])) is not None and check.passes(v)
             and (one := tail(check, [t])) is not None and one.share < one.allowed]
    if not over or not under or len(over) + len(under) != len(ran):
        return None
    low, high = whole.interval()
    verdict: Verdict = "missed" if low >= whole.allowed else "met" if high < whole.allowed else "unsure"
    against = verdict != "unsure" and (verdict == "met") != (len(under) > len(over))
    if against:  # never met while most of its trials missed, nor missed while most met
        verdict = "unsure"
    side = ("; its trials disagree with it, so nothing is decided against" if against else
            {"missed": "; more than", "met": "; less than", "unsure": "; around"}[verdict])
    shown = (said(whole, pct_range(low, high), "rests on" if verdict == "missed" else "turns on")
             + f" (95 % interval over {len(ran)} trials: {len(over)} over the target, {len(under)} under)"
             f"{side} the {pct(whole.allowed)} {whole.name} allows")
    settled = None
    if verdict == "unsure" and len(ran) >= SETTLE:
        settled = (f"the share of requests that waited for TCP's {whole.delay} s SYN retry has a 95 % interval "
                   f"that still contains the {pct(whole.allowed)} {whole.name} allows: the level is at the edge")
    return Split(verdict, shown, settled)
