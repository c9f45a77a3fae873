"""The one grammar for the little values users type, on flags, in experiment files and in smoke checks.

Every parser raises UsageError with a one-line message that names the bad value.
Unit letters are case-insensitive; a number may have a fraction (`1.5g`, `0.5s`)
and may be followed by spaces before its unit.

Durations (`parse_duration`, returns seconds)
    us, ms, s, m, h — microseconds, milliseconds, seconds, minutes, hours.
    A bare number is seconds (`30` = `30s`). Never negative.
    Smoke checks on latency use the same units (`p(99)<500ms`, `max<2s`, `p(50)<250us`).

Sizes (`parse_size`, returns bytes)
    B                bytes; a bare number is bytes too
    KB, MB, GB, TB   powers of 1000 (SI): `256MB` = 256 000 000
    KiB, MiB, GiB, TiB and Docker's bare k, m, g, t
                     powers of 1024: `256MiB` = `256m` = 268 435 456
    Docker itself reads `256MB` as 256 MiB; loadcmp does not, so that a size means
    the same on a flag (`--server-memory 256MB`) and in a check (`mem_peak<256MB`).

Rates (`parse_rate`, returns requests per second)
    a finite number > 0, optionally written `1000/s`; `nan`, `inf`, `0` are refused.

Bit rates (`parse_bitrate`, returns bits per second)
    bit, kbit, mbit, gbit — powers of 1000, as tc writes them: `10mbit` = 10 000 000 bits/s; > 0.

Percentages (`parse_percent`, returns a ratio): `20%` or `20` -> 0.2.

Levels (`parse_levels`): `50,100,500` — whole numbers >= 1, at least one.

CPU sets (`parse_cpus`): `1`, `0-3`, `0,2-3` — ascending ranges of this machine's
CPUs; `5-2` (descending) or an empty set is refused. None means "not pinned".

Cluster addresses (`parse_cluster`): `local:N` (N >= 1 Dask worker processes here)
or `tcp://HOST:PORT` of a running Dask scheduler.

Such a value's types: `TomlValue` as a stack, part or experiment file gives it, before it is checked;
`Setting` once a tunable has parsed it (on/off, a whole number or a string).
"""

from __future__ import annotations

import datetime
import math
import os
import re
from collections.abc import Sequence
from typing import TypeAlias, overload

from .errors import UsageError

_NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"
_DUR = re.compile(rf"^\s*{_NUMBER}\s*([a-z]*)\s*$", re.I)

DURATION_UNITS: dict[str, float] = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
"""Seconds per unit; the empty unit is seconds."""

SIZE_UNITS: dict[str, int] = {
    "b": 1,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
    "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4,
}
"""Bytes per unit; the empty unit is bytes."""

TomlValue: TypeAlias = "str | int | float | bool | datetime.date | datetime.time | list[TomlValue] | TomlTable"
"""A value as `tomllib` reads it from a stack, part or experiment file, before it is checked."""
TomlTable: TypeAlias = "dict[str, TomlValue]"
"""A table of such a file: the whole file, or one `[section]` of it."""
Setting: TypeAlias = "bool | int | str"
"""A tunable's value (`lab.model.Tunable`): on/off, a whole number or a string."""


def split_number(text: str) -> tuple[float, str] | None:
    """'500ms' -> (500.0, 'ms'), '3 GiB' -> (3.0, 'gib'); None if it is not a number and a word."""
    m = _DUR.match(text)
    if not m:
        return None
    return float(m.group(1)), m.group(2).lower()


def duration_value(number: float, unit: str) -> float | None:
    """number x unit in seconds, or None if `unit` is not a duration unit ('' is seconds)."""
    mult = DURATION_UNITS.get(unit.lower() or "s")
    return None if mult is None else number * mult


def size_value(number: float, unit: str) -> int | None:
    """number x unit in bytes, or None if `unit` is not a size unit ('' is bytes)."""
    mult = SIZE_UNITS.get(unit.lower() or "b")
    return None if mult is None else int(number * mult)


