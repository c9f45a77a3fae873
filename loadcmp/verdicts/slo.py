"""The target of a capacity search and what its measurements say of it.

A target is written in smoke's check grammar (`loadcmp.verdicts.smoke`), several joined by
commas: `--slo 'p99<500ms, failed_rate<1%'`. It is every server's, so a check names no server.

- `judge_probe`: one short trial meets the target when every check passes on it.
- `confirm_level`: a level's trials (3 or more) judged with 95 % intervals, by the rule findings
  use (`judge.decide`): met when every check's interval lies on the target's side, missed when
  one lies entirely on the wrong side, unsure otherwise. A probe is one trial and may be noise;
  this is what the search's answer rests on. A latency check whose trials split into two modes on TCP's
  SYN retry is judged on their pooled share of requests that waited for it (`retry.split`), and a check
  missed because of it says so (`retry.rests_on`), as a probe's does.
- `edge_cause`: what broke at the first missed level, only from what the trials stored:
  the checks it missed, an OOM or a dead server, the notes the servers' own evidence made (log
  causes, all workers busy, OOM kills), the server's CPU at its cores' limit, the client's limit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..errors import UsageError
from ..records import ServerInfo, TrialRecord
from ..report.causes import note
from ..units import cpu_list
from .checks import measure, show
from .eventmetrics import is_event
from .retry import rests_on, split

if TYPE_CHECKING:  # smoke reads Table 1 (pandas): imported when a target is parsed
    from .smoke import Check

Verdict = Literal["met", "missed", "unsure"]
"""A level against the target, from its confirmation trials."""

CPU_SATURATED = 0.9
"""Share of the server's cores (its mean CPU over the window) from which its CPU is the limit."""


@dataclass(frozen=True)
class Target:
    """The checks every probe is held to, as written."""

    text: str
    checks: tuple[Check, ...]

    def __str__(self) -> str:
        return ", ".join(c.name for c in self.checks)


def parse_slo(text: str, what: str = "--slo") -> Target:
    """`p99<500ms, failed_rate<1%` -> a Target; a one-line UsageError for the first bad part."""
    from .smoke import parse_check

    parts = [p.strip() for p in re.split(r"[,;]", text)]
    if not text.strip() or not all(parts):
        raise UsageError(f"{what} {text!r}: write checks joined by commas, e.g. 'p99<500ms, failed_rate<1%'")
    checks = []
    for part in parts:
        if re.match(r"^\s*[A-Za-z0-9_.-]+\s*:", part):
            raise UsageError(f"{what} {part!r}: a target is every server's; drop the server name")
        try:
            checks.append(parse_check(part))
        except UsageError as e:
            raise UsageError(f"{what}: {e}") from None
        if is_event(checks[-1].metric):
            raise UsageError(f"{what} {part!r}: a target takes the load's metrics; what an event costs is judged by "
                             "findings and smoke checks")
    return Target(text.strip(), tuple(checks))


@dataclass(frozen=True)
class Judged:
    """One probe against the target."""

    met: bool
    measured: dict[str, str]
    """Each check's value, as people read it."""
    missed: list[str]
    """The checks not met, with their values: `p(99)<500ms (812.3ms)`."""
    retry: tuple[str, ...] = ()
    """Those missed because of TCP's SYN retry, in words (`retry.rests_on`)."""

    @property
    def text(self) -> str:
        if self.missed:
            return "missed " + ", ".join(self.missed) + "".join(f" — {w}" for w in self.retry)
        return "met " + ", ".join(f"{c} ({v})" for c, v in self.measured.items())


def judge_probe(target: Target, trial: TrialRecord) -> Judged | None:
    """Whether one trial met every check (None: nothing was measured)."""
    if not trial.get("result"):
        return None
    measured, missed, retry = {}, [], []
    for c in target.checks:
        v = measure(c.metric, c.q, [trial])
        shown = show(c.metric, v)
        measured[c.name] = shown
        if v is None or not c.passes(v):
            missed.append(f"{c.name} ({shown})")
            retry += [why] if (why := rests_on(c, [trial])) else []
    return Judged(not missed, measured, missed, tuple(retry))


@dataclass(frozen=True)
class CheckEstimate:
    """One check over a level's trials: mean, 95 % interval, trials, and where it lies."""

    check: str
    mean: float | None
    low: float | None
    high: float | None
    n: int
    verdict: Verdict
    shown: str
    """`812.3ms (790.1ms–834.5ms)`, as a reader sees it."""


@dataclass(frozen=True)
class Confirmed:
    """A level's confirmation: its trials judged with intervals."""

    level: int
    verdict: Verdict
    n: int
    checks: list[CheckEstimate] = field(default_factory=list)
    client_bound: str | None = None
    """Why the client limited one of these trials, or None."""
    settled: str | None = None
    """Unsure, and why more trials would not decide it (`retry.split`: a level at the SYN retry's edge)."""

    @property
    def text(self) -> str:
        return "; ".join(f"{c.check}: {c.shown}" for c in self.checks)


