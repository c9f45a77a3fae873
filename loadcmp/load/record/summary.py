"""Turn a Result into the documents users and the store see (`records.LoadSummary`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ...facts import RETRY_1S, RETRY_3S, SlowConnects
from ...records import JourneyDoc, LatencyMs, LoadSummary, PageSummary, StreamFacts, TlsFacts, WebbenchCount
from ...units import ms
from . import saturation
from .outcomes import CONNECT_REFUSED, CONNECT_TIMEOUT, FAIL_KINDS, GOAWAY, KINDS, OK, RESET, STREAM_RESET, TIMEOUT
from .journeytally import JourneyTally
from .recorder import PHASES, Histogram, PageSecond, Result, Second, TlsTally
from .result import StreamTally
from ..schedules import Ramp, Schedule


def _round(v: float | None, digits: int) -> float | None:
    return None if v is None else round(v, digits)


def _ms(v: float | None) -> float | None:
    return ms(v, 3)


def latency_doc(h: Histogram) -> LatencyMs:
    """A histogram's percentiles in milliseconds (None when it is empty)."""
    return LatencyMs(
        p50=_ms(h.percentile(50)),
        p75=_ms(h.percentile(75)),
        p90=_ms(h.percentile(90)),
        p95=_ms(h.percentile(95)),
        p99=_ms(h.percentile(99)),
        p99_9=_ms(h.percentile(99.9)),
        max=_ms(h.max_s) if h.count else None,
        min=_ms(h.min_s) if h.count else None,
        mean=_ms(h.mean),
        stdev=_ms(h.stdev),
    )


Row = dict[str, float | str | None]
"""A row of timeline.parquet: a second (and a page), its counts, bytes and latency percentiles."""


def timeline_rows(result: Result) -> list[Row]:
    """One row per measured second: counts by kind, bytes, latency percentiles. A load of several pages adds a
    row per page and second, named in the `page` column (null in the load's own rows): their counts add up to
    their second's."""
    rows = [second_row(i, s) for i, s in enumerate(result.seconds)]
    if not result.pages:
        return rows
    for row in rows:
        row["page"] = None
    for j, name in enumerate(result.pages):
        rows += [page_row(i, name, p) for i, p in enumerate(result.page_seconds(j))]
    return rows


def page_row(i: int, name: str, p: PageSecond) -> Row:
    """Page `name`'s share of second `i`, with the columns of `second_row` that a page has."""
    h = p.lat_h
    row: Row = {"second": i, "page": name}
    for k, kind in enumerate(KINDS):
        row[kind] = p.counts[k]
    row["failed"] = sum(p.counts) - p.counts[OK]
    row["completed"] = sum(p.counts)
    row["bytes"] = p.bytes
    row["p50_ms"] = _ms(h.percentile(50))
    row["p90_ms"] = _ms(h.percentile(90))
    row["p99_ms"] = _ms(h.percentile(99))
    row["max_ms"] = _ms(h.max_s) if h.count else None
    return row


def pages_doc(result: Result) -> list[PageSummary]:
    """Each page of a load of several pages, counted on its own (`records.PageSummary`)."""
    dur = result.duration_s or 1e-9
    completed = sum(sum(s.counts) for s in result.seconds) or 1
    out: list[PageSummary] = []
    for j, name in enumerate(result.pages):
        secs = result.page_seconds(j)
        counts = [sum(p.counts[k] for p in secs) for k in range(len(KINDS))]
        lat = result.page_latency(j)
        codes = result.page_status[j] if j < len(result.page_status) else {}
        doc = PageSummary(page=name, ok=counts[OK], failed=sum(counts) - counts[OK],
                          failures={KINDS[k]: counts[k] for k in range(len(KINDS)) if k != OK and counts[k]},
                          completed=sum(counts), share=round(sum(counts) / completed, 6),
                          rps=round(counts[OK] / dur, 3), bytes=sum(p.bytes for p in secs),
                          status_codes={str(c): n for c, n in sorted(codes.items())}, latency_ms=latency_doc(lat))
        expected = sum(p.expected for p in secs)
        if expected:
            doc["expected"] = expected
            doc["as_expected"] = sum(p.as_expected for p in secs)
        out.append(doc)
    return out


def second_row(i: int, s: Second) -> Row:
    """Second `i` of the window as timeline.parquet keeps it; the live page takes the same row
    (`driver.Live.closed`) as each second closes."""
    h = s.lat_h
    row: Row = {"second": i, "started": s.started, "dropped": s.dropped}
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
    row["client_wait_pct"] = None if s.client_wait is None else round(s.client_wait, 1)
    row["loop_lag_ms"] = None if s.loop_lag_ms is None else round(s.loop_lag_ms, 2)
    return row


