"""Parsing of the little values users type: durations, sizes, levels, CPU sets.

Each parser raises UsageError with a one-line message that names the bad value.
"""

from __future__ import annotations

import os
import re

from .errors import UsageError

_DUR = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.I)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)


def parse_duration(text: str | int | float, what: str = "duration", allow_zero: bool = True) -> float:
    """'30', '30s', '2m', '500ms', '1h' -> seconds (webbench takes plain seconds)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _DUR.match(str(text))
        if not m:
            raise UsageError(f"bad {what} {text!r}: use seconds like 30, 30s, 2m or 500ms")
        mult = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[(m.group(2) or "s").lower()]
        value = float(m.group(1)) * mult
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"bad {what} {text!r}: must be {'positive' if not allow_zero else 'zero or more'}")
    return value


def parse_size(text: str | int) -> int:
    """'3g', '512m', '256MiB', '1073741824' -> bytes (binary multiples, as Docker)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise UsageError(f"bad size {text!r}: use bytes or a number with k, m, g (e.g. 512m, 3g, 256MiB)")
    mult = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def format_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def parse_levels(text: str | int | list[int] | tuple[int, ...]) -> list[int]:
    """'-c 50,100,500' -> [50, 100, 500]; every level must be >= 1."""
    if isinstance(text, int) and not isinstance(text, bool):
        parts: list[str] = [str(text)]
    elif isinstance(text, (list, tuple)):
        parts = [str(x) for x in text]
    else:
        parts = [p for p in str(text).replace(" ", "").split(",") if p]
    if not parts:
        raise UsageError("no concurrency level given: use -c N or -c 50,100,500")
    out: list[int] = []
    for p in parts:
        if not re.fullmatch(r"\d+", p) or int(p) < 1:
            raise UsageError(f"bad concurrency {p!r}: clients must be a whole number >= 1")
        out.append(int(p))
    return out


def parse_cpus(text: str | None) -> str | None:
    """A cpuset like '1', '0-1', '0,1' checked against this machine's CPUs."""
    if text is None or str(text).strip() == "":
        return None
    text = str(text).strip()
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text):
        raise UsageError(f"bad CPU set {text!r}: use e.g. 1, 0-1 or 0,1")
    n = os.cpu_count() or 1
    for cpu in cpu_list(text):
        if cpu >= n:
            raise UsageError(f"bad CPU set {text!r}: this machine has CPUs 0-{n - 1}")
    return text


def cpu_list(cpuset: str) -> list[int]:
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
