"""A run's events (`--event`, `[[events]]`, `[variants.LABEL] events`): which label fires which, and their problems.

An event given to one label is written `LABEL: AT ACTION` (`--event 'tuned: every 5s reload'`), as `--set
LABEL:KEY=VALUE` is; a variant's `events` are kept in the run's `events` that way. A label fires the run's
unlabelled events and its own beside them, so a file can run the same stack calm and under reloads:

    [variants.calm]
    stack = "nginx"

    [variants.reloaded]
    stack = "nginx"
    events = ["every 5s reload"]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from ..errors import ConfigError
from ..events.actions import spec_problems
from ..events.plan import parse
from ..lab import apps as lab_apps

if TYPE_CHECKING:
    from ..lab.model import Stack
    from ..lab.stacks import Catalog

_LABELLED = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_.-]{0,39})\s*:\s*(.*)$")


def split_label(text: str) -> tuple[str | None, str]:
    """`tuned: every 5s reload` -> ("tuned", "every 5s reload"); an unlabelled event -> (None, itself)."""
    m = _LABELLED.match(text)
    return (m[1], m[2].strip()) if m else (None, text)


def events_for(events: Iterable[str], label: str) -> tuple[str, ...]:
    """The events one label fires: the run's unlabelled ones and its own (their label left off)."""
    return tuple(rest for lb, rest in map(split_label, events) if lb in (None, label))


def kept(events: Iterable[str], labels: Sequence[str]) -> tuple[str, ...]:
    """The run's events without those of labels it does not run (a file's variant left out by --server)."""
    return tuple(e for e in events if split_label(e)[0] in (None, *labels))


def from_toml(v: object, where: str = "events") -> tuple[str, ...]:
    """`[[events]]` tables (`at` or `every`, and `action`) or a list of `--event` strings, as `--event` values."""
    out = []
    for t in v if isinstance(v, list) else [v]:
        if isinstance(t, dict) and set(t) in ({"at", "action"}, {"every", "action"}):
            t = f"{'every ' + str(t['every']) if 'every' in t else t['at']} {t['action']}"
        if not isinstance(t, str):
            raise ConfigError(f"{where}: expected [[events]] tables of at (or every) and action, like at = \"5s\", "
                              f"action = \"reload\" (or 'AT ACTION' strings), got {t!r}")
        label, rest = split_label(t)
        parse(rest)
        out.append(t)
    return tuple(out)


def of_variants(variants: Iterable[Variant]) -> tuple[str, ...]:
    """Each variant's own events, labelled."""
    return tuple(f"{v.label}: {e}" for v in variants for e in v.events)


class Variant(Protocol):
    """What this module reads of a server label (`variants.Variant`)."""

    @property
    def label(self) -> str: ...
    @property
    def stack(self) -> str: ...
    @property
    def events(self) -> tuple[str, ...]: ...


class Run(Protocol):
    """What `problems` reads of a run's spec (`spec.RunSpec`)."""

    @property
    def events(self) -> tuple[str, ...]: ...
    @property
    def stacks(self) -> dict[str, str]: ...  # every label declared (a file's variant left out by --server: no error)
    @property
    def duration(self) -> float: ...
    @property
    def all_pages(self) -> tuple[str, ...]: ...


def problems(spec: Run, servers: Sequence[Variant], cat: Catalog, app: lab_apps.App | None) -> list[str]:
    """Every problem of a run's events at once: a label no server has (nor a variant declared in its file),
    then each label's events against its stack as it runs each page (an app's roles with it)."""
    labels, events, pages, window = [v.label for v in servers], spec.events, spec.all_pages, spec.duration
    out = [f"--event {e!r}: no server is labelled {lb!r} (chosen: {', '.join(labels)})"
           for e in events if (lb := split_label(e)[0]) is not None and lb not in labels and lb not in spec.stacks]
    for v in servers:
        runs: dict[tuple[str, ...], tuple[str, Stack]] = {}  # each stack the label runs its pages on, once
        for page in pages:
            st = lab_apps.on_stack(a, cat.get(v.stack)) if (a := lab_apps.applies(app, page)) else cat.get(v.stack)
            runs.setdefault((st.name, *(r.name for r in st.roles)), (page, st))
        on: Mapping[str, Stack] = {f"{v.label} {page}" if len(runs) > 1 else v.label: st for page, st in runs.values()}
        out += [x for x in spec_problems(events_for(events, v.label), on, window) if x not in out]
    return out
