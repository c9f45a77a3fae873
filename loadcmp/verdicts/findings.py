"""A write-up's findings, judged on the measured results.

An experiment file states what the write-up found as `[[findings]]` tables: the `claim`
in the write-up's words and a `check` loadcmp can evaluate, so the report says whether
this run bears the claim out. A check extends the smoke grammar (`loadcmp.verdicts.checks`: the
same metrics, units and scales):

    nginx:failed_rate@6000 < 1%
    nginx:rps@1000.. > 1.5 * apache-prefork:rps
    apache-prefork:mem_peak@..1000 > 2 * nginx:mem_peak
    nginx:p(99)@500 < 10 * p(50)
    nginx:capacity > 2 * apache-prefork:capacity

- `label:` is a server label of the run (a stack name or a variant's label, [A-Za-z0-9_.-]+;
  with several protocols, `nginx[h2]:rps`; with several pages, `nginx[/index.html]:rps`).
  Without one the claim is about every server. Labels are not checked against the stack
  catalog here (variants name themselves): `labels()` / `check_labels()` let the spec refuse
  an unknown one before a run, and a label missing from the results makes a finding inconclusive.
- `@levels`: `@1000` that level, `@1000..` every level >= 1000, `@..500`, `@100..1000`;
  none: every level of the run.
- The right side is a value with its unit, or `[factor *] [label:]metric[@level]`: a multiple
  of another measurement of the same kind (latencies compare with latencies, otherwise a metric
  only with itself). Its label defaults to the left's; its level to each of the left's levels,
  or one `@level` for them all.
- `capacity` (what `loadcmp capacity` found, in clients or requests/s) takes no level; it is
  judged on the edge the search bracketed (`loadcmp.verdicts.judge`).
- An event's figure (`nginx:reload.failed`, `nginx:reload.recovery < apache-prefork:reload.recovery`) is its
  action, a dot and one of `eventmetrics.EVENT_METRICS`, judged per trial as any other (`@` still the level).
- `<`, `<=`, `>`, `>=`; `==` is refused, since an interval can never show equality, except on what an event's
  requests counted (`nginx:reload.failed == 0`), judged on every trial exactly (`eventmetrics.exact`).

The verdicts (supported, not supported, inconclusive) and the rule for few trials are
`loadcmp.verdicts.judge`'s.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from .checks import check_metric, comparable, threshold
from .eventmetrics import EXACT, split
from ..errors import ConfigError, Problems, UsageError
from ..traffic.mix import MIX_LABEL


_LABEL = r"[A-Za-z0-9_./-]+(?:\[[a-z0-9]+\])?(?:/keepalive|/close)?(?:\[/[^\]\s]*\])?"
"""A label; `nginx[h2]` names one protocol of a run with several (`--proto h1,h2`: the label itself), and
`nginx[/index.html]` one page of a run with several (its label `nginx /index.html`); `nginx[h2][/a]` both;
`nginx[h2]/keepalive` one protocol of a run both with and without keep-alive."""
_METRIC = r"[a-z][a-z0-9_-]*\.[a-z][a-z_0-9]*|[a-z_]+"
"""A load's metric (`rps`, `p`), or an event's: its action, a dot, its figure (`reload_php.failed`)."""
_SIDE = re.compile(rf"^\s*(?:(?P<label>{_LABEL})\s*:\s*)?(?P<metric>{_METRIC})"
                   r"(?:\(\s*(?P<q>\d+(?:\.\d+)?)\s*\)|(?P<qq>\d+(?:\.\d+)?))?\s*(?:@\s*(?P<levels>\S*))?\s*$")
_VALUE = re.compile(r"^\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z%]*)\s*$")
_FACTOR = re.compile(r"^\s*(?P<factor>\d+(?:\.\d+)?|\.\d+)\s*\*(?P<side>.*)$")
_LEVELS = re.compile(r"^(?P<low>\d+)?(?P<range>\.\.)?(?P<high>\d+)?$")
_LIKE = "write it like nginx:failed_rate@6000 < 1% or nginx:rps@1000.. > 1.5 * apache-prefork:rps"


@dataclass(frozen=True)
class Levels:
    """The levels one side looks at: one (`@1000`) or a range, open at either end."""

    low: int | None
    high: int | None

    def pick(self, run: list[int]) -> list[int]:
        """One level even if the run lacks it (it is then judged: no data); a range: the run's levels in it."""
        if self.low is not None and self.low == self.high:
            return [self.low]
        return [lv for lv in run if (self.low is None or lv >= self.low) and (self.high is None or lv <= self.high)]

    def __str__(self) -> str:
        if self.low is not None and self.low == self.high:
            return f"@{self.low}"
        return f"@{self.low or ''}..{self.high or ''}"


