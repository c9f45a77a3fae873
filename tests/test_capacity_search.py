"""The capacity search on fake probes: a server that holds the target up to a level, and no more."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from loadcmp.sweep.search import Plan, Probed, close, midpoint, search
from loadcmp.verdicts.slo import Confirmed


class Fake:
    """A set-up that meets the target up to `capacity`; `probe_says` may lie about a level (noise),
    `bound` levels are client-bound; `stop_after` probes, the next one is stopped (Ctrl-C)."""

    def __init__(self, capacity: int, probe_says: dict[int, bool] | None = None, bound: Callable[[int], bool]
                 = lambda lv: False, stop_after: int | None = None) -> None:
        self.capacity = capacity
        self.probe_says = probe_says or {}
        self.bound = bound
        self.stop_after = stop_after
        self.probes: list[int] = []
        self.confirms: list[int] = []

    def probe(self, level: int) -> Probed | None:
        if self.stop_after is not None and len(self.probes) >= self.stop_after:
            return None
        self.probes.append(level)
        met = self.probe_says.get(level, level <= self.capacity)
        return Probed(level, met, self.bound(level), "met" if met else "missed p(99)<1s")

    def confirm(self, level: int, wanted: int = 3) -> Confirmed | None:
        self.confirms.append(level)
        return Confirmed(level, "met" if level <= self.capacity else "missed", wanted,
                         client_bound="the client was busy 97%" if self.bound(level) else None)


class Undecided(Fake):
    """As Fake, but the confirmations at `unsure` levels stay unsure until they have `decides_at` trials
    (never, when None), then say what the level truly is."""

    def __init__(self, capacity: int, unsure: set[int], decides_at: int | None = None, **kw) -> None:
        super().__init__(capacity, **kw)
        self.unsure, self.decides_at = unsure, decides_at
        self.asked: list[tuple[int, int]] = []

    def confirm(self, level: int, wanted: int = 3) -> Confirmed | None:
        self.asked.append((level, wanted))
        if level in self.unsure and (self.decides_at is None or wanted < self.decides_at):
            self.confirms.append(level)
            return Confirmed(level, "unsure", wanted)
        return super().confirm(level, wanted)


def run(fake: Fake, start: int = 10, top: int = 20000, resolution: float = 0.10):
    return search(Plan(start, top, "the open-file limit", resolution), fake.probe, fake.confirm)


def test_steps_up_geometrically_then_bisects_to_the_resolution():
    fake = Fake(300)
    found = run(fake)
    assert fake.probes[:6] == [10, 20, 40, 80, 160, 320]  # x2 until the first miss
    assert [s.stage for s in found.path[:6]] == ["step"] * 6
    bisected = fake.probes[6:]
    assert bisected and all(160 < lv < 320 for lv in bisected)
    assert found.kind == "capacity"
    assert found.level is not None and found.missed is not None
    assert found.level <= 300 < found.missed <= found.level * 1.10
    assert fake.confirms == [found.level, found.missed]  # the level found and the one above
    assert found.path[-1].stage == "confirm" and not found.notes


@pytest.mark.parametrize("resolution", [0.02, 0.10, 0.25])
def test_the_edge_is_bracketed_within_the_resolution_wherever_it_is(resolution):
    rng = random.Random(7)
    for _ in range(60):
        cap, start = rng.randint(12, 30000), rng.choice([1, 5, 10, 11])
        found = run(Fake(cap), start=start, top=40000, resolution=resolution)
        assert found.kind == "capacity"
        assert found.level is not None and found.missed is not None
        assert found.level <= cap < found.missed
        assert close(found.level, found.missed, resolution)


def test_midpoints_are_geometric_and_strictly_inside():
    assert midpoint(100, 400) == 200
    assert midpoint(10, 12) == 11
    assert 10 < midpoint(10, 1000) < 1000


@pytest.mark.parametrize("lies, said", [
    # the edge's probes miss by noise: the level above the one found confirms met
    ({226: False, 200: False, 189: False, 174: False, 167: False, 163: False, 161: False},
     "(met, the probe missed): searching on above it"),
    # probes above the edge meet by noise: the level found confirms missed
    ({320: True, 640: False, 453: True, 538: True, 587: True, 613: False, 600: True},
     "(missed, the probe met): searching on below it"),
])
def test_a_confirmation_that_disagrees_with_its_probe_is_said_and_the_search_goes_on(lies, said):
    found = run(Fake(300, probe_says=lies))
    assert any("disagrees with its probe " + said in n for n in found.notes), found.notes
    assert found.kind == "capacity" and found.level is not None and found.missed is not None
    assert found.level <= 300 < found.missed


def test_a_target_never_met_is_below_the_starting_level_not_a_crash():
    fake = Fake(3)
    found = run(fake)
    assert fake.probes == [10] and fake.confirms == [10]
    assert (found.kind, found.level, found.missed) == ("below_start", 10, 10)


def test_a_first_miss_that_confirms_met_is_noise_and_the_search_steps_on():
    fake = Fake(50, probe_says={10: False})
    found = run(fake)
    assert found.notes[0].startswith("the confirmation at 10 disagrees")
    assert found.kind == "capacity" and found.level is not None and found.level <= 50 < (found.missed or 0)


def test_a_target_never_missed_stops_at_the_limit_and_says_why():
    fake = Fake(10**9)
    found = run(fake, top=1000)
    assert fake.probes == [10, 20, 40, 80, 160, 320, 640, 1000]  # the last step is cut to the limit
    assert found.kind == "not_reached" and found.level == 1000 and found.missed is None
    assert "met up to 1,000" in found.notes[0] and "the open-file limit" in found.notes[0]
    assert fake.confirms == []


def test_a_client_bound_edge_is_at_least_never_a_capacity():
    found = run(Fake(300, bound=lambda lv: lv > 250))
    assert found.kind == "at_least"
    assert found.level is not None and found.level <= 300
    assert any("client was the limit" in n for n in found.notes)


def test_a_client_bound_level_far_below_the_edge_does_not_make_it_at_least():
    found = run(Fake(300, bound=lambda lv: lv == 20))
    assert found.kind == "capacity"


def test_a_stopped_probe_ends_the_search_interrupted_with_the_probes_kept():
    seen = []
    fake = Fake(300, stop_after=3)
    found = search(Plan(10, 20000, "x"), fake.probe, fake.confirm, on_step=lambda f: seen.append(len(f.path)))
    assert found.kind == "interrupted"
    assert [s.level for s in found.path] == [10, 20, 40]
    assert seen == [1, 2, 3]  # the caller stores the path after every probe


def test_a_probe_that_measured_nothing_fails_the_search_with_its_reason():
    def probe(level: int) -> Probed:
        return Probed(level, None, False, "server did not start: port taken")

    found = search(Plan(10, 100, "x"), probe, lambda lv: None)
    assert found.kind == "failed" and "port taken" in found.notes[0]


def plan(start: int = 10, top: int = 20000, confirm: int = 2, most: int = 6) -> Plan:
    return Plan(start, top, "the open-file limit", 0.10, 2.0, confirm, most)


def test_an_unsure_confirmation_gets_one_more_trial_at_a_time_until_it_decides():
    fake = Undecided(300, unsure=set(range(270, 301)), decides_at=4)
    found = search(plan(), fake.probe, fake.confirm)
    assert found.kind == "capacity" and found.level is not None and found.level <= 300 < (found.missed or 0)
    at_edge = [n for lv, n in fake.asked if lv == found.level]
    assert at_edge == [2, 3, 4]  # --confirm 2, then one more at a time until it decided
    steps = [s.text for s in found.path if s.stage == "confirm" and s.level == found.level]
    assert steps[0].endswith("; one more trial") and not steps[-1].endswith("one more trial")
    assert not found.notes and found.undecided == []


def test_a_confirmation_still_unsure_at_the_bound_ends_unsure_between_the_levels_around_it():
    fake = Undecided(300, unsure=set(range(270, 301)))  # the level found never decides
    found = search(plan(most=5), fake.probe, fake.confirm)
    assert found.kind == "unsure"
    (edge,) = found.undecided
    assert 270 <= edge <= 300
    assert [n for lv, n in fake.asked if lv == edge] == [2, 3, 4, 5]  # up to --max-confirm, no further
    met_below = max(s.level for s in found.path if s.met and s.level < edge)
    missed_above = min(s.level for s in found.path if s.met is False and s.level > edge)
    assert (found.level, found.missed) == (met_below, missed_above)
    assert found.level is not None and found.missed is not None and found.level < edge < found.missed
    assert f"between {found.level:,} and {found.missed:,}" in found.notes[-1]
    assert "stayed unsure" in found.notes[-1] and "--max-confirm 5" in found.notes[-1]


def test_the_level_above_unsure_leaves_the_edge_open_above_the_level_found():
    # the level found confirms met; the first missed above it never decides, and nothing above it was missed
    fake = Undecided(300, unsure=set(range(301, 400)))
    found = search(plan(start=10, top=640), fake.probe, fake.confirm)
    assert found.kind == "unsure" and found.missed is None
    assert found.level is not None and found.level <= 300
    assert f"above {found.level:,}" in found.notes[-1]


def test_an_unsure_first_level_is_unsure_around_it_not_below_the_start():
    fake = Undecided(3, unsure={10})
    found = search(plan(most=3), fake.probe, fake.confirm)
    assert (found.kind, found.level, found.missed, found.undecided) == ("unsure", None, None, [10])
    assert "around 10" in found.notes[-1]
    assert [n for _, n in fake.asked] == [2, 3]