def confirm_level(target: Target, level: int, trials: list[TrialRecord]) -> Confirmed:
    """A level's measured trials judged check by check with 95 % intervals (`judge.decide`)."""
    from ..store.reader import client_bound
    from .judge import decide, estimate

    ran = [t for t in trials if t.get("result")]
    out: list[CheckEstimate] = []
    settles: list[str | None] = []  #: each unsure check's reason why more trials would not decide it
    for c in target.checks:
        values = [measure(c.metric, c.q, [t]) for t in ran]
        finite = [v for v in values if v is not None and math.isfinite(v)]
        if ran and not finite:  # no request of any trial succeeded: no latency, and the target is missed
            out.append(CheckEstimate(c.name, None, None, None, len(ran), "missed", "no request succeeded"))
            continue
        e = estimate(c.metric, finite)
        if e.mean is None:
            out.append(CheckEstimate(c.name, None, None, None, 0, "unsure", "not measured"))
            settles.append(None)
            continue
        said, _ = decide(e.mean, e.low, e.high, e.n, c.op, c.value)
        one: Verdict = "met" if said == "supported" else "missed" if said == "not supported" else "unsure"
        shown = show(c.metric, e.mean) + (f" ({show(c.metric, e.low)}–{show(c.metric, e.high)})"
                                          if e.low is not None and e.high is not None else f" (n={e.n})")
        if one == "unsure" and (two := split(c, ran)) is not None:  # two modes on TCP's SYN retry
            one, shown = two.verdict, f"{shown}; {two.shown}"
            settles += [two.settled] if one == "unsure" else []
        elif one == "unsure":
            settles.append(None)
        elif one == "missed" and (why := rests_on(c, ran)) is not None:
            shown += f"; {why}"
        out.append(CheckEstimate(c.name, e.mean, e.low, e.high, e.n, one, shown))
    verdicts = {c.verdict for c in out}
    verdict: Verdict = "missed" if "missed" in verdicts else "met" if verdicts == {"met"} else "unsure"
    bound = client_bound(ran)
    settled = "; ".join(str(x) for x in settles) if settles and all(settles) and verdict == "unsure" else None
    return Confirmed(level, verdict, len(ran), out, None if bound is None else bound.reason, settled)


def edge_cause(trials: list[TrialRecord], info: ServerInfo | None, cores: int | None,
               judged: list[Judged], target: Target | None = None) -> list[str]:
    """What broke at the first missed level, strongest evidence first; never a guess.

    `cores`: the machine's CPUs, for a server not pinned to a set of them; `target`: its checks missed because
    of TCP's SYN retry are said once, over the level's trials pooled."""
    from ..store.reader import causes_of, cpu_of_its_cpus  # pandas: only when results are read

    out: list[str] = []
    for t in trials:
        if t["status"] in ("oom", "server_died") and t.get("reason"):
            out.append(str(t["reason"]))
    for t in trials:
        out += [note(c, t["result"]["failures"], t["result"].get("slow_connects")) for c in causes_of(t)]
    pinned = info.get("cpus") if info else None
    cpus = len(cpu_list(pinned)) if pinned else cores
    for t in trials:
        cpu, apart = cpu_of_its_cpus(t)
        if cpu is not None and cpus and cpu >= CPU_SATURATED * 100 * cpus:
            of = f"{cpu:,.0f}% of its {cpus} CPU{'s' if cpus > 1 else ''}"
            if apart:
                shares = ", ".join([f"the server {cpu - sum(apart.values()):,.0f}%",
                                    *(f"its {role} {v:,.0f}%" for role, v in apart.items())])
                of += f" with its {' and '.join(apart)}, on the same CPUs ({shares}; means over the window)"
            else:
                of += " (its mean over the window)"
            out.append(f"the server's CPU was saturated: {of}")
            break
    for t in trials:
        r = t.get("result")
        if r and r.get("client_bound"):
            out.append(f"the client was the limit: {r.get('client_bound_reason') or 'it was saturated'}")
            break
    missed = list(dict.fromkeys(m for j in judged for m in j.missed))
    if missed:
        failures: dict[str, int] = {}
        for t in trials:
            r = t.get("result")
            for k, n in (r["failures"] if r else {}).items():
                failures[k] = failures.get(k, 0) + n
        seen = ", ".join(f"{n:,} {k}" for k, n in sorted(failures.items(), key=lambda kv: -kv[1]) if n)
        retry = [w for c in (target.checks if target else ()) if (w := rests_on(c, [t for t in trials
                                                                                    if t.get("result")]))]
        head = ("the target was missed: " + ", ".join(missed) + "".join(f" — {w}" for w in retry)
                + (f"; failures: {seen}" if seen else ""))
        out.append(head if out else head + " (no server evidence names a limit)")
    return list(dict.fromkeys(out))