@dataclass(frozen=True)
class Side:
    """One measurement a check names: whose, which metric, at which levels."""

    label: str | None
    metric: str
    q: float | None = None
    levels: Levels | None = None  #: None: every level of the run (left), the left's level (right)

    @property
    def figure(self) -> str:
        return f"p({self.q:g})" if self.q is not None else self.metric


@dataclass(frozen=True)
class FindingCheck:
    """A parsed check: `left op value`, or `left op value * right` when `right` is given."""

    text: str
    left: Side
    op: str
    value: float  #: the threshold in the metric's scale (ratio 0..1, ms, bytes), or the factor
    right: Side | None = None


@dataclass(frozen=True)
class Finding:
    """A write-up's claim and the check that tests it."""

    claim: str
    check: FindingCheck


def parse_check(text: str) -> FindingCheck:
    """A finding's check -> FindingCheck; a one-line UsageError that names it and says what to write."""
    # an operator inside [/page?a=1] is part of the page, not the check
    masked = re.sub(r"\[[^\]]*\]", lambda m: "_" * len(m[0]), text)
    cuts = [m.span() for m in re.finditer(r"<=|>=|==|!=|=<|=>|<|>|=", masked)]
    parts = [text[: cuts[0][0]], text[cuts[0][0]:cuts[0][1]], text[cuts[0][1]:]] if len(cuts) == 1 else []
    if len(parts) != 3:
        raise UsageError(f"check {text!r}: needs exactly one of <, <=, >, >=; {_LIKE}")
    lhs, op, rhs = parts
    if op in ("=<", "=>"):
        raise UsageError(f"check {text!r}: write {op[::-1]!r}, not {op!r}")
    left = _side(text, lhs, "left")
    exact = op == "==" and (got := split(left.metric)) is not None and got[1] in EXACT
    if op not in ("<", "<=", ">", ">=") and not exact:
        raise UsageError(f"check {text!r}: {op!r} cannot be judged from an interval; use <, <=, > or >= "
                         "(== only on what an event's requests counted, e.g. nginx:reload.failed == 0)")
    if exact and _VALUE.match(rhs) is None:
        raise UsageError(f"check {text!r}: == takes a value on the right, e.g. nginx:reload.failed == 0")
    if (m := _VALUE.match(rhs)) is not None:
        return FindingCheck(text.strip(), left, op, threshold(text, left.metric, float(m["value"]), m["unit"]))
    factor, rest = 1.0, rhs
    if (m := _FACTOR.match(rhs)) is not None:
        factor, rest = float(m["factor"]), m["side"]
        if factor <= 0:
            raise UsageError(f"check {text!r}: the factor must be above 0, e.g. 1.5 * apache-prefork:rps")
    right = _side(text, rest, "right")
    if right.levels is not None and right.levels.low != right.levels.high:
        raise UsageError(f"check {text!r}: the right side takes one level (e.g. @100) or none (the left's levels)")
    if right.label is not None and left.label is None:
        raise UsageError(f"check {text!r}: name the left server too, e.g. nginx:{left.figure} {op} {rhs.strip()}")
    if not comparable(left.metric, right.metric):
        raise UsageError(f"check {text!r}: {left.figure} and {right.figure} measure different things; "
                         f"compare {left.figure} with {left.figure}")
    if (right.label in (None, left.label) and right.figure == left.figure
            and right.levels in (None, left.levels)):
        raise UsageError(f"check {text!r}: compares a measurement with itself; name another server or level")
    return FindingCheck(text.strip(), left, op, factor, right)


