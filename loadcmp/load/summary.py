"""Turn a Result into the documents users and the store see (DESIGN.md §6 keys)."""

from __future__ import annotations

from typing import Any

from .recorder import FAIL_KINDS, KINDS, OK, Histogram, Result

PERCENTILES = (50, 75, 90, 95, 99, 99.9)


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1000.0, 3)


def latency_doc(h: Histogram) -> dict[str, float | None]:
    out: dict[str, float | None] = {f"p{str(q).replace('.', '_')}": _ms(h.percentile(q)) for q in PERCENTILES}
    out["max"] = _ms(h.max_s) if h.count else None
    out["min"] = _ms(h.min_s) if h.count else None
    out["mean"] = _ms(h.mean)
    return out


def timeline_rows(result: Result) -> list[dict[str, Any]]:
    """One row per measured second: counts by kind, bytes, latency percentiles."""
    rows = []
    for i, s in enumerate(result.seconds):
        h = s.lat_h
        row: dict[str, Any] = {"second": i, "started": s.started, "dropped": s.dropped}
        for k, name in enumerate(KINDS):
            row[name] = s.counts[k]
        row["failed"] = sum(s.counts) - s.counts[OK] + s.dropped
        row["completed"] = sum(s.counts)
        row["bytes"] = s.bytes
        row["inflight"] = s.inflight
        row["p50_ms"] = _ms(h.percentile(50))
        row["p90_ms"] = _ms(h.percentile(90))
        row["p99_ms"] = _ms(h.percentile(99))
        row["max_ms"] = _ms(h.max_s) if h.count else None
        row["client_cpu_pct"] = None if s.client_cpu is None else round(s.client_cpu, 1)
        row["loop_lag_ms"] = None if s.loop_lag_ms is None else round(s.loop_lag_ms, 2)
        rows.append(row)
    return rows


def result_doc(result: Result, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary of one measurement: counts, rates, latency, webbench counters."""
    counts = result.counts()
    failures = {k: counts[k] for k in FAIL_KINDS}
    if result.dropped:
        failures["dropped"] = result.dropped
    failed = sum(failures.values())
    completed = sum(counts.values())
    dur = result.duration_s or 1e-9
    nbytes = sum(s.bytes for s in result.seconds)
    lat = result.latency()
    svc = result.service()
    susceed = counts["ok"] + counts["http_4xx"] + counts["http_5xx"] + counts["protocol_error"]
    wb_failed = counts["connect_refused"] + counts["connect_timeout"] + counts["reset"] + counts["timeout"]
    doc: dict[str, Any] = {
        "ok": counts["ok"],
        "failed": failed,
        "failures": failures,
        "unfinished": result.unfinished,
        "started": result.started,
        "dropped": result.dropped,
        "completed": completed,
        "rps": round(counts["ok"] / dur, 3),
        "completions_per_s": round(completed / dur, 3),
        "failed_rate": round(failed / max(1, result.started - result.unfinished), 6),
        "duration_s": round(result.duration_s, 3),
        "bytes": nbytes,
        "bytes_per_s": round(nbytes / dur, 1),
        "latency_ms": latency_doc(lat),
        "service_ms": latency_doc(svc),
        "webbench": {
            "susceed": susceed,
            "failed": wb_failed,
            "pages_per_min": round(susceed / dur * 60, 1),
            "bytes_per_s": round(nbytes / dur, 1),
        },
        "interrupted": result.interrupted,
        "warnings": list(result.warnings),
    }
    if result.client_errors:
        doc["client_errors"] = dict(result.client_errors)
    if extra:
        doc.update(extra)
    return doc


def check_invariant(doc: dict[str, Any]) -> bool:
    """ok + failures + unfinished == started (dropped are among the failures)."""
    return bool(doc["ok"] + doc["failed"] + doc["unfinished"] == doc["started"])