def page_load_summary(whole: LoadSummary, p: PageSummary) -> LoadSummary:
    """One page of a load as a load of its own (what a finding or a check reads of `nginx[/x]`): its counts,
    rates and latency over the load's window, the client's own figures the load's."""
    dur = whole["duration_s"] or 1e-9
    counts = {k: 0 for k in KINDS} | {"ok": p["ok"]} | p["failures"]
    doc = LoadSummary(ok=p["ok"], failed=p["failed"], failures=dict(p["failures"]), unfinished=0,
                      started=p["completed"], dropped=0, completed=p["completed"], rps=p["rps"],
                      completions_per_s=round(p["completed"] / dur, 3),
                      failed_rate=round(p["failed"] / max(1, p["completed"]), 6), duration_s=whole["duration_s"],
                      bytes=p["bytes"], bytes_per_s=round(p["bytes"] / dur, 1), latency_ms=p["latency_ms"],
                      service_ms=p["latency_ms"], webbench=_webbench(counts, p["completed"], p["bytes"], dur),
                      interrupted=whole["interrupted"], warnings=[], status_codes=dict(p["status_codes"]))
    for key in ("client_bound", "client_bound_reason", "stopped_by", "schedule", "engine", "workers"):
        if key in whole:
            doc[key] = whole[key]
    return doc


def note_ramp_cut(doc: LoadSummary, schedule: Schedule, warmup: float) -> None:
    """A ramp longer than warm-up + window never reaches its level: say how far it got,
    so that no figure or finding is read as that level's."""
    if isinstance(schedule, Ramp):
        total = schedule.total_users or schedule.users
        reached = schedule.users_by(warmup + doc["duration_s"])
        if reached < total:
            doc["users_reached"] = reached
            doc["warnings"].append(f"the ramp started only {reached:,} of {total:,} users before the window closed "
                                   f"(ramp-up {schedule.ramp_up:g} s > warm-up + time "
                                   f"{warmup + doc['duration_s']:g} s)")


def result_doc(result: Result, extra: Mapping[str, object] | None = None) -> LoadSummary:
    """The summary of one measurement: counts, rates, latency, webbench counters; then what the client
    says of itself, and how the requests answered.

    `extra` adds the caller's context (schedule, engine, workers, url ...).
    """
    counts = result.counts()
    doc = _counts_doc(result, counts)
    _add_client(doc, result)
    _add_answers(doc, result, counts)
    if result.client_errors:
        doc["client_errors"] = dict(result.client_errors)
    if result.pages:
        doc["pages"] = pages_doc(result)
    if result.journeys is not None:
        add_journeys(doc, result.journeys)
    if result.traced is not None:  # --trace: the requests traced, each a row of requests.parquet
        doc["traced"] = len(result.traced)
    if extra:
        cast(dict[str, Any], doc).update(extra)  # keys a LoadSummary declares as NotRequired, and the caller's
    return doc


def _counts_doc(result: Result, counts: dict[str, int]) -> LoadSummary:
    """What happened to the requests (`counts`: by outcome kind): counts, rates over the window, bytes,
    latency, and webbench's count of the same requests."""
    failures = {k: counts[k] for k in FAIL_KINDS}
    if result.dropped:
        failures["dropped"] = result.dropped
    failed = sum(failures.values())
    completed = sum(counts.values())
    dur = result.duration_s or 1e-9
    nbytes = sum(s.bytes for s in result.seconds)
    return LoadSummary(
        ok=counts["ok"],
        failed=failed,
        failures=failures,
        unfinished=result.unfinished,
        started=result.started,
        dropped=result.dropped,
        completed=completed,
        rps=round(counts["ok"] / dur, 3),
        completions_per_s=round(completed / dur, 3),
        failed_rate=round(failed / max(1, result.started - result.unfinished), 6),
        duration_s=round(result.duration_s, 3),
        bytes=nbytes,
        bytes_per_s=round(nbytes / dur, 1),
        latency_ms=latency_doc(result.latency()),
        service_ms=latency_doc(result.service()),
        webbench=_webbench(counts, completed, nbytes, dur),
        interrupted=result.interrupted,
        warnings=list(result.warnings),
    )


