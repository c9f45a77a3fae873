"""The traffic flags of the commands that run stacks: `--mix` and its `--seed` (`loadcmp.traffic`).

Kept apart from `options.py`: each source of traffic (a mix, a replayed log, journeys) adds its flags
here, and `run` lays them over the experiment file's keys as it does every other flag (`TrafficFlags`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from .options import FlagGroup, flag

F = TypeVar("F", bound=Callable[..., Any])


def traffic_options(f: F) -> F:
    """--mix and --seed."""
    f = click.option("--seed", type=click.IntRange(0), metavar="N",
                     help="Seed of the mix's draw (default: one at random, stored in run.json so that a run "
                          "repeats its exact sequence).")(f)
    return click.option("--mix", metavar="PAGE=WEIGHT,...",
                        help="A weighted mix of pages in one load, e.g. '/=60,/?p=1042=30,/?s=hello=10' (each "
                             "item split on its last '='); every page is also counted on its own.")(f)


@dataclass(frozen=True)
class TrafficFlags(FlagGroup):
    """The traffic flags as given (None: not given)."""

    mix: str | None = flag("--mix")
    seed: int | None = flag("--seed")

    def given(self) -> dict[str, Any]:
        """By RunSpec field: the mix as its table (page -> weight), checked here (exit 2 before anything)."""
        from ..traffic.mix import parse_mix

        out = super().given()
        if "mix" in out:
            out["mix"] = dict(parse_mix(out["mix"]))
        return out
