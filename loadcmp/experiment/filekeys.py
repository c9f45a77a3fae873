"""The keys an experiment file may have, their types, and each value converted as its RunSpec field takes it.

`spec.load_experiment` reads the file key by key through `convert`, so that a wrong value is said with
its line beside every other one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, line_of
from ..lab import apps as lab_apps
from ..lab.stacks import Catalog
from ..traffic.mix import check_mix
from ..units import MAX_COUNT, Setting, TomlTable, TomlValue, parse_duration, parse_levels, parse_memory_cap, parse_rate
from ..verdicts.findings import parse_findings
from . import protos, variants
from .eventspec import from_toml
from .journeys import from_table

KEYS: dict[str, str] = {
    "name": "str",
    "description": "str",
    "servers": "list[str]",
    "stacks": "list[str]",
    "clients": "levels",
    "time": "positive duration",
    "requests": "int",
    "warmup": "duration",
    "page": "str",
    "pages": "list[str]",
    "mix": "mix",
    "seed": "seed",
    "replay": "path",
    "replay_speed": "str",
    "replay_methods": "list[str]",
    "log_format": "str",
    "www": "path",
    "app": "str",
    "journey": "str",
    "journeys": "fields",
    "configs": "configs",
    "trials": "int",
    "schedule": "str",
    "keepalive": "bools",
    "ramp_up": "duration",
    "pace": "positive duration",
    "rate": "rate",
    "max_inflight": "int",
    "timeout": "positive duration",
    "engine": "str",
    "workers": "int",
    "cluster": "str",
    "docker_host": "str",
    "server_address": "str",
    "tlsverify": "bool",
    "tlscacert": "str",
    "tlscert": "str",
    "tlskey": "str",
    "server_cpus": "str",
    "client_cpus": "str",
    "net": "net",
    "think": "pacing",
    "send_rate": "pacing",
    "read_rate": "pacing",
    "server_memory": "memory cap",
    "reuse_server": "bool",
    "tls": "bool",
    "tls_resume": "share",
    "proto": "protos",
    "streams": "int",
    "trace": "bool",
    "trace_sample": "trace share",
    "set": "table",
    "variants": "variants",
    "findings": "findings",
    "events": "events",
    "smoke": "table",
    "capacity": "table",
    "tune": "table",
}
"""The keys an experiment file may have, and their types."""

FIELD_OF = {"clients": "levels", "time": "duration", "set": "settings", "stacks": "stack_dirs", "proto": "protos"}


def convert(key: str, kind: str, v: TomlValue, cat: Catalog) -> Any:
    """One value of the file as its RunSpec field takes it (`kind`: its type in KEYS); stacks and settings
    are those of `cat`. Its type is that of the field `kind` names, so it is known only at run time."""
    if kind not in CONVERT:
        raise ConfigError(f"unknown type {kind}")  # pragma: no cover
    return CONVERT[kind](key, v, cat)


def _wrong(what: str, v: object) -> ConfigError:
    """A value of the wrong type, said with what was expected and what was given."""
    return ConfigError(f"expected {what}, got {type(v).__name__} {v!r}")


def _number(v: object) -> bool:
    """A TOML number (a bool is not one, though Python counts it as an int)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str(key: str, v: TomlValue, cat: Catalog) -> str:
    if not isinstance(v, str):
        raise _wrong("a string", v)
    return v


