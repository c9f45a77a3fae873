"""click parameter types over `loadcmp.units`: flags are read by the same code as files.

A bad value raises the project's own `UsageError`, which names the flag, so it
reaches the user as one line with exit 2 (see `cli.app`).
"""

from __future__ import annotations

from typing import Any

import click

from .. import units
from ..errors import UsageError


def _flag(param: click.Parameter | None, fallback: str) -> str:
    opts = getattr(param, "opts", None)
    return "/".join(opts) if opts else fallback


class Duration(click.ParamType):
    """`30`, `30s`, `2m`, `500ms` -> seconds."""

    name = "duration"

    def __init__(self, allow_zero: bool = True) -> None:
        self.allow_zero = allow_zero

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        return units.parse_duration(value, _flag(param, "duration"), allow_zero=self.allow_zero)


class Levels(click.ParamType):
    """`50` or `50,100,500` -> a tuple of concurrency levels."""

    name = "clients"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        return tuple(units.parse_levels(value))


class CpuSet(click.ParamType):
    """`1`, `0-1`, `0,1`; `here`: checked against this machine's CPUs. The servers' set is not: they
    may run on another machine's engine, whose CPUs are known once the command knows which engine."""

    name = "cpus"

    def __init__(self, here: bool = True) -> None:
        self.here = here

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str | None:
        return units.parse_cpus(value, here=self.here)


class Memory(click.ParamType):
    """A container memory cap: a size that Docker accepts (the machine it runs on is checked later,
    as for `SERVER_CPUS`)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        return units.parse_memory_cap(value, _flag(param, "size"), here=False)


class Rate(click.ParamType):
    """Requests per second: a finite number above zero (`1000`, `1000/s`)."""

    name = "rate"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        return units.parse_rate(value, _flag(param, "rate"))


class Count(click.ParamType):
    """A whole number of at least `minimum` (workers, trials, requests)."""

    name = "n"

    def __init__(self, minimum: int = 1) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        flag = _flag(param, "number")
        try:
            n = int(str(value).replace("_", ""))
        except ValueError:
            raise UsageError(f"bad {flag} {value!r}: give a whole number") from None
        return units.check_count(n, flag, self.minimum)


DURATION = Duration()
POSITIVE_DURATION = Duration(allow_zero=False)
LEVELS = Levels()
CPUS = CpuSet()
SERVER_CPUS = CpuSet(here=False)
MEMORY = Memory()
RATE = Rate()
COUNT = Count()