def _webbench(counts: dict[str, int], completed: int, nbytes: int, dur: float) -> WebbenchCount:
    """webbench counts any answer read to the end as a success, and only what never got an answer as failed."""
    no_answer = {KINDS[k] for k in (CONNECT_REFUSED, CONNECT_TIMEOUT, RESET, TIMEOUT, STREAM_RESET, GOAWAY)}
    wb_failed = sum(counts[k] for k in no_answer)
    susceed = completed - wb_failed
    return WebbenchCount(susceed=susceed, failed=wb_failed, pages_per_min=round(susceed / dur * 60, 1),
                         bytes_per_s=round(nbytes / dur, 1))


def _add_client(doc: LoadSummary, result: Result) -> None:
    """Whether the client was the bottleneck (`saturation`), its own figures, and how the load ran and ended."""
    uses = result.client_use
    reason = saturation.bound_reason(uses)
    if result.streams is not None and result.streams.pure_python:
        reason = saturation.PURE_H2 + ("; " + reason if reason else "")
    doc["client_bound"] = reason is not None
    doc["client_bound_reason"] = reason
    doc["client_busy_pct"] = _round(saturation.peak_busy(uses), 1)
    doc["client_wait_pct"] = _round(saturation.peak_wait(uses), 1)
    doc["client_lag_ms"] = _round(saturation.peak_lag(uses), 1)
    doc["client_cpu_us"] = _round(saturation.cost_us(uses, doc["completed"]), 1)
    doc["start_s"] = result.start_s
    doc["teardown_s"] = result.teardown_s
    doc["stopped_by"] = "interrupted" if result.interrupted else result.stopped_by
    doc["warmup_requests"] = result.warmup_requests
    if result.warmup_carried:
        doc["warmup_carried"] = result.warmup_carried
    if result.users_unanswered is not None:  # absent: the engine does not follow its users (h2, h3, a rate)
        doc["users_unanswered"] = result.users_unanswered


def _add_answers(doc: LoadSummary, result: Result, counts: dict[str, int]) -> None:
    """How the requests answered: status codes, each phase's latency, connections opened, bytes per response."""
    responses = counts["ok"] + counts["http_4xx"] + counts["http_5xx"]
    doc["status_codes"] = {str(code): n for code, n in sorted(result.status_codes.items())}
    doc["phases_ms"] = {name: latency_doc(result.phases.get(name, Histogram())) for name in PHASES}
    doc["connections_opened"] = result.phases["connect"].count if "connect" in result.phases else None
    if "connect" in result.phases:
        doc["slow_connects"] = slow_connects(result.phases["connect"], responses)
    doc["bytes_per_response"] = round(doc["bytes"] / responses, 1) if responses else None
    doc["tls"] = tls_doc(result.tls)
    if result.tls is not None:
        doc["tls_errors"] = dict(sorted(result.tls.errors.items(), key=lambda kv: -kv[1]))
    if result.streams is not None:
        doc["streams"] = streams_doc(result.streams)


def slow_connects(connect: Histogram, requests: int) -> SlowConnects:
    """The connects TCP's SYN retry delayed (`facts.SlowConnects`), read from the connect phase's histogram."""
    over_1s, over_3s = connect.at_least(RETRY_1S), connect.at_least(RETRY_3S)
    return SlowConnects(requests=requests, over_1s=over_1s, over_3s=over_3s,
                        share_1s=round(over_1s / requests, 6) if requests else 0.0,
                        share_3s=round(over_3s / requests, 6) if requests else 0.0)


def add_journeys(doc: LoadSummary, tally: JourneyTally) -> None:
    """--journey: each journey's completion rate and where it failed (its steps are the load's `pages`)."""
    doc["journeys"] = {name: JourneyDoc(
        started=j.started, completed=j.completed, failed=sum(j.failed_at.values()), cut=j.cut,
        completion_rate=_round(j.completion_rate(), 4),
        failed_at=dict(sorted(j.failed_at.items(), key=lambda kv: -kv[1]))) for name, j in tally.journeys.items()}
    doc["journey_completion"] = _round(tally.completion_rate(), 4)


def tls_doc(t: TlsTally | None) -> TlsFacts | None:
    """The handshakes' facts: the most common (version, cipher, ALPN), and the full and resumed counts."""
    if t is None:
        return None
    version, cipher, alpn = max(t.seen.items(), key=lambda kv: kv[1])[0] if t.seen else ("", "", "")
    return TlsFacts(version=version, cipher=cipher, alpn=alpn, full=t.full, resumed=t.resumed)