def _whole(v: TomlValue) -> int | None:
    """`v` if it is a whole number (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _int(key: str, v: TomlValue, cat: Catalog) -> int:
    n = _whole(v)
    if n is None:
        raise _wrong("a whole number", v)
    if n < 1:
        raise ConfigError(f"must be >= 1, got {n}")
    if n > MAX_COUNT:
        raise ConfigError(f"must be at most {MAX_COUNT:,}, got {n}")
    return n


def _rate(key: str, v: TomlValue, cat: Catalog) -> float:
    if not isinstance(v, (str, int, float)) or isinstance(v, bool):
        raise _wrong("requests per second, like 1000", v)
    return parse_rate(v, key)


def _net(key: str, v: TomlValue, cat: Catalog) -> str:
    if not isinstance(v, str):
        raise _wrong("a profile or keys, like \"dsl\" or \"rtt=80ms,rate=10mbit\"", v)
    from ..net.conditions import parse_net

    parse_net(v)
    return v


def _pacing(key: str, v: TomlValue, cat: Catalog) -> str:
    """`think`, `send_rate`, `read_rate` (`load.pacing`), kept as written."""
    if not isinstance(v, str):
        raise _wrong("a duration like \"2s±500ms\" (think) or a rate like \"10kB/s\", \"2kbit\" or \"slowloris\"", v)
    from ..load.pacing import pacing_of

    pacing_of(*(v if key == k else None for k in ("think", "send_rate", "read_rate")))
    return v


def where_in(path: Path, text: str, key: str) -> str:
    """`file.toml:LINE` of a key (the file's name alone where it is not found)."""
    line = line_of(text, key)
    return f"{path.name}:{line}" if line else path.name


def variant_error(path: Path, text: str, message: str) -> str:
    """A `[variants.LABEL]: ...` message at the line of that table."""
    m = re.match(r"\[variants\.([^\]]+)\]", message)
    return f"{where_in(path, text, m.group(0)[1:-1]) if m else path.name}: {message}"


def _bool(key: str, v: TomlValue, cat: Catalog) -> bool:
    if not isinstance(v, bool):
        raise _wrong("true or false", v)
    return v


def _share(key: str, v: TomlValue, cat: Catalog) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _wrong("a number from 0 to 1", v)
    return float(v)  # its range is checked with the flag's (`spec.validate`), in the same words


def _trace_share(key: str, v: TomlValue, cat: Catalog) -> float:
    """trace_sample: a share above 0 and at most 1, in --trace-sample's words."""
    share = _share(key, v, cat)
    if not 0.0 < share <= 1.0:
        raise _wrong("a share of the requests, above 0 and at most 1 (0.1: one in ten)", v)
    return share


def _bools(key: str, v: TomlValue, cat: Catalog) -> tuple[bool, ...]:
    if isinstance(v, bool):
        return (v,)
    if not isinstance(v, list) or not v or not all(isinstance(x, bool) for x in v):
        raise _wrong("true, false or a list of them", v)
    return tuple(dict.fromkeys(x for x in v if isinstance(x, bool)))


def _protos(key: str, v: TomlValue, cat: Catalog) -> tuple[str, ...]:
    if not isinstance(v, (str, list)):
        raise _wrong("a protocol or a list of them, like [\"h1\", \"h2\"]", v)
    return protos.parse_protos(v)


def _names(key: str, v: TomlValue, cat: Catalog) -> tuple[str, ...]:
    if isinstance(v, str):
        return (v,)
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _wrong("a list of names", v)
    return tuple(str(x) for x in v)


def _levels(key: str, v: TomlValue, cat: Catalog) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        return tuple(parse_levels(v))
    if not isinstance(v, list):
        raise _wrong("a number or a list of numbers", v)
    return tuple(parse_levels(v))  # it says which item is wrong


def _duration(key: str, v: TomlValue, cat: Catalog, *, allow_zero: bool = True) -> float:
    if not isinstance(v, (str, int, float)) or isinstance(v, bool):
        raise _wrong("a duration like \"30s\"", v)
    return parse_duration(v, key, allow_zero=allow_zero)


def _positive_duration(key: str, v: TomlValue, cat: Catalog) -> float:
    return _duration(key, v, cat, allow_zero=False)


def _memory_cap(key: str, v: TomlValue, cat: Catalog) -> int:
    if not isinstance(v, (str, int)) or isinstance(v, bool):
        raise _wrong("a size like \"512m\"", v)
    return parse_memory_cap(v, key, here=False)  # the machine is known in `validate`


def _table(key: str, v: TomlValue, cat: Catalog) -> TomlTable | dict[str, Setting]:
    if not isinstance(v, dict):
        raise _wrong("a table", v)
    if key == "set":
        return cat.parse_overrides({k: val for k, val in v.items()}, lab_apps.tunables())
    return v


def _mix(key: str, v: TomlValue, cat: Catalog) -> dict[str, float]:
    if not isinstance(v, dict):
        raise _wrong("a table of page = weight, like \"/\" = 60", v)
    return dict(check_mix(v, "[mix]"))


def _seed(key: str, v: TomlValue, cat: Catalog) -> int:
    n = _whole(v)
    if n is None or n < 0:
        raise _wrong("a whole number of 0 or more", v)
    return n


def _variants(key: str, v: TomlValue, cat: Catalog) -> dict[str, variants.Variant]:
    return variants.parse_variant_tables(v, cat)


def _configs(key: str, v: TomlValue, cat: Catalog) -> list[TomlTable]:
    if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
        raise _wrong("[[configs]] tables", v)
    return [t for t in v if isinstance(t, dict)]


def _fields(key: str, v: TomlValue, cat: Catalog) -> dict[str, object]:
    """A table that sets several keys at once (`[journeys]`: `journey` and `journey_levels`)."""
    return from_table(v)


def _findings(key: str, v: TomlValue, cat: Catalog) -> tuple[dict[str, str], ...]:
    return tuple({"claim": f.claim, "check": f.check.text} for f in parse_findings(v))


def _events(key: str, v: TomlValue, cat: Catalog) -> tuple[str, ...]:
    """`[[events]]` (`at` or `every`, and `action`) or a list of `--event` strings, as `--event` values."""
    return from_toml(v)


CONVERT: dict[str, Callable[[str, TomlValue, Catalog], object]] = {
    "str": _str, "path": _str, "int": _int, "rate": _rate, "bool": _bool, "share": _share, "trace share": _trace_share,
    "bools": _bools,
    "list[str]": _names, "protos": _protos,
    "levels": _levels, "duration": _duration, "positive duration": _positive_duration, "memory cap": _memory_cap,
    "table": _table, "variants": _variants, "fields": _fields, "configs": _configs, "findings": _findings,
    "mix": _mix, "seed": _seed, "net": _net, "events": _events, "pacing": _pacing,
}
"""Each type of KEYS and the function that checks a value of it and converts it (key, value, catalog)."""
