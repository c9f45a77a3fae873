"""Histogram accuracy and merging, the recorder's window arithmetic (loadcmp.load.record.recorder, summary)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from loadcmp.load.record.outcomes import KINDS, OK, TIMEOUT
from loadcmp.load.record.recorder import Histogram, Recorder, Result
from loadcmp.load.record.summary import check_invariant, result_doc


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


def test_stdev_is_exact_and_merges():
    vals = [0.001, 0.002, 0.004, 0.010]
    h = Histogram.of(vals[:2]).merge(Histogram.of(vals[2:]))
    assert h.stdev == pytest.approx(float(np.std(vals)), rel=1e-9)
    assert Histogram.from_dict(h.to_dict()).stdev == pytest.approx(h.stdev)
    old = h.to_dict()
    del old["sq_s"]  # stored before the stdev was kept
    assert Histogram.from_dict(old).stdev is None and Histogram().stdev is None