def streams_doc(t: StreamTally) -> StreamFacts:
    """The streams' facts as the store keeps them: counts, and streams per connection."""
    return StreamFacts(protocol=t.protocol, connections=t.connections, streams=t.streams,
                       streams_per_connection=round(t.streams / t.connections, 1) if t.connections else 0.0,
                       goaways=t.goaways, goaway_unprocessed=t.goaway_unprocessed, retried=t.retried,
                       resets=dict(sorted(t.resets.items(), key=lambda kv: -kv[1])),
                       max_concurrent=t.max_concurrent, max_per_connection=t.max_per_connection)


def check_invariant(doc: LoadSummary) -> bool:
    """ok + failures + unfinished == started (dropped are among the failures)."""
    return doc["ok"] + doc["failed"] + doc["unfinished"] == doc["started"]


def over_trials(docs: list[LoadSummary]) -> dict[str, Any]:
    """What a row of `run --json` (one server x level) says of its trials' requests, beside its means.

    `started`, `warmup_requests`, `users_unanswered` and `status_codes` are means per trial, as the row's `ok`,
    `failed` and `unfinished` are, so that ok + failed + unfinished == started holds for the row too; `totals`
    has the exact sums over the trials. `phases_ms` merges each phase over the trials, weighted by how
    many requests it measured in each (the responses; `connect`: the connections opened): mean, stdev,
    min and max are exact, the percentiles the weighted mean of the trials' (their histograms are not
    stored), so they are exact for one trial and close for several. A key no trial stored (results
    of an older loadcmp) is left out rather than shown empty."""
    n = len(docs)
    if not n:
        return {}
    rows = [cast(Mapping[str, Any], d) for d in docs]
    totals: dict[str, Any] = {k: sum(int(d.get(k) or 0) for d in rows)
                              for k in ("started", "ok", "failed", "unfinished", "warmup_requests", "users_unanswered",
                                        "traced")  # traced: --trace's rows in requests.parquet
                              if any(k in d for d in rows)}
    out: dict[str, Any] = {k: _mean_count(v, n) for k, v in totals.items()
                           if k in ("started", "warmup_requests", "users_unanswered", "traced")}
    if any("status_codes" in d for d in docs):
        codes: dict[str, int] = {}
        for d in docs:
            for code, c in (d.get("status_codes") or {}).items():
                codes[code] = codes.get(code, 0) + c
        out["status_codes"] = {code: _mean_count(c, n) for code, c in sorted(codes.items())}
        totals["status_codes"] = dict(sorted(codes.items()))
    if any("phases_ms" in d for d in docs):
        out["phases_ms"] = {name: merged_phase([(_phase_count(d, name), (d.get("phases_ms") or {}).get(name))
                                                for d in docs]) for name in PHASES}
    return {**out, "totals": {"trials": n, **totals}}


def _mean_count(total: int, n: int) -> float | int:
    mean = total / n
    return int(mean) if mean.is_integer() else round(mean, 1)


def _phase_count(doc: LoadSummary, phase: str) -> int:
    """How many requests a trial's phase measured: connections opened (`connect`), else its responses."""
    if phase in ("connect", "handshake"):
        return int(doc.get("connections_opened") or 0)
    codes = doc.get("status_codes")
    return sum(codes.values()) if codes else doc["ok"]


def merged_phase(parts: list[tuple[int, LatencyMs | None]]) -> LatencyMs:
    """One phase's figures over several trials, each weighted by the requests it measured (see `over_trials`)."""
    got = [(w, p) for w, p in parts if w > 0 and p is not None and p.get("mean") is not None]
    total = sum(w for w, _ in got)
    if not total:
        return latency_doc(Histogram())

    def weighted(key: str) -> float | None:
        vals = [(w, v) for w, p in got if (v := cast(Mapping[str, float | None], p).get(key)) is not None]
        return round(sum(w * v for w, v in vals) / sum(w for w, _ in vals), 3) if vals else None

    mean = sum(w * (p["mean"] or 0.0) for w, p in got) / total
    square = sum(w * ((p.get("stdev") or 0.0) ** 2 + (p["mean"] or 0.0) ** 2) for w, p in got) / total
    lows = [p["min"] for _, p in got if p["min"] is not None]
    highs = [p["max"] for _, p in got if p["max"] is not None]
    return LatencyMs(p50=weighted("p50"), p75=weighted("p75"), p90=weighted("p90"), p95=weighted("p95"),
                     p99=weighted("p99"), p99_9=weighted("p99_9"), max=max(highs) if highs else None,
                     min=min(lows) if lows else None, mean=round(mean, 3),
                     stdev=round(max(0.0, square - mean * mean) ** 0.5, 3))
