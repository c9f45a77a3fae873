"""The traffic flags of the commands that run stacks: `--mix` and its `--seed`, `--replay` and its speed,
methods and log format (`loadcmp.traffic`).

Kept apart from `options.py`: each source of traffic (a mix, a replayed log, journeys) adds its flags
here, and `run` lays them over the experiment file's keys as it does every other flag (`TrafficFlags`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from .options import FlagGroup, flag

F = TypeVar("F", bound=Callable[..., Any])


def _absolute(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    return None if value is None else str(Path(value).expanduser().resolve())


def traffic_options(f: F) -> F:
    """--mix and --seed; --replay, --replay-speed, --replay-methods, --log-format."""
    f = click.option("--log-format", type=click.Choice(["combined", "common", "json"]),
                     help="--replay: the log's format (default: told by its first lines).")(f)
    f = click.option("--replay-methods", metavar="GET,HEAD,...",
                     help="--replay: the methods sent (default GET,HEAD); the log's others are counted and left "
                          "out.")(f)
    f = click.option("--replay-speed", metavar="Nx|max",
                     help="--replay: 1x (default), 2x, 10x, any <n>x: the log's own timing divided by n, as an "
                          "open schedule (at most -c in flight); max: as fast as the closed loop of -c clients.")(f)
    f = click.option("--replay", type=click.Path(dir_okay=False), callback=_absolute, metavar="FILE",
                     help="Replay an access log (nginx's or Apache's combined or common, or JSON lines): its "
                          "requests in order at its own times, each answer checked against the log's status.")(f)
    f = click.option("--seed", type=click.IntRange(0), metavar="N",
                     help="Seed of the draw of --mix or --journey (a mix without one gets one at random, stored "
                          "in run.json so that a run repeats its exact sequence).")(f)
    return click.option("--mix", metavar="PAGE=WEIGHT,...",
                        help="A weighted mix of pages in one load, e.g. '/=60,/?p=1042=30,/?s=hello=10' (each "
                             "item split on its last '='); every page is also counted on its own.")(f)


@dataclass(frozen=True)
class TrafficFlags(FlagGroup):
    """The traffic flags as given (None: not given)."""

    mix: str | None = flag("--mix")
    seed: int | None = flag("--seed")
    replay: str | None = flag("--replay")
    replay_speed: str | None = flag("--replay-speed")
    replay_methods: str | None = flag("--replay-methods")
    log_format: str | None = flag("--log-format")

    def given(self) -> dict[str, Any]:
        """By RunSpec field: the mix as its table (page -> weight), checked here (exit 2 before anything)."""
        from ..traffic.mix import parse_mix
        from ..traffic.logreplay import parse_methods, parse_speed

        read: dict[str, Callable[[str], object]] = {  # the flags whose text is read here; the others are as given
            "mix": lambda text: dict(parse_mix(text)),
            "replay_speed": lambda text: (parse_speed(text), text)[1],  # checked, kept as given
            "replay_methods": parse_methods}
        return {k: read.get(k, _same)(v) for k, v in super().given().items()}


def _same(value: object) -> object:
    return value
