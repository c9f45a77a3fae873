"""`loadcmp smoke`: short runs with k6-style checks, JUnit XML and a Markdown summary.

A check is `[server:]metric op value[unit]`, the same on the command line and
in an experiment file's `[smoke] checks` list:

    failed_rate<1%     rps>200     p(99)<500ms     mem_peak<256MiB     nginx:rps>500

Values use the units of `loadcmp.units` (the same as flags and experiment
files): times need a unit (us, ms, s, m, h), sizes follow KB = 1000 and
KiB = k = 1024, ratios take `%`.

Checks are parsed before anything starts (a bad one is a usage error, exit 2);
after the run each is evaluated per server x page, from the stored results.
"""

from __future__ import annotations

import math
import operator
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import stacks
from . import units
from .errors import ConfigError, UsageError
from .load.recorder import Histogram
from .units import duration_value, size_value
from .report.tables import notes, table1
from .results import Results, client_bound, metrics_of
from .records import LoadSummary, ServerMetrics, TrialRecord
from .store import _atomic_write

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
}
METRICS: dict[str, tuple[str, str]] = {
    "failed_rate": ("ratio", "failed / (started - unfinished)"),
    "rps": ("", "successful requests per second"),
    "ok": ("", "successful requests"),
    "failed": ("", "failed requests"),
    "unfinished": ("", "requests in flight at the end"),
    "p": ("time", "latency percentile, p(95) etc., in ms"),
    "max": ("time", "largest latency"),
    "mean": ("time", "mean latency"),
    "mem_peak": ("bytes", "peak server memory"),
    "cpu": ("", "server CPU % (100 = one core)"),
    "pids_peak": ("", "peak server threads"),
}
_RX = re.compile(
    r"^\s*(?:(?P<scope>[A-Za-z0-9_.-]+)\s*:)?\s*(?P<metric>[a-z_]+)(?:\(\s*(?P<q>\d+(?:\.\d+)?)\s*\))?\s*"
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
        if measured is None:
            return "n/a"
        kind = METRICS[self.metric][0]
        if kind == "ratio":
            return f"{measured * 100:.2f}%"
        if kind == "time":
            return f"{measured:.1f}ms"
        if kind == "bytes":
            return f"{measured / 1024**2:.1f}MiB"
        return f"{measured:,.1f}"


def parse_check(text: str) -> Check:
    """`[server:]metric op value[unit]` -> a Check; units are those of loadcmp.units."""
    m = _RX.match(text)
    if not m:
        raise UsageError(f"bad check {text!r}: write it like rps>200, p(99)<500ms, failed_rate<1%, nginx:mem_peak<256MiB")
    metric, q = m.group("metric"), m.group("q")
    if metric not in METRICS:
        raise UsageError(f"check {text!r}: unknown metric {metric!r}; known: {', '.join(k if k != 'p' else 'p(N)' for k in METRICS)}")
    if metric == "p" and q is None:
        raise UsageError(f"check {text!r}: a percentile needs a number, e.g. p(99)")
    if q is not None and metric != "p":
        raise UsageError(f"check {text!r}: only p(N) takes a number in brackets")
    if q is not None and not 0 < float(q) <= 100:
        raise UsageError(f"check {text!r}: the percentile must be in (0, 100]")
    value = _threshold(text, metric, float(m.group("value")), m.group("unit"))
    scope = m.group("scope")
    if scope is not None:
        try:
            scope = stacks.get_stack(scope).name
        except UsageError:
            raise UsageError(f"check {text!r}: unknown server {scope!r}") from None
    return Check(text, metric, m.group("op"), value, scope, float(q) if q else None)


def _threshold(text: str, metric: str, number: float, unit: str) -> float:
    """The check's value in the metric's own scale: ratio 0..1, milliseconds, bytes or a plain count."""
    kind = METRICS[metric][0]
    if kind == "ratio" and unit in ("%", ""):
        return number / 100 if unit == "%" else number
    if kind == "time":
        if unit == "":
            raise UsageError(f"check {text!r}: give the time a unit (us, ms, s, m or h), e.g. {metric}<500ms")
        secs = duration_value(number, unit)
        if secs is not None:
            return secs * 1000
    if kind == "bytes":
        size = size_value(number, unit)
        if size is not None:
            return float(size)
    if kind == "" and unit == "":
        return number
    if unit == "%" or duration_value(number, unit) is not None or size_value(number, unit) is not None:
        raise UsageError(f"check {text!r}: {unit!r} is not a unit of {metric}")
    raise UsageError(f"check {text!r}: unknown unit {unit!r}")


def parse_checks(texts: list[str] | tuple[str, ...]) -> list[Check]:
    """Every check parsed, or one error listing every bad one."""
    checks, errors = [], []
    for t in texts:
        try:
            checks.append(parse_check(t))
        except UsageError as e:
            errors.append(str(e))
    if len(errors) == 1:
        raise UsageError(errors[0])
    if errors:
        raise ConfigError(f"{len(errors)} bad checks", errors)
    return checks


def parse_percent(text: str) -> float:
    """--max-regression '20%' -> 0.2."""
    return units.parse_percent(text, "--max-regression")


# --- evaluation ------------------------------------------------------------------------


_COUNTS: dict[str, Callable[[LoadSummary], float]] = {
    "rps": lambda r: r["rps"], "ok": lambda r: r["ok"], "failed": lambda r: r["failed"],
    "unfinished": lambda r: r["unfinished"],
}
_SERVER: dict[str, Callable[[ServerMetrics], float | None]] = {
    "mem_peak": lambda m: m.get("mem_peak_bytes"), "cpu": lambda m: m.get("cpu_pct"),
    "pids_peak": lambda m: m.get("pids_peak"),
}


def measure(check: Check, trials: list[TrialRecord]) -> float | None:
    """The value a check looks at, over one variant's trials (worst-case for latency)."""
    ran = [t for t in trials if t.get("result")]
    if not ran:
        return None
    res: list[LoadSummary] = [t["result"] for t in ran]
    if check.metric == "failed_rate":
        done = sum(r["started"] - r["unfinished"] for r in res)
        return sum(r["failed"] for r in res) / done if done else 0.0
    if check.metric in ("rps", "ok", "failed", "unfinished"):
        count = _COUNTS[check.metric]
        return sum(count(r) for r in res) / len(res)
    if check.metric in ("p", "max", "mean"):
        h = Histogram()
        for t in ran:
            if "latency_hist" in t:
                h = h.merge(Histogram.from_dict(t["latency_hist"]))
        if h.count == 0:
            return math.inf
        v = h.percentile(check.q or 100) if check.metric == "p" else h.max_s if check.metric == "max" else h.mean
        return None if v is None else v * 1000
    sample = _SERVER[check.metric]
    vals = [float(x) for x in (sample(metrics_of(t)) for t in ran) if x is not None]
    if not vals:
        return None
    return sum(vals) / len(vals) if check.metric == "cpu" else max(vals)


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
            v = measure(c, mine)
            if v is None:
                reason = next((t.get("reason") for t in mine if t.get("reason")), "nothing was measured")
                out.append(Verdict(label, c.name, None, "n/a", False, f"{label}: {c.name}: not measured ({reason})"))
                continue
            ok = c.passes(v)
            bound = client_bound(mine)
            msg = f"{label}: {c.name}: measured {c.show(v)}" + ("" if ok else " — not met")
            if bound is not None:
                msg += f" (client-bound: {bound.reason})"
            out.append(Verdict(label, c.name, v, c.show(v), ok, msg, client_bound_reason=None if bound is None else bound.reason))
    return out


def compare_baseline(res: Results, base: Results, margin: float) -> list[Verdict]:
    """rps may not drop, p99 may not grow, by more than `margin` against the baseline."""
    out = []

    def by_key(r: Results) -> dict[tuple[str, int], list[LoadSummary]]:
        acc: dict[tuple[str, int], list[LoadSummary]] = {}
        for t in r.trials:
            if t.get("result"):
                acc.setdefault((t["server"], t["level"]), []).append(t["result"])
        return acc

    cur, old = by_key(res), by_key(base)

    def mean(ts: list[LoadSummary], get: Callable[[LoadSummary], float | None]) -> float | None:
        vals = [v for v in (get(x) for x in ts) if v]
        return sum(vals) / len(vals) if vals else None

    # (name, getter, +1 if higher is better, unit)
    figures: tuple[tuple[str, Callable[[LoadSummary], float | None], int, str], ...] = (
        ("rps", lambda r: r["rps"], 1, ""), ("p99", lambda r: r["latency_ms"]["p99"], -1, " ms"))
    for key, ts in cur.items():
        if key not in old:
            continue
        label = f"{key[0]} at {key[1]} clients"
        for name, get, better, unit in figures:
            now_v, was = mean(ts, get), mean(old[key], get)
            if now_v is None or was is None:
                continue
            worse = better * (was - now_v) / was  # > 0: a regression of that fraction
            ok = worse <= margin
            direction = ("below" if now_v < was else "above")
            bound = client_bound(res.cell(*key)) or client_bound(base.cell(*key))
            out.append(Verdict(
                key[0], f"{name} vs baseline (max {'-' if better > 0 else '+'}{margin:.0%})", now_v,
                f"{now_v:,.1f}{unit.strip()}", ok,
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
            f = ET.SubElement(case, "failure", message=o.message, type="threshold")
            f.text = o.message
        else:
            so = ET.SubElement(case, "system-out")
            so.text = o.message
    root = ET.Element("testsuites", tests=suite.get("tests", "0"), failures=suite.get("failures", "0"))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def summary_md(verdicts: list[Verdict], res: Results, passed: bool, elapsed: float) -> str:
    header, rows = table1(res)
    lines = [f"## loadcmp smoke: {'passed' if passed else 'FAILED'}", "",
             f"{len(verdicts)} checks, {sum(not o.passed for o in verdicts)} failed, {elapsed:.0f} s; "
             f"results in `{res.path}`.", "",
             "| server | check | measured | verdict |", "|---|---|---:|---|"]
    for o in verdicts:
        verdict = "pass" if o.passed else "**fail**"
        lines.append(f"| {o.server} | `{o.check}` | {o.shown} | {verdict}{' (client-bound)' if o.client_bound_reason else ''} |")
    lines += ["", "| " + " | ".join(f"{g} {w}".strip() for g, w in header) + " |",
              "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += [""] + [f"- {n}" for n in notes(res) if n.startswith("‡")]
    return "\n".join(lines) + "\n\n"


def write_outputs(verdicts: list[Verdict], res: Results, passed: bool, elapsed: float, junit: str | None,
                  summary: str | None) -> None:
    if junit:
        data = junit_xml(verdicts, elapsed, str(res.path))
        p = Path(junit)
        p.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(p, lambda tmp: Path(tmp).write_bytes(data))
    if summary:
        p = Path(summary)
        p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("a") as f:
            f.write(summary_md(verdicts, res, passed, elapsed))
