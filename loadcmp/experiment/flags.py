"""A command's flags laid over an experiment file: the RunSpec they make together.

The command line parses each flag into a value and says which were given (the flag groups of
`loadcmp/cli/options.py`, by RunSpec field name); this module makes RunSpec fields of them
(`--server` and `--set` items parsed), lays them over the file's fields by one rule per field, makes the
traffic's keys one value (`traffic.fits.traffic_of`),
and validates the whole once. `capacity` and `tune` get the spec of one probe and the search's
settings (flags over the file's `[capacity]` table) the same way, so no command merges by hand.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Problems, UsageError
from ..traffic.fits import traffic_of
from ..traffic.source import DEFAULTS
from .apps import with_default_pages
from .spec import RunSpec, load_experiment, validate
from .variants import parse_server_items, parse_sets, trace_config_errors

if TYPE_CHECKING:
    from .capacity import CapacitySpec


def server_fields(servers: tuple[str, ...], sets: tuple[str, ...], stack_dirs: tuple[str, ...] = ()) -> dict[str, Any]:
    """`--server [LABEL=]STACK` and `--set [LABEL:]KEY=VALUE` as RunSpec fields (only those given), the stacks
    and their settings those of `--stacks`' folders too."""
    from ..lab.stacks import catalog

    out: dict[str, Any] = {}
    if servers:
        labels, out["stacks"] = parse_server_items(servers, catalog(stack_dirs))
        out["servers"] = tuple(labels)
    if sets:
        out["settings"], out["variant_settings"] = parse_sets(sets, catalog(stack_dirs))
    return out


def lay_over(fields: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The file's fields with the flags' over them: tables merge key by key, folders add up, a flag's
    `--config` for a label's role replaces the file's for that role, any other flag replaces the value."""
    out = dict(fields)
    for k, v in given.items():
        if k in ("settings", "stacks"):
            out[k] = {**out.get(k, {}), **v}
        elif k == "stack_dirs":
            out[k] = tuple(dict.fromkeys([*out.get(k, ()), *v]))
        elif k == "configs":
            mine = {(d["server"], d["role"]) for d in v}
            out[k] = (*(d for d in out.get(k, ()) if (d["server"], d["role"]) not in mine), *v)
        elif k == "variant_settings":
            merged = {label: dict(values) for label, values in out.get(k, {}).items()}
            for label, values in v.items():
                merged[label] = {**merged.get(label, {}), **values}
            out[k] = merged
        else:
            out[k] = v
    return out


def spec_of(fields: dict[str, Any], given: dict[str, Any]) -> RunSpec:
    """The flags over a file's (already read) fields, validated; no -t with -n: only the safety cap limits it."""
    merged = lay_over(fields, given)
    traffic, said = traffic_of(merged)  # the flat keys of a run's traffic made one value
    rest = {k: v for k, v in merged.items() if k not in DEFAULTS}
    spec = RunSpec(**with_default_pages(rest, traffic), traffic=traffic)
    said = [*said, *trace_config_errors(spec)]  # --trace with a user's config that writes no trace log
    return validate(spec if "duration" in merged else spec.without_time_limit(), said)


def build_spec(experiment: str | None, given: dict[str, Any]) -> RunSpec:
    """Experiment file values, then the flags the user gave, validated together (`run`, `smoke`, `seeds`)."""
    fields, _ = load_experiment(experiment) if experiment else ({}, {})
    return spec_of(fields, given)


PROBE_FIELDS: dict[str, Any] = {"levels": (1,), "duration": 5.0, "requests": None, "trials": 1}
"""What a search sets per probe itself (the level, the window); a stand-in here, so the spec validates."""


def _probe_time(flags: dict[str, Any], extra: dict[str, Any]) -> float:
    """A probe's window (--probe-time, else the file's [capacity] probe_time, else the default): where `--event`'s
    times must fall, as each probe and confirmation fires them. One that cannot be read is said by the search."""
    from .capacity import PROBE_S, convert

    if isinstance(flags.get("probe_time"), float):
        return float(flags["probe_time"])
    try:
        return float(convert("probe_time", (extra.get("capacity") or {}).get("probe_time", PROBE_S), "probe_time"))
    except UsageError:
        return PROBE_S


def search_spec(experiment: str | None, given: dict[str, Any], search: dict[str, Any]
                ) -> tuple[RunSpec, CapacitySpec, dict[str, Any]]:
    """A search's load as a run of one probe (the level, and by rate the rate, set per probe), its settings
    from the flags over the file's [capacity] table, and the file's other tables (`capacity`, `tune`)."""
    from .capacity import BAD, capacity_spec, convert

    p = Problems()  # every problem of the flags, the file and the search at once, as `validate` says them
    own = {k: p.attempt(partial(convert, k, v, f"--{k.replace('_', '-')}"))
           if v is not None and k in ("slo", "resolution") else v for k, v in search.items()}
    own = {k: BAD if v is None and search.get(k) is not None else v for k, v in own.items()}
    fields, extra = load_experiment(experiment) if experiment else ({}, {})
    probe = {**given, **PROBE_FIELDS, "duration": _probe_time(own, extra)}  # --event's times: inside a probe
    if probe.get("schedule", fields.get("schedule")) == "rate":
        probe["rate"] = 1.0
    base = p.attempt(lambda: spec_of(fields, probe))
    cap = None if base is None else p.attempt(lambda: capacity_spec(
        base, extra.get("capacity", {}), own,
        f"{Path(experiment).name}: [capacity]" if experiment else "[capacity]"))
    p.raise_if_any(UsageError)
    assert base is not None and cap is not None
    return base, cap, extra
