"""A latency check against TCP's SYN retry: when the requests whose connect waited for it are what puts a
percentile over its target, the verdict says so, and a level whose trials split on it is judged on their share.

A full listen queue drops SYNs; each such client sends its SYN again after 1 s (then 2 s more), so its request
takes a second more. A check `p99<X` with X of 1 s or less allows 1 % of the requests over X: a trial where 1 % or
more waited for the retry misses it, one where fewer did may meet it, and nothing lies between. Such trials are
two modes, and a t interval over their percentiles straddles the target however many there are.

`rests_on`: the check is missed over these trials, more of their requests waited for the retry than the
percentile allows, and without those requests it would be met. `split`: a level's trials fall in both modes
(some missed and resting on the retry, the others met with a share under the allowance); the level is judged on
the share of its requests pooled over its trials, the one figure the level's pooled percentile rests on. Its
95 % interval is Wilson's on the pooled counts: the question is the share of the level's requests, and the
requests are the sample. Slow connects come in bursts (when the queue is full), so this interval is narrower
than one over trials; a t interval over the trials' shares would need ten or more trials wherever the share is
within a fifth of the allowance, the cost this judgement saves. Where the pooled interval still straddles the
allowance after `SETTLE` trials, the level is at the edge: more trials would narrow it only slowly, and the
level stays unsure with that said.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Protocol

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
"""Trials after which a split level whose pooled share still straddles the allowance stays unsure."""
Z95 = 1.959964


@dataclass(frozen=True)
class Tail:
    """A latency percentile's check, and the slow connects of some trials pooled against what it allows."""

    name: str  #: the percentile as people write it: p99
    delay: int  #: the retry that puts a request over the target: 1 (s) or 3
    allowed: float  #: the share of requests the percentile allows over its target
    slow: int  #: requests whose connect waited for that retry
    requests: int

    @property
    def share(self) -> float:
        return self.slow / self.requests if self.requests else 0.0

    def interval(self) -> tuple[float, float]:
        """Wilson's 95 % interval of the share."""
        n, p = self.requests, self.share
        if not n:
            return 0.0, 1.0
        mid = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
        half = Z95 / (1 + Z95 ** 2 / n) * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n))
        return max(0.0, mid - half), min(1.0, mid + half)


def tail(check: Check, trials: list[TrialRecord]) -> Tail | None:
    """The check's tail against the retry over these trials; None for a check it cannot move (not an upper
    bound on a percentile, a target over 3 s) or trials that stored no slow connects."""
    if check.metric != "p" or check.q is None or check.op not in ("<", "<="):
        return None
    delay = next((d for upto, d in RETRIES if check.value <= upto), None)
    s = pooled(trials)
    if delay is None or s is None or not s["requests"]:
        return None
    return Tail(f"p{check.q:g}", delay, (100 - check.q) / 100, s["over_1s"] if delay == 1 else s["over_3s"],
                s["requests"])


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
    side = {"missed": "more than", "met": "less than", "unsure": "around"}[verdict]
    shown = (said(whole, pct_range(low, high), "rests on" if verdict == "missed" else "turns on")
             + f" (95 % interval, {len(ran)} trials pooled: {len(over)} over the target, {len(under)} under), "
             f"{side} the {pct(whole.allowed)} {whole.name} allows")
    settled = None
    if verdict == "unsure" and len(ran) >= SETTLE:
        settled = (f"at {len(ran)} trials the share of requests that waited for TCP's {whole.delay} s SYN retry "
                   f"still sits on the {pct(whole.allowed)} {whole.name} allows: the level is at the edge")
    return Split(verdict, shown, settled)
