"""Closed loop, ramp and open-rate schedules (loadcmp.load.schedules)."""

from __future__ import annotations

import pytest

from loadcmp.errors import UsageError
from loadcmp.load.schedules import Closed, Ramp, Rate, make_schedule


def test_schedule_splits_keep_totals():
    assert sum(c.clients for c in Closed(15000).split(3)) == 15000
    parts = Ramp(5000, 50, 5).split(2)
    assert sum(p.users for p in parts) == 5000
    assert parts[1].start_offset(0) == pytest.approx(25.0)
    r = Rate(1000, 100).split(4)
    assert sum(p.rate for p in r) == pytest.approx(1000)
    assert sorted(p.due(0) for p in r) == pytest.approx([0, 0.001, 0.002, 0.003])
    assert Rate(10, 5).count_before(1.0) == 10 and Rate(10, 5).count_before(1.05) == 11


def test_schedule_refusals():
    with pytest.raises(UsageError):
        make_schedule("closed", 10, rate=5)
    with pytest.raises(UsageError):
        make_schedule("rate", 10)
    with pytest.raises(UsageError):
        make_schedule("ramp", 10, pace=0)
    assert Ramp(5000, 50, 5).peak_rate() == 1000
