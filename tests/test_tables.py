"""Report table arithmetic (loadcmp.report.tables)."""

from __future__ import annotations

import math

import pytest


def test_ci95_of_estimates():
    from loadcmp.report.tables import Estimate

    e = Estimate.of([10.0, 12.0, 11.0])
    assert e.mean == pytest.approx(11.0)
    assert e.low == pytest.approx(11.0 - 4.303 * 1.0 / math.sqrt(3))
    assert Estimate.of([5.0]).low is None
