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


def test_a_ramp_says_how_many_users_it_started_by_a_time():
    from loadcmp.load.schedules import Ramp

    r = Ramp(5000, 50.0, 5.0)
    assert r.users_by(0.0) == 1 and r.users_by(10.0) == 1001 and r.users_by(50.0) == 5000
    assert [p.users_by(12.0) for p in r.split(2)] == [1201, 1201]  # of the whole schedule, whichever part


def test_a_ramp_cut_by_the_window_is_said_with_how_far_it_got():
    from loadcmp.load.schedules import Closed, Ramp
    from loadcmp.load.record.summary import note_ramp_cut

    doc = {"duration_s": 10.0, "warnings": []}
    note_ramp_cut(doc, Ramp(5000, 50.0, 5.0), 2.0)  # type: ignore[arg-type]
    assert doc["users_reached"] == 1201
    assert doc["warnings"] == ["the ramp started only 1,201 of 5,000 users before the window closed "
                               "(ramp-up 50 s > warm-up + time 12 s)"]
    whole = {"duration_s": 100.0, "warnings": []}
    note_ramp_cut(whole, Ramp(5000, 50.0, 5.0), 2.0)  # type: ignore[arg-type]
    note_ramp_cut(whole, Closed(50), 0.0)  # type: ignore[arg-type]
    assert "users_reached" not in whole and whole["warnings"] == []
