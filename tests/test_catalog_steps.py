"""The rule that decides a step in a history (`catalog.steps`), over made-up series: every step the t-test decides
is found at its run whatever the lengths (3 to 50 runs a side), a series without one shows one at most at the
level's rate, and a move of one histogram bucket between runs that read the same bucket is no step."""

from __future__ import annotations

import random

import pytest

from loadcmp.catalog.history import MAX_PVALUE, _otava, max_pvalue
from loadcmp.catalog.steps import RESOLUTION, otava_proposals, steps, ttest


def _series(rng: random.Random, before: int, after: int, step: float, noise: float) -> list[float]:
    base = rng.uniform(50, 5000)
    return ([base * (1 + rng.gauss(0, noise)) for _ in range(before)]
            + [base * (1 + step) * (1 + rng.gauss(0, noise)) for _ in range(after)])


def _found(values: list[float]) -> list[int]:
    """The steps as `history` finds them: Otava's proposals, then the rule, both at the series' level."""
    level = max_pvalue(len(values))
    return [s.index for s in steps(values, level, otava_proposals(_otava(), values, 50, level))]


def test_a_step_the_t_test_decides_is_found_at_its_run_whatever_the_lengths():
    rng = random.Random(52)
    decided = moved = 0
    for _ in range(400):
        before, after = rng.randint(3, 50), rng.randint(3, 50)
        step = rng.uniform(0.05, 4.0) * rng.choice((1, -0.2))  # up to +400 %, down to -80 %
        values = _series(rng, before, after, step, rng.uniform(0.01, 0.05))
        level = max_pvalue(len(values))
        if ttest(values[:before], values[before:]) * (len(values) - 1) >= level:
            continue  # the test at the stated level cannot tell this one: nothing is promised
        decided += 1
        (found,) = _found(values)  # one step, no other
        if found != before:  # the noise may carry a run across: then the data put the step there, not the rule
            moved += 1
            assert abs(found - before) <= 2, (found, before)
            assert ttest(values[:found], values[found:]) < ttest(values[:before], values[before:])
    assert decided > 300 and moved <= 0.02 * decided, (decided, moved)


def test_the_shortest_series_is_found_too():
    rng = random.Random(3)
    for _ in range(50):
        values = _series(rng, 3, 3, rng.choice((0.3, -0.3, 1.0)), 0.01)
        assert _found(values) == [3], values


def test_series_without_a_step_show_one_at_most_at_the_level():
    rng = random.Random(7)
    series = [_series(rng, rng.randint(3, 25), rng.randint(3, 25), 0.0, rng.uniform(0.01, 0.05)) for _ in range(1500)]
    wrong = sum(bool(_found(v)) for v in series)
    # the level is 0.001: at most 1.5 expected in 1,500 series (the seed is fixed, so this is one draw kept)
    assert wrong <= 0.001 * len(series) + 1, wrong


def test_runs_that_read_the_same_value_need_more_than_one_unit_to_step():
    """A rate schedule's 500.0 req/s run after run, then 499.9 (one request less): no step; a failed rate of 0
    five times, then one failure in 100,000: no step; a real step still is one."""
    assert steps([500.0] * 5 + [499.9], MAX_PVALUE, resolution=RESOLUTION["rps"]) == []
    assert steps([0.0] * 6 + [0.001], MAX_PVALUE, resolution=RESOLUTION["failed_rate"]) == []
    assert [s.index for s in steps([500.0] * 5 + [400.0] * 3, MAX_PVALUE, resolution=RESOLUTION["rps"])] == [5]
    assert [s.index for s in steps([0.0] * 5 + [2.0] * 3, MAX_PVALUE, resolution=RESOLUTION["failed_rate"])] == [5]


@pytest.mark.parametrize("noise", [0.0, 0.002])
def test_one_bucket_up_over_runs_that_read_one_bucket_is_no_step_but_the_jump_after_it_is(noise: float):
    """The eight p50s of the issue: 41.4 three times, 41.9, then 169.7; only run 5 changed."""
    rng = random.Random(1)
    values = [v * (1 + rng.gauss(0, noise)) for v in (41.4, 41.4, 41.4, 41.9, 169.7, 169.7, 170.2, 169.7)]
    assert [s.index for s in steps(values, 0.001, resolution=0.01)] == [4]
    assert ttest([41.4] * 3, [41.9], 0.0) == 0.0  # without the floor: 'p = 0' on zero variance
    assert ttest([41.4] * 3, [41.9], 0.01) > 0.01


def test_the_eight_runs_of_the_issue_step_at_run_five():
    values = [380, 381, 381, 377, 90.5, 91.8, 92.0, 91.8]
    (s,) = steps(values, MAX_PVALUE, otava_proposals(_otava(), values, 50, max_pvalue(8)))
    assert (s.index, round(s.before, 2), round(s.after, 3)) == (4, 379.75, 91.525) and s.pvalue < 1e-9
