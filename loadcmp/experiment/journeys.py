"""A run with journeys (`--journey NAME|FILE|reader=80,author=20`, `journey` or `[journeys]` in a file): the
mix each level runs (a file may give the shares by level), the journeys read from the app's folder or the
user's files, and what is wrong with them, said before anything starts.

In a file:

    [journeys]                    # the mix at every level
    reader = 80
    author = 20
    [journeys.levels]             # the mix at some levels, over the one above
    200 = { reader = 60, author = 40 }
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError, Problems, UsageError
from ..lab import apps
from ..traffic.journeys import JourneyMix, load_mix, shipped_journeys

if TYPE_CHECKING:
    from ..traffic.sessions import JourneyPlan

JOURNEYS_FOLDER = "journeys"
"""Where an app keeps its journeys, beside its app.toml: `configs/apps/<app>/journeys/<name>.toml`."""


class RunSpec(Protocol):
    """What this module reads of a `spec.RunSpec` (which imports it)."""

    @property
    def app(self) -> str | None: ...

    @property
    def journey(self) -> str | None: ...

    @property
    def journey_levels(self) -> dict[str, str]: ...

    @property
    def levels(self) -> tuple[int, ...]: ...

    @property
    def schedule(self) -> str: ...

    @property
    def mix(self) -> dict[str, float]: ...


def shipped(spec: RunSpec) -> dict[str, Path]:
    """The run's app's journeys by name (none without an app, or with an app that has none)."""
    if not spec.app:
        return {}
    try:
        app = apps.get_app(spec.app)
    except UsageError:
        return {}  # the app's own problem is said by `page_errors`
    return shipped_journeys(app.home / JOURNEYS_FOLDER)


def mix_at(spec: RunSpec, level: int) -> str | None:
    """The mix one level runs, as given (None: the run has no journeys)."""
    return spec.journey_levels.get(str(level), spec.journey) if spec.journey else None


def plan_for(spec: RunSpec, level: int, seed: int = 0) -> JourneyPlan | None:
    """What the load of one level sends (`LoadSpec.traffic`); None without journeys."""
    from ..traffic.sessions import JourneyPlan  # the load's engine (numpy): only when a trial runs

    given = mix_at(spec, level)
    return JourneyPlan(load_mix(given, shipped(spec)), seed) if given else None


def mix_for(spec: RunSpec, level: int) -> JourneyMix | None:
    given = mix_at(spec, level)
    return load_mix(given, shipped(spec)) if given else None


def journey_errors(spec: RunSpec) -> list[str]:
    """Every problem of the run's journeys: a name neither the app ships nor a file, a file's own problems
    (file:line), a level that is no number, a schedule other than the closed loop."""
    p = Problems()
    if not spec.journey:
        if spec.journey_levels:
            p.add("[journeys.levels] gives the mix by level: give the mix at every level too ([journeys])")
        return p.messages
    known = shipped(spec)
    for given in dict.fromkeys([spec.journey, *spec.journey_levels.values()]):
        p.attempt(lambda given=given: load_mix(given, known))  # type: ignore[misc]
    for level in spec.journey_levels:  # a level the run leaves out (-c over a file) is no error
        if not level.isdigit() or int(level) < 1:
            p.add(f"[journeys.levels] {level!r}: a level is a number of clients, like 20")
    if spec.schedule != "closed":
        p.add(f"journeys run on the closed loop (-c): not with the {spec.schedule} schedule")
    if spec.mix:
        p.add("--journey and --mix: give one (a journey's steps are its pages)")
    return p.messages


def _weights(v: Any, where: str) -> str:
    if not isinstance(v, dict) or not v or not all(isinstance(w, int | float) and not isinstance(w, bool)
                                                   for w in v.values()):
        raise ConfigError(f"{where}: give each journey's weight, like reader = 80, author = 20")
    return ",".join(f"{k}={w:g}" for k, w in v.items())


def from_table(v: Any) -> tuple[str, dict[str, str]]:
    """`[journeys]` as RunSpec's `journey` (the mix at every level) and `journey_levels`."""
    if not isinstance(v, dict):
        raise ConfigError(f"expected a table of journeys and their weights, got {type(v).__name__} {v!r}")
    levels = v.get("levels", {})
    if not isinstance(levels, dict):
        raise ConfigError("levels: give a table of level = { journey = weight, ... }")
    mix = _weights({k: w for k, w in v.items() if k != "levels"}, "journeys")
    return mix, {str(level): _weights(w, f"levels.{level}") for level, w in levels.items()}
