"""What a check can look at: the metrics, their units and scales, the operators, and a metric's
value over trials. Smoke checks (`loadcmp.verdicts.smoke`) and findings (`loadcmp.verdicts.findings`) share it,
so `p(99)<500ms` means the same in both.

Kept free of pandas and numpy at import: experiment files, and the checks in them, are
validated when the CLI starts (`tests/test_architecture.py`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from ..errors import UsageError
from ..records import LoadSummary, ServerMetrics, TrialRecord
from ..units import duration_value, ms, size_value
from .busymetrics import BUSY_METRICS, is_busy
from .eventmetrics import check_event_metric, is_event, split
from .eventmetrics import kind as event_kind

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
    "capacity": ("level", "the highest level meeting a capacity search's target (findings only)"),
    "handshakes": ("", "TLS handshakes per second, full and resumed (https)"),
    "resumed_share": ("ratio", "share of the TLS handshakes that resumed a session (https)"),
    "handshakes_per_core": ("", "TLS handshakes per second per core of server CPU (https)"),
    "completion": ("ratio", "journeys completed / journeys started and ended (--journey)"),
    **BUSY_METRICS,  # from server.parquet's seconds, per trial (`busymetrics`)
}
"""Metric -> (kind, meaning). The kind sets the scale: ratio 0..1, time in ms, bytes, or a plain number."""
THROUGHPUT = frozenset({"rps", "handshakes"})
"""Metrics a client-bound measurement bounds from below: the server served (or completed the handshakes
of) at least what the client got through. A capacity metric belongs here too; latency, failures, the
resumed share and the servers' figures (per core included) do not."""
TLS = frozenset({"handshakes", "resumed_share", "handshakes_per_core"})
"""Metrics of https runs only: a trial over plain http has none of them (no data)."""


def kind_of(metric: str) -> str:
    """A metric's kind (its scale): a load's (`METRICS`) or an event's (`eventmetrics.EVENT_METRICS`)."""
    return event_kind(metric) if is_event(metric) else METRICS[metric][0]


def check_metric(text: str, metric: str, q: str | None) -> float | None:
    """Refuse an unknown metric or a misplaced percentile; the percentile of p(N), else None."""
    if is_event(metric):  # `reload.failed`: what an action's events cost
        check_event_metric(text, metric, q)
        return None
    if metric not in METRICS:
        known = ", ".join(k if k != "p" else "p(N)" for k in METRICS)
        raise UsageError(f"check {text!r}: unknown metric {metric!r}; known: {known}")
    if metric == "p" and q is None:
        raise UsageError(f"check {text!r}: a percentile needs a number, e.g. p(99)")
    if q is not None and metric != "p":
        raise UsageError(f"check {text!r}: only p(N) takes a number in brackets")
    if q is not None and not 0 < float(q) <= 100:
        raise UsageError(f"check {text!r}: the percentile must be in (0, 100]")
    return float(q) if q else None


def threshold(text: str, metric: str, number: float, unit: str) -> float:
    """The check's value in the metric's own scale: ratio 0..1, milliseconds, bytes or a plain count."""
    kind = kind_of(metric)
    if kind == "ratio" and unit in ("%", ""):
        share = number / 100 if unit == "%" else number
        if not 0 <= share <= 1:
            raise UsageError(f"check {text!r}: {metric} is a share, 0..1 (or 0%..100%)")
        return share
    if kind == "time":
        if unit == "":
            raise UsageError(f"check {text!r}: give the time a unit (us, ms, s, m or h), e.g. {metric}<500ms")
        secs = duration_value(number, unit)
        if secs is not None:
            return ms(secs)
    if kind == "seconds":
        secs = duration_value(number, unit) if unit else None
        if secs is not None:
            return secs
        if unit == "":
            raise UsageError(f"check {text!r}: give the time a unit (ms, s), e.g. {metric}<2s")
    if kind == "bytes":
        size = size_value(number, unit)
        if size is not None:
            return float(size)
    if kind in ("", "level") and unit == "":
        return number
    if unit == "%" or duration_value(number, unit) is not None or size_value(number, unit) is not None:
        raise UsageError(f"check {text!r}: {unit!r} is not a unit of {metric}")
    raise UsageError(f"check {text!r}: unknown unit {unit!r}")


