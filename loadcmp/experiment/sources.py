"""The traffic a run sends besides one page: a weighted mix (`--mix`), a replayed access log (`--replay`)
and journeys (`--journey`). Each source's own problems, and what goes with what, said before anything
starts: one source per run, each over HTTP/1.1 (the h2 and h3 engines send one request, `load.target`'s).
"""

from __future__ import annotations

from typing import Protocol

from ..errors import Problems
from ..lab import apps as lab_apps
from ..traffic.mix import check_mix
from ..traffic.replay import ReplayPlan, warmup_problem


class RunSpec(Protocol):
    """What this module reads of a `spec.RunSpec` (which imports it)."""

    @property
    def app(self) -> str | None: ...

    @property
    def mix(self) -> dict[str, float]: ...

    @property
    def pages(self) -> tuple[str, ...]: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def replay(self) -> str | None: ...

    @property
    def warmup(self) -> float: ...

    @property
    def schedule(self) -> str: ...

    @property
    def journey(self) -> str | None: ...

    @property
    def protos(self) -> tuple[str, ...]: ...

    @property
    def variant_protos(self) -> dict[str, tuple[str, ...]]: ...

    def replay_plan(self) -> ReplayPlan: ...


def source_errors(spec: RunSpec) -> list[str]:
    """Every problem of the run's traffic sources: the mix's, the replay's, and the protocol they run over.
    (The journeys' own are `journeys.journey_errors`.)"""
    p = Problems()
    p.extend(mix_errors(spec))
    p.extend(replay_errors(spec))
    given = [name for name, on in (("--mix", bool(spec.mix)), ("--replay", spec.replay is not None),
                                   ("--journey", bool(spec.journey))) if on]
    if "--replay" in given and "--journey" in given:
        p.add("--replay and --journey: give one (a replay's log says what is sent; a journey's steps do)")
    protos = set(spec.protos) | {x for v in spec.variant_protos.values() for x in v}
    if given and protos - {"h1"}:
        other = sorted(protos - {"h1"})[0]
        p.add(f"{given[0]} runs over HTTP/1.1 (--proto h1): the {other} engine sends one page per load; "
              f"drop --proto {other} or {given[0]}")
    return p.messages


def mix_errors(spec: RunSpec) -> list[str]:
    """What is wrong with a mix (its weights, its pages beside --pages, a negative seed)."""
    if not spec.mix:
        return []
    p = Problems()
    p.attempt(lambda: check_mix(spec.mix, "--mix"))
    if spec.pages:
        p.add("--mix and --pages: give one (a mix's pages run in one load; --pages runs each on its own)")
    if spec.seed is not None and spec.seed < 0:
        p.add(f"--seed must be 0 or more, not {spec.seed}")
    name = spec.app
    app = p.attempt(lambda: lab_apps.get_app(name)) if name else None
    if app is not None and len({lab_apps.applies(app, page) is not None for page in spec.mix}) > 1:
        p.add(f"--mix: some pages are the app {app.name}'s and some are not; a mix's pages run on one server")
    return p.messages


def replay_errors(spec: RunSpec) -> list[str]:
    """What is wrong with a replay: its log (one line: the first bad line), and what it cannot go with."""
    if spec.replay is None:
        return []
    p = Problems()
    plan = p.attempt(spec.replay_plan)
    if plan is not None and (wrong := warmup_problem(plan, spec.warmup)) is not None:
        p.add(wrong)
    for given, name in ((spec.mix, "--mix"), (spec.pages, "--pages"), (spec.schedule != "closed", "--schedule")):
        if given:
            p.add(f"--replay and {name}: a replay's log says what is sent and when (--replay-speed)")
    return p.messages