def parse_duration(text: str | int | float, what: str = "duration", allow_zero: bool = True) -> float:
    """'30', '30s', '2m', '500ms', '250us', '1h' -> seconds."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value: float | None = float(text)
        if not math.isfinite(text):
            value = None
    else:
        parts = split_number(str(text))
        value = None if parts is None else duration_value(*parts)
    if value is None:
        raise UsageError(f"bad {what} {text!r}: use a number with us, ms, s, m or h, like 30s, 2m or 500ms")
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"bad {what} {text!r}: must be {'positive' if not allow_zero else 'zero or more'}")
    return value


def parse_size(text: str | int, what: str = "size") -> int:
    """'3g', '512m', '256MiB', '256MB', '1073741824' -> bytes (see the module docstring for 1000 vs 1024)."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise UsageError(f"bad {what} {text!r}: must be zero or more")
        return text
    parts = split_number(str(text))
    value = None if parts is None else size_value(*parts)
    if value is None:
        raise UsageError(f"bad {what} {text!r}: use bytes or a number with KB/MB/GB (x1000) "
                         "or KiB/MiB/GiB, k/m/g (x1024), e.g. 512m, 3g, 256MiB")
    return value


def parse_memory_cap(text: str | int, what: str = "memory cap", here: bool = True) -> int:
    """A container memory cap: a size Docker accepts (>= 6 MiB); `here`: that this machine has
    (`check_memory` for another machine)."""
    n = parse_size(text, what)
    if n < 6 * 1024 * 1024:
        raise UsageError(f"bad {what} {text!r}: Docker needs at least 6 MiB")
    if here:
        check_memory(n, mem_total(), "this machine", what)
    return n


def check_memory(n: int, total: int | None, where: str, what: str = "--server-memory") -> None:
    """A memory cap no larger than the memory of the machine that runs the container (None: unknown)."""
    if total and n > total:
        raise UsageError(f"bad {what} {format_bytes(n)}: more than {where} has ({format_bytes(total)})")


def parse_rate(text: str | int | float, what: str = "rate") -> float:
    """'1000', '2.5e3', '1000/s' -> requests per second: finite and > 0."""
    if isinstance(text, bool):
        raise UsageError(f"bad {what} {text!r}: use requests per second, like 1000")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = str(text).strip()
        s = s[:-2].strip() if s.lower().endswith("/s") else s
        try:
            value = float(s)
        except ValueError:
            raise UsageError(f"bad {what} {text!r}: use requests per second, like 1000 or 1000/s") from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"bad {what} {text!r}: must be a finite number of requests per second above 0")
    return value


BITRATE_UNITS: dict[str, float] = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def parse_bitrate(text: str | int | float, what: str = "rate") -> float:
    """'10mbit', '384kbit', '1.5mbit' -> bits per second: finite and > 0."""
    parts = None if isinstance(text, (bool, int, float)) else split_number(str(text))
    mult = None if parts is None else BITRATE_UNITS.get(parts[1])
    if parts is None or mult is None:
        raise UsageError(f"bad {what} {text!r}: use a number with bit, kbit, mbit or gbit, like 10mbit or 384kbit")
    if parts[0] <= 0:
        raise UsageError(f"bad {what} {text!r}: must be above 0")
    return parts[0] * mult


def parse_percent(text: str, what: str = "percentage") -> float:
    """'20%' or '20' -> 0.2."""
    m = re.fullmatch(rf"\s*{_NUMBER}\s*%?\s*", text)
    if not m:
        raise UsageError(f"bad {what} {text!r}: use a percentage like 20%")
    return float(m.group(1)) / 100


MAX_COUNT = 10**15
"""The largest count a flag or a file may give (-n, --trials, --workers, ...): more than any load
sends in a year at a million requests a second, and far inside the C counters' 64 bits."""


def check_count(n: int, what: str, minimum: int = 1) -> int:
    """A whole number of at least `minimum` and at most MAX_COUNT, or a UsageError saying which bound."""
    if n < minimum:
        raise UsageError(f"bad {what} {n}: must be at least {minimum}")
    if n > MAX_COUNT:
        raise UsageError(f"bad {what} {n}: must be at most {MAX_COUNT:,}")
    return n


