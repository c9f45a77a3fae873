"""`loadcmp smoke`: short runs with k6-style checks, JUnit XML and a Markdown summary.

A check is `[server:]metric op value[unit]`, the same on the command line and
in an experiment file's `[smoke] checks` list:

    failed_rate<1%     rps>200     p(99)<500ms     mem_peak<256MiB     nginx:rps>500
    reload.failed==0   reload_php.unanswered==0   reload.recovery<2s

An event's figure (`reload.failed`: `loadcmp.verdicts.eventmetrics`) is pooled over a label's events of that
action; a run with none of them, or one whose event failed, fails the check in one line saying so. A busy
workers' figure (`busy_share>=99%`: `loadcmp.verdicts.busymetrics`) is a label's peak over its levels and trials.

`p99` is short for `p(99)` (as `p95`, `p99.9`).

Values use the units of `loadcmp.units` (the same as flags and experiment
files): times need a unit (us, ms, s, m, h), sizes follow KB = 1000 and
KiB = k = 1024, ratios take `%`.

Checks are parsed before anything starts (a bad one is a usage error, exit 2);
after the run each is evaluated per server x page, from the stored results.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from . import checks
from ..lab import stacks
from .. import units
from .checks import METRICS as METRICS  # re-exported: the metrics a smoke check names
from .checks import OPS, check_metric, show
from .checks import threshold as _threshold
from . import busymetrics
from .busymetrics import is_busy
from .eventmetrics import is_event, pooled
from .retry import rests_on
from ..errors import Problems, UsageError
from ..report.tables import notes, table1
from ..store.reader import Results, client_bound
from ..records import LoadSummary, TrialRecord
from ..store.writer import _atomic_write

_RX = re.compile(
    r"^\s*(?:(?P<scope>[A-Za-z0-9_.-]+)\s*:)?\s*(?P<metric>[a-z][a-z0-9_-]*\.[a-z][a-z_0-9]*|[a-z_]+)"
    r"(?:\(\s*(?P<q>\d+(?:\.\d+)?)\s*\)|(?P<qq>\d+(?:\.\d+)?))?\s*"
    r"(?P<op><=|>=|==|<|>)\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z%]*)\s*$"
)


@dataclass(frozen=True)
class Check:
    """One threshold, parsed and normalised (times in ms, bytes, ratios 0..1)."""

    text: str
    metric: str
    op: str
    value: float
    scope: str | None = None
    q: float | None = None

    @property
    def name(self) -> str:
        return self.text.strip()

    def applies(self, server_label: str) -> bool:
        return self.scope is None or server_label.split(" ")[0].split("/")[0] == self.scope

    def passes(self, measured: float) -> bool:
        return OPS[self.op](measured, self.value)

    def show(self, measured: float | None) -> str:
        return show(self.metric, measured)


def parse_check(text: str, cat: stacks.Catalog | None = None) -> Check:
    """`[server:]metric op value[unit]` -> a Check; units are those of loadcmp.units; `server` a stack of `cat`
    (None: ours and LOADCMP_STACKS')."""
    m = _RX.match(text)
    if not m:
        raise UsageError(f"bad check {text!r}: write it like rps>200, p(99)<500ms, failed_rate<1%, "
                         "nginx:mem_peak<256MiB")
    metric = m.group("metric")
    if metric == "capacity":
        raise UsageError(f"check {text!r}: capacity is found by `loadcmp capacity` and judged by findings, "
                         "not by a check on one run")
    q = check_metric(text, metric, m.group("q") or m.group("qq"))
    value = _threshold(text, metric, float(m.group("value")), m.group("unit"))
    scope = m.group("scope")
    if scope is not None:
        try:
            scope = (cat or stacks.catalog()).get(scope).name
        except UsageError:
            raise UsageError(f"check {text!r}: unknown server {scope!r}") from None
    return Check(text, metric, m.group("op"), value, scope, q)


def parse_checks(texts: list[str] | tuple[str, ...], cat: stacks.Catalog | None = None) -> list[Check]:
    """Every check parsed, or one error listing every bad one."""
    p = Problems()
    checks = [c for t in texts if (c := p.attempt(partial(parse_check, t, cat))) is not None]
    p.raise_if_any(summary="{n} bad checks")
    return checks


def parse_percent(text: str) -> float:
    """--max-regression '20%' -> 0.2."""
    return units.parse_percent(text, "--max-regression")


# --- evaluation ------------------------------------------------------------------------


def measure(check: Check, trials: list[TrialRecord]) -> float | None:
    """The value a check looks at, over one variant's trials (worst-case for latency)."""
    return checks.measure(check.metric, check.q, trials)


@dataclass
class Verdict:
    """One check on one variant (server x page)."""

    server: str
    check: str
    measured: float | None
    shown: str
    passed: bool
    message: str
    kind: str = "check"
    client_bound_reason: str | None = None
    """Why the client, not the server, limited what was measured (the check still counts)."""


def evaluate(res: Results, checks: list[Check]) -> list[Verdict]:
    out = []
    for label in res.servers:
        mine = res.of_server(label)
        for c in checks:
            if not c.applies(label):
                continue
            stored = is_event(c.metric) or is_busy(c.metric)  # from the stored seconds, not the trial records
            v, why = _event_value(res, label, c) if stored else (measure(c, mine), None)
            if v is None:
                reason = why or next((t.get("reason") for t in mine if t.get("reason")), "nothing was measured")
                out.append(Verdict(label, c.name, None, "n/a", False, f"{label}: {c.name}: not measured ({reason})"))
                continue
            ok = c.passes(v)
            bound = client_bound(mine)
            msg = f"{label}: {c.name}: measured {c.show(v)}" + ("" if ok else " — not met")
            if not ok and (why := rests_on(c, mine)):
                msg += f": {why}"
            if bound is not None:
                msg += f" (client-bound: {bound.reason})"
            out.append(Verdict(label, c.name, v, c.show(v), ok, msg,
                               client_bound_reason=None if bound is None else bound.reason))
    return out


def _event_value(res: Results, label: str, c: Check) -> tuple[float | None, str | None]:
    """An event check's value over a label's events of its action, or why there is none."""
    got = busymetrics.pooled(res, c.metric, label) if is_busy(c.metric) else pooled(res, c.metric, label)
    return (None, got) if isinstance(got, str) else (got, None)


def compare_baseline(res: Results, base: Results, margin: float) -> list[Verdict]:
    """rps may not drop, p99 may not grow, by more than `margin` against the baseline.

    Nothing measured now where the baseline measured something is the worst regression
    and fails (a trial that never ran, 0 req/s, no response to take a p99 of), as `evaluate`
    treats a check with nothing measured; only a baseline that measured nothing gives no verdict."""
    out = []

    def by_key(r: Results) -> dict[tuple[str, int], list[LoadSummary]]:
        acc: dict[tuple[str, int], list[LoadSummary]] = {}
        for t in r.trials:
            got = acc.setdefault((t["server"], t["level"]), [])
            if t.get("result"):
                got.append(t["result"])
        return acc

    cur, old = by_key(res), by_key(base)

    def rps(r: Results, key: tuple[str, int]) -> float | None:
        vals = [x["rps"] for x in (cur if r is res else old).get(key, [])]
        return sum(vals) / len(vals) if vals else None

    def p99(r: Results, key: tuple[str, int]) -> float | None:
        h = r.pooled_latency(*key)  # pooled, as Table 1 and the checks
        return units.ms(h.percentile(99)) if h.count else None

    # (name, getter, +1 if higher is better, unit)
    figures: tuple[tuple[str, Callable[[Results, tuple[str, int]], float | None], int, str], ...] = (
        ("rps", rps, 1, ""), ("p99", p99, -1, " ms"))
    ran = {server for server, _ in cur}
    for key in old:  # every cell of the baseline's whose server this run has: one it lacks is a regression too
        if key[0] not in ran:
            continue  # a server this run did not choose (smoke --server): nothing to hold it to
        label = f"{key[0]} at {key[1]} clients"
        for name, get, better, unit in figures:
            now_v, was = get(res, key), get(base, key)
            check = f"{name} vs baseline (max {'-' if better > 0 else '+'}{margin:.0%})"
            if not was:
                continue  # the baseline measured nothing here: nothing to hold the run to
            if now_v is None or (name == "rps" and now_v == 0):
                what = "no trial was measured" if not cur.get(key) else "nothing was served"
                out.append(Verdict(key[0], check, now_v, "-" if now_v is None else f"{now_v:,.1f}{unit.strip()}",
                                   False, f"{label}: {what}, against the baseline's {name} {was:,.1f}{unit}",
                                   "baseline"))
                continue
            worse = better * (was - now_v) / was  # > 0: a regression of that fraction
            ok = worse <= margin
            direction = ("below" if now_v < was else "above")
            bound = client_bound(res.cell(*key)) or client_bound(base.cell(*key))
            out.append(Verdict(
                key[0], check, now_v, f"{now_v:,.1f}{unit.strip()}", ok,
                f"{label}: {name} {now_v:,.1f}{unit} is {abs(now_v - was) / was:.0%} {direction} the baseline "
                f"{was:,.1f}{unit}" + ("" if ok else f" (worse by more than {margin:.0%})")
                + ("" if bound is None else f" (client-bound, the change may be the client's: {bound.reason})"),
                "baseline", client_bound_reason=None if bound is None else bound.reason))
    return out


# --- outputs ----------------------------------------------------------------------------


def junit_xml(verdicts: list[Verdict], elapsed: float, results_dir: str) -> bytes:
    """One testcase per server x check, readable by Jenkins, GitLab and GitHub actions."""
    suite = ET.Element("testsuite", name="loadcmp smoke", tests=str(len(verdicts)),
                       failures=str(sum(not o.passed for o in verdicts)), errors="0", skipped="0",
                       time=f"{elapsed:.3f}", timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"))
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="results_dir", value=results_dir)
    for o in verdicts:
        server = o.server.split(" ")[0]
        case = ET.SubElement(suite, "testcase", classname=f"loadcmp.smoke.{server}", name=f"{o.server}: {o.check}",
                             time="0")
        if not o.passed:
            f = ET.SubElement(case, "failure", message=o.message,
                              type="change point" if o.kind == "history" else "threshold")
            f.text = o.message
        else:
            so = ET.SubElement(case, "system-out")
            so.text = o.message
    root = ET.Element("testsuites", tests=suite.get("tests", "0"), failures=suite.get("failures", "0"))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def summary_md(verdicts: list[Verdict], res: Results, passed: bool, elapsed: float,
               said: Sequence[str] = ()) -> str:
    """The step summary: the checks, what a failed history check found (the change, the set-up differences),
    what was said instead of judging, and Table 1."""
    header, rows = table1(res)
    lines = [f"## loadcmp smoke: {'passed' if passed else 'FAILED'}", "",
             f"{len(verdicts)} checks, {sum(not o.passed for o in verdicts)} failed, {elapsed:.0f} s; "
             f"results in `{res.path}`.", "",
             "| server | check | measured | verdict |", "|---|---|---:|---|"]
    for o in verdicts:
        verdict = "pass" if o.passed else "**fail**"
        bound = " (client-bound)" if o.client_bound_reason else ""
        lines.append(f"| {o.server} | `{o.check}` | {o.shown} | {verdict}{bound} |")
    found = [f"- **{o.check}**: {o.message}" for o in verdicts if o.kind == "history" and not o.passed]
    found += [f"- {line}" for line in said]
    lines += [""] + found if found else []
    lines += ["", "| " + " | ".join(f"{g} {w}".strip() for g, w in header) + " |",
              "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += [""] + [f"- {n}" for n in notes(res) if n.startswith("‡")]
    return "\n".join(lines) + "\n\n"


def write_outputs(verdicts: list[Verdict], res: Results, passed: bool, elapsed: float, junit: str | None,
                  summary: str | None, said: Sequence[str] = ()) -> None:
    if junit:
        data = junit_xml(verdicts, elapsed, str(res.path))
        p = Path(junit)
        p.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(p, lambda tmp: Path(tmp).write_bytes(data))
    if summary:
        p = Path(summary)
        p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("a") as f:
            f.write(summary_md(verdicts, res, passed, elapsed, said))
