"""The traffic a run sends besides one page: a weighted mix (`--mix`), a replayed access log (`--replay`)
and journeys (`--journey`). Each source's own problems, and what goes with what, said before anything
starts: one source per run, each over HTTP/1.1 (the h2 and h3 engines send one request, `load.target`'s).
"""

from __future__ import annotations

from dataclasses import Field
from typing import Any, ClassVar, Protocol

from ..errors import Problems, UsageError
from ..lab import apps as lab_apps
from ..traffic.mix import check_mix
from ..traffic.logreplay import ReplayPlan, parse_speed, primer_page, warmup_problem


class RunSpec(Protocol):
    """What this module reads of a `spec.RunSpec` (which imports it: its defaults are read off its fields)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def page(self) -> str: ...

    @property
    def requests(self) -> int | None: ...

    @property
    def rate(self) -> float | None: ...

    @property
    def ramp_up(self) -> float | None: ...

    @property
    def pace(self) -> float | None: ...

    @property
    def replay_speed(self) -> str: ...

    @property
    def replay_methods(self) -> tuple[str, ...]: ...

    @property
    def log_format(self) -> str | None: ...

    @property
    def app(self) -> str | None: ...

    @property
    def mix(self) -> dict[str, float]: ...

    @property
    def pages(self) -> tuple[str, ...]: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def replay(self) -> str | None: ...

    @property
    def warmup(self) -> float: ...

    @property
    def schedule(self) -> str: ...

    @property
    def journey(self) -> str | None: ...

    @property
    def protos(self) -> tuple[str, ...]: ...

    @property
    def variant_protos(self) -> dict[str, tuple[str, ...]]: ...

    def replay_plan(self) -> ReplayPlan: ...


def source_errors(spec: RunSpec) -> list[str]:
    """Every problem of the run's traffic sources: the mix's, the replay's, and the protocol they run over.
    (The journeys' own are `journeys.journey_errors`.)"""
    p = Problems()
    p.extend(mix_errors(spec))
    p.extend(replay_errors(spec))
    p.extend(idle_errors(spec))
    given = [name for name, on in (("--mix", bool(spec.mix)), ("--replay", spec.replay is not None),
                                   ("--journey", bool(spec.journey))) if on]
    if "--replay" in given and "--journey" in given:
        p.add("--replay and --journey: give one (a replay's log says what is sent; a journey's steps do)")
    protos = set(spec.protos) | {x for v in spec.variant_protos.values() for x in v}
    if given and protos - {"h1"}:
        other = sorted(protos - {"h1"})[0]
        p.add(f"{given[0]} runs over HTTP/1.1 (--proto h1): the {other} engine sends one request, the same each "
              f"time; drop --proto {other} or {given[0]}")
    return p.messages


def idle_errors(spec: RunSpec) -> list[str]:
    """Flags given with nothing to act on: a replay's without --replay, --seed without a draw. Said rather than
    ignored, since the user meant something by them (their values against RunSpec's own defaults)."""
    p = Problems()
    if spec.replay is None:
        for name, flag in (("replay_speed", "--replay-speed"), ("replay_methods", "--replay-methods"),
                           ("log_format", "--log-format")):
            value = getattr(spec, name)
            if (tuple(value) if isinstance(value, list) else value) != _default(spec, name):
                p.add(f"{flag} without --replay: it has nothing to act on (give --replay FILE, or drop {flag})")
    if spec.seed is not None and not spec.mix and not spec.journey:
        p.add("--seed without --mix or --journey: nothing is drawn with it (drop --seed)")
    return p.messages


def _default(spec: RunSpec, name: str) -> Any:
    """RunSpec's own default of a field (read off the dataclass: this module cannot import spec.py)."""
    f = spec.__dataclass_fields__[name]
    return f.default


def mix_errors(spec: RunSpec) -> list[str]:
    """What is wrong with a mix (its weights, its pages beside a file's `pages =`, a negative seed)."""
    if not spec.mix:
        return []
    p = Problems()
    p.attempt(lambda: check_mix(spec.mix, "--mix"))
    if spec.pages:
        p.add("--mix and pages = [...]: give one (a mix's pages run in one load; pages = runs each on its own)")
    if spec.seed is not None and spec.seed < 0:
        p.add(f"--seed must be 0 or more, not {spec.seed}")
    name = spec.app
    app = p.attempt(lambda: lab_apps.get_app(name)) if name else None
    if app is not None and len({lab_apps.applies(app, page) is not None for page in spec.mix}) > 1:
        p.add(f"--mix: some pages are the app {app.name}'s and some are not; a mix's pages run on one server")
    return p.messages


def replay_errors(spec: RunSpec) -> list[str]:
    """What is wrong with a replay: its log (one line: the first bad line), and what it cannot go with."""
    if spec.replay is None:
        return []
    p = Problems()
    plan = p.attempt(spec.replay_plan)
    if plan is not None and (wrong := warmup_problem(plan, spec.warmup)) is not None:
        p.add(wrong)
    try:
        paced = parse_speed(spec.replay_speed) is not None
    except UsageError:
        paced = False  # the plan said why
    for given, name in ((spec.mix, "--mix"), (spec.pages, "pages = [...]"), (spec.schedule != "closed", "--schedule"),
                        (spec.rate is not None, "--rate"), (spec.ramp_up is not None, "--ramp-up"),
                        (spec.pace is not None, "--pace"),
                        # the page the run is given is the log's most sent answered one, unless one was asked for
                        (plan is not None and spec.page != primer_page(plan), "--page")):
        if given:
            p.add(f"--replay and {name}: a replay's log says what is sent and when (--replay-speed)")
    if paced and spec.requests is not None:
        p.add("--replay and -n/--requests: at Nx the log's own times say how many are sent; -n goes with "
              "--replay-speed max")
    return p.messages