def _side(text: str, part: str, where: str) -> Side:
    m = _SIDE.match(part)
    if m is None:
        hint = "a metric, e.g. nginx:rps@1000.." if where == "left" else "a value with its unit (1%, 500ms, 256MiB) " \
            "or [factor *] server:metric, e.g. 1.5 * apache-prefork:rps"
        raise UsageError(f"check {text!r}: the {where} side {part.strip()!r} is not {hint}")
    q = check_metric(text, m["metric"], m["q"] or m["qq"])
    levels = None if m["levels"] is None else _levels(text, m["levels"])
    if levels is not None and m["metric"] == "capacity":
        raise UsageError(f"check {text!r}: capacity is one figure per server, at no level; write nginx:capacity")
    # a page (`[/a]`) or a mix as a whole (`[mix]`) is the cell `nginx /a`, `nginx mix`; `[h2]` stays the label's own
    label = re.sub(rf"\[(/[^\]]*|{MIX_LABEL})\]$", r" \1", m["label"]) if m["label"] else None
    return Side(label, m["metric"], q, levels)


def _levels(text: str, spec: str) -> Levels:
    m = _LEVELS.match(spec)
    if m is None or not (m["low"] or m["high"]) or (m["low"] and m["high"] and not m["range"]):
        raise UsageError(f"check {text!r}: levels are written @1000, @1000.., @..500 or @100..1000, not @{spec}")
    low, high = (int(m["low"]) if m["low"] else None), (int(m["high"]) if m["high"] else None)
    if not m["range"]:
        high = low
    if (low is not None and low < 1) or (high is not None and high < 1):
        raise UsageError(f"check {text!r}: levels are client counts, 1 or more")
    if low is not None and high is not None and low > high:
        raise UsageError(f"check {text!r}: the levels run backwards; write @{high}..{low}")
    return Levels(low, high)


def labels(check: FindingCheck) -> tuple[str, ...]:
    """The server labels a check names (none: it is about every server)."""
    named = [s.label for s in (check.left, check.right) if s is not None and s.label is not None]
    return tuple(dict.fromkeys(named))


def check_labels(findings: list[Finding], known: Collection[str], elsewhere: Collection[str] = ()) -> None:
    """Refuse, all at once, findings that name a label the run will not have and that
    is not `elsewhere` either (a server declared but left out of this run: judged inconclusive)."""
    shown = ", ".join(re.sub(r"^(\S+) (/.*)$", r"\1[\2]", k) for k in known)  # as a check names them
    p = Problems()
    p.extend(f"finding {i} ({f.check.text!r}): no server is labelled {lb!r} (known: {shown})"
             for i, f in enumerate(findings, 1) for lb in labels(f.check) if lb not in known and lb not in elsewhere)
    p.raise_if_any(summary="{n} findings name unknown servers")


def parse_findings(raw: object) -> list[Finding]:
    """The `[[findings]]` array of an experiment file: each a string `claim` and `check`;
    every problem at once, as one ConfigError."""
    if not isinstance(raw, list):
        raise ConfigError("findings must be an array of tables: [[findings]] with claim and check")
    out: list[Finding] = []
    p = Problems()
    for i, item in enumerate(raw, 1):
        where = f"finding {i}"
        if not isinstance(item, dict):
            p.add(f"{where}: must be a table with claim = \"...\" and check = \"...\"")
            continue
        extra = [k for k in item if k not in ("claim", "check")]
        if extra:
            p.add(f"{where}: unknown key(s) {', '.join(map(repr, extra))}; a finding has claim and check")
        bad = [k for k in ("claim", "check") if not isinstance(item.get(k), str) or not item[k].strip()]
        p.extend(f"{where}: {k} must be a non-empty string" for k in bad)
        if bad:
            continue
        try:
            out.append(Finding(item["claim"].strip(), parse_check(item["check"])))
        except UsageError as e:
            p.add(f"{where}: {e}")
    p.raise_if_any(summary="{n} bad finding(s)")
    return out
