"""Histogram accuracy and merging, the recorder's window arithmetic (loadcmp.load.recorder, summary)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from loadcmp.load.outcomes import KINDS, OK, TIMEOUT
from loadcmp.load.recorder import PHASES, Histogram, Recorder, Result
from loadcmp.load.summary import check_invariant, result_doc


def test_histogram_percentiles_within_one_percent():
    rng = np.random.default_rng(1)
    values = rng.lognormal(mean=-5, sigma=1.2, size=200_000)
    h = Histogram.of(values)
    for q in (50, 90, 99, 99.9):
        exact = float(np.percentile(values, q, method="inverted_cdf"))
        assert abs(h.percentile(q) - exact) / exact < 0.01, q
    assert h.max_s == values.max() and h.count == len(values)


def test_histogram_merge_is_exact():
    rng = np.random.default_rng(2)
    a, b = rng.exponential(0.01, 5000), rng.exponential(0.05, 7000)
    merged = Histogram.of(a).merge(Histogram.of(b))
    whole = Histogram.of(np.concatenate([a, b]))
    assert merged.idx.tolist() == whole.idx.tolist() and merged.cnt.tolist() == whole.cnt.tolist()
    assert merged.total_s == pytest.approx(whole.total_s)
    assert Histogram.from_dict(json.loads(json.dumps(merged.to_dict()))).percentile(99) == merged.percentile(99)


def test_recorder_invariant_and_merge_arithmetic(simulate):
    parts = [simulate(1), simulate(2)]
    for p in parts:
        assert check_invariant(result_doc(p))
    merged = Result.merge(parts)
    doc = result_doc(merged)
    assert check_invariant(doc)
    assert doc["started"] == sum(p.started for p in parts)
    assert doc["unfinished"] == sum(p.unfinished for p in parts)
    for k in KINDS:
        assert merged.counts()[k] == sum(p.counts()[k] for p in parts)
    assert merged.latency().count == sum(p.latency().count for p in parts)


def test_recorder_ignores_outside_window_and_after_close():
    rec = Recorder(10.0, 2.0)
    assert not rec.start(9.0) and not rec.start(12.0)
    assert rec.start(10.5)
    rec.done(OK, 10.5, 10.5, 10.7, 10)
    assert rec.start(11.0)
    res = rec.close()
    rec.done(TIMEOUT, 11.0, 11.0, 11.5, 0)  # after close: ignored
    assert res.counts()["ok"] == 1 and res.unfinished == 1 and res.started == 2


def _rows(n: int, t0: float, seed: int = 7) -> np.ndarray:
    """Random ended requests around a 3 s window from t0: some after it, every kind, reused connections."""
    from loadcmp.load.recorder import RECORD_DTYPE

    rng = np.random.default_rng(seed)
    rows = np.zeros(n, dtype=RECORD_DTYPE)
    rows["kind"] = rng.integers(0, 8, n)
    rows["status"] = np.where(rows["kind"] <= 2, rng.choice([200, 204, 404, 503], n), 0)
    rows["t_intended"] = t0 + rng.uniform(0, 3.2, n)
    rows["t_sent"] = np.where(rng.random(n) < 0.5, rows["t_intended"], rows["t_intended"] + 0.001)
    rows["t_end"] = rows["t_sent"] + rng.uniform(0.0001, 0.05, n)
    rows["nbytes"] = rng.integers(0, 5000, n)
    rows["connect"] = np.where(rng.random(n) < 0.3, np.nan, rng.uniform(0, 0.001, n))
    for p in ("write", "wait", "read"):
        rows[p] = rng.uniform(0, 0.01, n)
    return rows


def test_done_many_is_done_for_each_row():
    """The batch path of compiled engines must count exactly what `done()` counts, row by row."""
    t0 = 100.0
    rows = _rows(5000, t0)
    one, many = Recorder(t0, 3.0), Recorder(t0, 3.0)
    for r in (one, many):
        for t in rows["t_intended"]:
            r.start(float(t))
    for row in rows:
        t_sent, t_end = float(row["t_sent"]), float(row["t_end"])
        c = float(row["connect"])
        marks = (t_sent - c, t_sent, t_sent + float(row["write"]), t_sent + float(row["write"]) + float(row["wait"]))
        one.done(int(row["kind"]), float(row["t_intended"]), t_sent, t_end, int(row["nbytes"]), int(row["status"]),
                 (marks[0] if c == c else float("nan"), *marks[1:], t_end))
    many.done_many(rows[:1234])
    many.done_many(rows[1234:])
    a, b = one.close(), many.close()
    assert a.counts() == b.counts() and a.unfinished == b.unfinished > 0
    assert [s.counts for s in a.seconds] == [s.counts for s in b.seconds]
    assert [s.bytes for s in a.seconds] == [s.bytes for s in b.seconds]
    assert a.latency().count == b.latency().count and a.latency().percentile(99) == b.latency().percentile(99)
    assert a.service().count == b.service().count
    assert a.status_codes == b.status_codes and sum(a.status_codes.values()) == a.latency().count
    for p in PHASES:
        assert a.phases[p].count == b.phases[p].count, p
    for p in ("connect", "write", "wait"):  # read ends at t_end in done(); the rows give it as they like
        assert a.phases[p].percentile(50) == pytest.approx(b.phases[p].percentile(50), rel=0.011), p
    assert a.phases["connect"].count < a.phases["read"].count == a.latency().count  # reused connections: no connect


def test_stdev_is_exact_and_merges():
    vals = [0.001, 0.002, 0.004, 0.010]
    h = Histogram.of(vals[:2]).merge(Histogram.of(vals[2:]))
    assert h.stdev == pytest.approx(float(np.std(vals)), rel=1e-9)
    assert Histogram.from_dict(h.to_dict()).stdev == pytest.approx(h.stdev)
    old = h.to_dict()
    del old["sq_s"]  # stored before the stdev was kept
    assert Histogram.from_dict(old).stdev is None and Histogram().stdev is None