def comparable(a: str, b: str) -> bool:
    """Whether two metrics measure the same thing, so that one may be a multiple of the other:
    any two latencies (p(99) against p(50)), one figure of two actions' events (`reload.recovery` against
    `restart.recovery`), otherwise only a metric with itself."""
    if is_event(a) or is_event(b):
        ea, eb = split(a), split(b)
        return ea is not None and eb is not None and ea[1] == eb[1]
    return a == b or METRICS[a][0] == METRICS[b][0] == "time"


def show(metric: str, value: float | None) -> str:
    """A value in the metric's scale as people read it: 1.25%, 12.3ms, 16.0MiB, 1,722.5."""
    if value is None:
        return "n/a"
    kind = kind_of(metric)
    if kind == "seconds":
        return "not back" if math.isinf(value) else f"{value:.2f}s"
    if kind == "ratio":
        return f"{value * 100:.2f}%"
    if kind == "time":
        return f"{value:.1f}ms"
    if kind == "bytes":
        return f"{value / 1024**2:.1f}MiB"
    if kind == "level":
        return f"{value:,.0f}"
    return f"{value:,.1f}"


_COUNTS: dict[str, Callable[[LoadSummary], float]] = {
    "rps": lambda r: r["rps"], "ok": lambda r: r["ok"], "failed": lambda r: r["failed"],
    "unfinished": lambda r: r["unfinished"],
}
_SERVER: dict[str, Callable[[ServerMetrics], float | None]] = {
    "mem_peak": lambda m: m.get("mem_peak_bytes"), "cpu": lambda m: m.get("cpu_pct"),
    "pids_peak": lambda m: m.get("pids_peak"),
}


def measure(metric: str, q: float | None, trials: list[TrialRecord]) -> float | None:
    """A metric over trials (worst-case for latency: the histograms merged; inf when no request
    succeeded), or None when nothing was measured."""
    from ..store.reader import metrics_of, pooled_latency  # numpy and pandas: only when results are read

    ran = [t for t in trials if t.get("result")]
    if not ran or metric == "capacity" or is_event(metric) or is_busy(metric):  # a search's figure; an event's and
        return None  # the busy workers' are the stored seconds' (`eventmetrics`, `busymetrics`), not the trial record's
    res: list[LoadSummary] = [t["result"] for t in ran]
    if metric == "failed_rate":
        done = sum(r["started"] - r["unfinished"] for r in res)
        return sum(r["failed"] for r in res) / done if done else 0.0
    if metric in _COUNTS:
        count = _COUNTS[metric]
        return sum(count(r) for r in res) / len(res)
    if metric in TLS:
        return _tls_measure(metric, ran)
    if metric == "completion":
        return _completion(res)
    if metric in ("p", "max", "mean"):
        h = pooled_latency(ran)
        if h.count == 0:
            return math.inf
        v = h.percentile(q or 100) if metric == "p" else h.max_s if metric == "max" else h.mean
        return ms(v)
    sample = _SERVER[metric]
    vals = [float(x) for x in (sample(metrics_of(t)) for t in ran) if x is not None]
    if not vals:
        return None
    return sum(vals) / len(vals) if metric == "cpu" else max(vals)


def _tls_measure(metric: str, trials: list[TrialRecord]) -> float | None:
    """A TLS metric over trials (their TLS facts, `store.handshakes`): the mean handshakes per second (per
    core of the server CPU each used), or the resumed share of all their handshakes; None over plain http."""
    from ..store.handshakes import handshake_rate
    from ..store.reader import metrics_of, tls_of

    rates: list[float] = []
    full = resumed = 0
    for t in trials:
        tls, rate = tls_of(t), handshake_rate(t)
        if tls is None or rate is None:
            continue
        full, resumed = full + tls["full"], resumed + tls["resumed"]
        cpu = metrics_of(t).get("cpu_pct")
        if metric == "handshakes":
            rates.append(rate)
        elif cpu:
            rates.append(rate / (cpu / 100))
    if metric == "resumed_share":
        return resumed / (full + resumed) if full + resumed else None
    return sum(rates) / len(rates) if rates else None


def _completion(results: list[LoadSummary]) -> float | None:
    """Journeys completed over those that ended (started, not cut by the window's close), all trials pooled;
    None for a load of pages."""
    done = ended = 0
    for r in results:
        for j in r.get("journeys", {}).values():
            done, ended = done + j["completed"], ended + j["started"] - j["cut"]
    return done / ended if ended else None