@overload
def ms(seconds: float, digits: int | None = None) -> float: ...
@overload
def ms(seconds: None, digits: int | None = None) -> None: ...
@overload
def ms(seconds: float | None, digits: int | None = None) -> float | None: ...


def ms(seconds: float | None, digits: int | None = None) -> float | None:
    """Seconds as milliseconds, the unit latencies are stored and shown in (None stays None)."""
    if seconds is None:
        return None
    return seconds * 1000.0 if digits is None else round(seconds * 1000.0, digits)


def format_bytes(n: float | None) -> str:
    """Bytes in binary units for tables and messages ('256.0 MiB')."""
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def parse_levels(text: str | int | Sequence[object]) -> list[int]:
    """'-c 50,100,500' -> [50, 100, 500]; every level must be >= 1, and given once."""
    if isinstance(text, int) and not isinstance(text, bool):
        parts: list[str] = [str(text)]
    elif isinstance(text, (list, tuple)):
        parts = [str(x) for x in text]
    else:  # '-c=50' reaches here as '=50': the '=' belongs to the flag, not the value
        parts = [p for p in str(text).replace(" ", "").removeprefix("=").split(",") if p]
    if not parts:
        raise UsageError("no concurrency level given: use -c N or -c 50,100,500")
    out: list[int] = []
    for p in parts:
        if not re.fullmatch(r"\d+", p) or int(p) < 1:
            raise UsageError(f"bad concurrency {p!r}: clients must be a whole number >= 1")
        if int(p) in out:  # two trials of one cell, both #1, would be merged as if repeated
            raise UsageError(f"concurrency level {int(p)} is given twice: give each level once (--trials N "
                             "repeats them)")
        out.append(int(p))
    return out


def parse_cpus(text: str | None, here: bool = True) -> str | None:
    """A cpuset like '1', '0-1', '0,1'; `here`: checked against this machine's CPUs
    (`check_cpus` for another machine's); None = not pinned."""
    if text is None:
        return None
    text = str(text).strip()
    if text == "":
        raise UsageError("empty CPU set: use e.g. 1, 0-1 or 0,1 (or leave the option out)")
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text):
        raise UsageError(f"bad CPU set {text!r}: use e.g. 1, 0-1 or 0,1")
    for part in text.split(","):
        a, _, b = part.partition("-")
        if b and int(b) < int(a):
            raise UsageError(f"bad CPU set {text!r}: range {part} runs backwards, write {b}-{a}")
    if here:
        check_cpus(text, os.cpu_count() or 1, "this machine")
    return text


def check_cpus(cpuset: str, n: int, where: str) -> None:
    """Every CPU of a (valid) set is one of the `n` CPUs of the machine that runs it."""
    for cpu in cpu_list(cpuset):
        if cpu >= n:
            raise UsageError(f"bad CPU set {cpuset!r}: {where} has CPUs 0-{n - 1}")


def cpu_list(cpuset: str) -> list[int]:
    """'0,2-3' -> [0, 2, 3] (the set must already be valid: see parse_cpus)."""
    out: list[int] = []
    for part in cpuset.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def mem_total() -> int | None:
    """This machine's memory in bytes (from /proc/meminfo), None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


_CLUSTER = re.compile(r"^(local:(?P<n>\d+)|tcp://[^\s:/]+:\d+)$")


def parse_cluster(text: str) -> tuple[str, int | None]:
    """A Dask cluster address, and the worker count of `local:N` (None for a scheduler's URL)."""
    t = text.strip()
    m = _CLUSTER.match(t)
    if m is None or (m.group("n") is not None and int(m.group("n")) < 1):
        raise UsageError(f"bad cluster address {text!r} (--cluster, LOADCMP_CLUSTER): give local:N "
                         "(N >= 1 worker processes here) or tcp://HOST:PORT of a running Dask scheduler")
    return t, int(m.group("n")) if m.group("n") is not None else None
