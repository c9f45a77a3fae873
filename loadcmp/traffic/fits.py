"""What goes with what for a run's traffic, decided here once: which source the flags and file keys give
(`traffic_of`: one per run; a replay's flags only with a replay; --seed only with a draw), and what the rest
of the run may be beside it (`problems`): the protocol (the protocol table's `Protocol.sources` and its
wording, `source_error`), the schedule, -n, the run's page and pages, the warm-up, an app's pages.

Every problem is a line in a list, said with the spec's others before anything starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import protocols
from ..errors import Problems, UsageError
from .source import DEFAULTS, JourneyTraffic, MixTraffic, OnePage, ReplayTraffic, Traffic

IDLE = (("replay_speed", "--replay-speed"), ("replay_methods", "--replay-methods"), ("log_format", "--log-format"))
"""A replay's own keys and their flags: with nothing to act on without --replay."""
CLASH = (("replay", "mix", "--replay and --mix: a replay's log says what is sent and when (--replay-speed)"),
         ("replay", "journeys", "--replay and --journey: give one (a replay's log says what is sent; a journey's "
                                "steps do)"),
         ("journeys", "mix", "--journey and --mix: give one (a journey's steps are its pages)"))
"""Two sources given at once, and the words that refuse them."""


@dataclass(frozen=True)
class Beside:
    """What the rest of a run chose, which its traffic must fit (made by `experiment.spec.RunSpec.fit`)."""

    protos: tuple[str, ...] = (protocols.DEFAULT,)
    """Every protocol any label runs."""
    schedule: str = "closed"
    requests: int | None = None
    rate: float | None = None
    ramp_up: float | None = None
    pace: float | None = None
    page: str = "/"
    pages: tuple[str, ...] = ()
    warmup: float = 0.0
    app: str | None = None
    applies: Callable[[str], bool] | None = None
    """Whether a page is the app's (None: the run has no app, or one that is not known)."""
    shipped: Mapping[str, Path] = field(default_factory=dict)
    """The app's journeys by name."""


def traffic_of(fields: Mapping[str, Any]) -> tuple[Traffic, list[str]]:
    """The traffic of flat fields (a file's keys with the flags over them, or run.json's spec), and what was
    given that does not go together or has nothing to act on. Of several sources the first (mix, replay,
    journeys) is kept, so that its own problems are said too."""
    v = {**DEFAULTS, **{k: fields[k] for k in DEFAULTS if k in fields}}
    given: list[Traffic] = []
    if v["mix"]:
        given.append(MixTraffic(dict(v["mix"]), v["seed"]))
    if v["replay"] is not None:
        given.append(ReplayTraffic(v["replay"], v["replay_speed"], tuple(v["replay_methods"]), v["log_format"]))
    if v["journey"]:
        given.append(JourneyTraffic(v["journey"], dict(v["journey_levels"]), v["seed"]))
    p = Problems()
    kinds = {t.kind for t in given}
    p.extend(why for a, b, why in CLASH if a in kinds and b in kinds)
    if "replay" not in kinds:
        for name, flag in IDLE:
            value = v[name]
            if (tuple(value) if isinstance(value, list) else value) != DEFAULTS[name]:
                p.add(f"{flag} without --replay: it has nothing to act on (give --replay FILE, or drop {flag})")
    if v["seed"] is not None and not kinds & {"mix", "journeys"}:
        p.add("--seed without --mix or --journey: nothing is drawn with it (drop --seed)")
    if v["journey_levels"] and "journeys" not in kinds:
        p.add("[journeys.levels] gives the mix by level: give the mix at every level too ([journeys])")
    return (given[0] if given else OnePage()), p.messages


def journey_flag(given: str | None) -> dict[str, Any]:
    """`--journey` as the keys it sets: the mix at every level, over a file's mixes by level too."""
    return {"journey": given, "journey_levels": {}} if given else {}


def problems(traffic: Traffic, run: Beside) -> list[str]:
    """Every problem of the traffic itself and beside the rest of the run, all at once."""
    p = Problems()
    if isinstance(traffic, MixTraffic):
        p.extend(_mix(traffic, run))
    elif isinstance(traffic, ReplayTraffic):
        p.extend(_replay(traffic, run))
    elif isinstance(traffic, JourneyTraffic):
        p.extend(_journeys(traffic, run))
    for name in sorted(set(run.protos) & set(protocols.names())):  # an unknown one is the spec's to say
        if (wrong := protocols.get(name).source_error(traffic.flag)) is not None:
            p.add(wrong)
            break
    return p.messages


def _mix(mix: MixTraffic, run: Beside) -> list[str]:
    """A mix beside a file's `pages =`, a negative seed, pages of an app beside pages without it."""
    from .mix import check_mix

    p = Problems()
    p.attempt(lambda: check_mix(mix.weights, "--mix"))
    if run.pages:
        p.add("--mix and pages = [...]: give one (a mix's pages run in one load; pages = runs each on its own)")
    if mix.seed is not None and mix.seed < 0:
        p.add(f"--seed must be 0 or more, not {mix.seed}")
    if run.applies is not None and len({run.applies(page) for page in mix.weights}) > 1:
        p.add(f"--mix: some pages are the app {run.app}'s and some are not; a mix's pages run on one server")
    return p.messages


def _replay(replay: ReplayTraffic, run: Beside) -> list[str]:
    """A replay's log (one line: its first bad line), and what its log overrules."""
    from .logreplay import parse_speed, primer_page, warmup_problem

    p = Problems()
    plan = p.attempt(lambda: replay.planned)
    if plan is not None and (wrong := warmup_problem(plan, run.warmup)) is not None:
        p.add(wrong)
    try:
        paced = parse_speed(replay.speed) is not None
    except UsageError:
        paced = False  # the plan said why
    for given, name in ((run.pages, "pages = [...]"), (run.schedule != "closed", "--schedule"),
                        (run.rate is not None, "--rate"), (run.ramp_up is not None, "--ramp-up"),
                        (run.pace is not None, "--pace"),
                        # the page the run is given is the log's most sent answered one, unless one was asked for
                        (plan is not None and run.page != primer_page(plan), "--page")):
        if given:
            p.add(f"--replay and {name}: a replay's log says what is sent and when (--replay-speed)")
    if paced and run.requests is not None:
        p.add("--replay and -n/--requests: at Nx the log's own times say how many are sent; -n goes with "
              "--replay-speed max")
    for name in sorted(set(run.protos) & set(protocols.names()) if paced else ()):  # Nx: the replay schedule
        if (wrong := protocols.get(name).run_error("fast", "replay", f"--replay-speed {replay.speed}")) is not None:
            p.add(f"--replay: {wrong}, the log's own timing (--replay-speed max runs the closed loop)")
    return p.messages


def _journeys(journeys: JourneyTraffic, run: Beside) -> list[str]:
    """A name neither the app ships nor a file, a file's own problems (file:line), a level that is no number,
    a schedule other than the closed loop."""
    from .journeys import load_mix

    p = Problems()
    for given in dict.fromkeys([journeys.mix, *journeys.levels.values()]):
        p.attempt(lambda given=given: load_mix(given, run.shipped))  # type: ignore[misc]
    for level in journeys.levels:  # a level the run leaves out (-c over a file) is no error
        if not level.isdigit() or int(level) < 1:
            p.add(f"[journeys.levels] {level!r}: a level is a number of clients, like 20")
    if run.schedule != "closed":
        p.add(f"journeys run on the closed loop (-c): not with the {run.schedule} schedule")
    return p.messages
