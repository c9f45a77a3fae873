"""A run with journeys (`--journey NAME|FILE|reader=80,author=20`, `journey` or `[journeys]` in a file): the
file's table as the flag's mix and the mix by level, and the journeys an app ships. The journeys as the run's
traffic (the mix each level runs, what is wrong with them) are `traffic.source.JourneyTraffic` and
`traffic.fits`'.

In a file:

    [journeys]                    # the mix at every level
    reader = 80
    author = 20
    [journeys.levels]             # the mix at some levels, over the one above
    200 = { reader = 60, author = 40 }
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, UsageError
from ..lab import apps
from ..traffic.journeys import shipped_journeys

JOURNEYS_FOLDER = "journeys"
"""Where an app keeps its journeys, beside its app.toml: `configs/apps/<app>/journeys/<name>.toml`."""


def shipped(app: str | None) -> dict[str, Path]:
    """An app's journeys by name (none without an app, or with an app that has none)."""
    if not app:
        return {}
    try:
        found = apps.get_app(app)
    except UsageError:
        return {}  # the app's own problem is said by `page_errors`
    return shipped_journeys(found.home / JOURNEYS_FOLDER)


def _weights(v: object, where: str) -> str:
    if not isinstance(v, dict) or not v or not all(isinstance(w, int | float) and not isinstance(w, bool)
                                                   for w in v.values()):
        raise ConfigError(f"{where}: give each journey's weight, like reader = 80, author = 20")
    return ",".join(f"{k}={w:g}" for k, w in v.items())


def from_table(v: object) -> dict[str, object]:
    """`[journeys]` as the keys `journey` (the mix at every level) and `journey_levels` (`traffic.fits.traffic_of`
    reads them)."""
    if not isinstance(v, dict):
        raise ConfigError(f"expected a table of journeys and their weights, got {type(v).__name__} {v!r}")
    levels = v.get("levels", {})
    if not isinstance(levels, dict):
        raise ConfigError("levels: give a table of level = { journey = weight, ... }")
    mix = _weights({k: w for k, w in v.items() if k != "levels"}, "journeys")
    return {"journey": mix, "journey_levels": {str(level): _weights(w, f"levels.{level}")
                                               for level, w in levels.items()}}
