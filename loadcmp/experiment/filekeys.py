"""The keys an experiment file may have, their types, and each value converted as its RunSpec field takes it.

`spec.load_experiment` reads the file key by key through `convert`, so that a wrong value is said with
its line beside every other one.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..lab import apps as lab_apps
from ..lab.stacks import Catalog
from ..units import MAX_COUNT, parse_duration, parse_levels, parse_memory_cap, parse_rate
from ..verdicts.findings import parse_findings
from . import variants

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
    "www": "str",
    "app": "str",
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
    "server_memory": "memory cap",
    "reuse_server": "bool",
    "set": "table",
    "variants": "variants",
    "findings": "findings",
    "smoke": "table",
    "capacity": "table",
    "tune": "table",
}
"""The keys an experiment file may have, and their types."""

FIELD_OF = {"clients": "levels", "time": "duration", "set": "settings", "stacks": "stack_dirs"}


def convert(key: str, kind: str, v: Any, cat: Catalog) -> Any:
    """One value of the file as its RunSpec field takes it (`kind`: its type in KEYS); stacks and settings
    are those of `cat`."""
    def want(cond: bool, what: str) -> None:
        if not cond:
            raise ConfigError(f"expected {what}, got {type(v).__name__} {v!r}")

    if kind == "str":
        want(isinstance(v, str), "a string")
        return v
    if kind == "int":
        want(isinstance(v, int) and not isinstance(v, bool), "a whole number")
        if v < 1:
            raise ConfigError(f"must be >= 1, got {v}")
        if v > MAX_COUNT:
            raise ConfigError(f"must be at most {MAX_COUNT:,}, got {v}")
        return v
    if kind == "rate":
        want(isinstance(v, (str, int, float)) and not isinstance(v, bool), "requests per second, like 1000")
        return parse_rate(v, key)
    if kind == "bool":
        want(isinstance(v, bool), "true or false")
        return v
    if kind == "bools":
        if isinstance(v, bool):
            return (v,)
        want(isinstance(v, list) and bool(v) and all(isinstance(x, bool) for x in v), "true, false or a list of them")
        return tuple(dict.fromkeys(v))
    if kind == "list[str]":
        if isinstance(v, str):
            return (v,)
        want(isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of names")
        return tuple(v)
    if kind == "levels":
        want(isinstance(v, (int, list)) and not isinstance(v, bool), "a number or a list of numbers")
        return tuple(parse_levels(v if isinstance(v, int) else [x for x in v]))
    if kind in ("duration", "positive duration"):
        want(isinstance(v, (str, int, float)) and not isinstance(v, bool), "a duration like \"30s\"")
        return parse_duration(v, key, allow_zero=kind == "duration")
    if kind == "memory cap":
        want(isinstance(v, (str, int)) and not isinstance(v, bool), "a size like \"512m\"")
        return parse_memory_cap(v, key, here=False)  # the machine is known in `validate`
    if kind == "table":
        want(isinstance(v, dict), "a table")
        if key == "set":
            return cat.parse_overrides({k: val for k, val in v.items()}, lab_apps.tunables())
        return v
    if kind == "variants":
        return variants.parse_variant_tables(v, cat)
    if kind == "configs":
        want(isinstance(v, list) and all(isinstance(t, dict) for t in v), "[[configs]] tables")
        return v
    if kind == "findings":
        return tuple({"claim": f.claim, "check": f.check.text} for f in parse_findings(v))
    raise ConfigError(f"unknown type {kind}")  # pragma: no cover
