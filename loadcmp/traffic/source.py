"""A run's traffic as one value: one page, a weighted mix, an access log replayed, or journeys (`Traffic`).

Each kind says what it does for the rest of the house, so that no one outside this package asks which kind
a run has: the schedule a level runs (`schedule`), the measured window without -t (`window`), the pages the
engines send in one load (`pages`, a `load.pageset.Pages`: the compiled loop never knows which source it runs),
the pages the primer asks for (`primed`), the journeys a level walks (`walks`) and the engine plan they make
(`plan`), what a trial adds to its stored result (`result`), the labels findings may name (`labels`), the run's
page when none is given (`page_for`), the words the report says of it (`sentence`, `what`, `lines`), and what it
is as part of a catalog's cell (`said`: two runs of other traffic never share a cell).

run.json keeps the flat keys it always had (`mix`, `seed`, `replay`, `replay_speed`, `replay_methods`,
`log_format`, `journey`, `journey_levels`): `fields` writes them and `fits.traffic_of` reads them back, so
results folders written before the value existed read the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from .. import protocols
from ..errors import UsageError
from ..load.schedules import Schedule
from ..load.target import Target
from .mix import MIX_LABEL, mix_pages, new_seed
from .logreplay import DEFAULT_METHODS, ReplayPlan, load_plan, primer_page, replay_doc, replay_schedule, replay_window

if TYPE_CHECKING:
    from ..load.pageset import Pages
    from ..records import LoadSummary
    from .journeys import JourneyMix
    from .sessions import JourneyPlan

DEFAULTS: dict[str, Any] = {"mix": {}, "seed": None, "replay": None, "replay_speed": "1x",
                            "replay_methods": DEFAULT_METHODS, "log_format": None, "journey": None,
                            "journey_levels": {}}
"""The flat keys of run.json's spec that hold a run's traffic, with the values of a run that gives none."""


@dataclass(frozen=True)
class Source:
    """What every kind does; each kind overrides what it does otherwise."""

    kind: ClassVar[str] = "page"
    """The source's name in the protocol table (`protocols.Protocol.sources`)."""
    flag: ClassVar[str] = "--page"
    """The flag that gives it, as messages name it."""
    own_requests: ClassVar[bool] = False
    """Whether the source says its own requests (then an app runs behind its first page only)."""
    resumes_tls: ClassVar[bool] = True
    """Whether its engine resumes TLS sessions on new connections (`--tls-resume`): the fast engine's loops do."""
    behaves: ClassVar[bool] = True
    """Whether its engine runs the client behaviours (`--think`, `--send-rate`, `--read-rate`: `load.pacing`)."""
    schedule_of: ClassVar[str | None] = None
    """The schedule a behaviour is judged against when the source sets its own times (a replay's), else the run's."""

    def fields(self) -> dict[str, Any]:
        """run.json's flat keys of the traffic."""
        return dict(DEFAULTS)

    def schedule(self, level: int, max_inflight: int | None, requests: int | None) -> Schedule | None:
        """The schedule of one level, when the source sets it (None: the run's own schedule)."""
        return None

    def window(self, warmup: float, fewest: int, timeout: float, requests: int | None
               ) -> tuple[int | None, float] | None:
        """-n and the measured time of a run given no -t, when the source sets them (None: the run's)."""
        return None

    def pages(self, target: Target) -> Pages | None:
        """What each request of one load sends (None: `target`'s page every time)."""
        return None

    def primed(self, page: str) -> tuple[tuple[str, ...], bool]:
        """The pages the primer asks for before the load, and whether each must be exactly the page asked."""
        return (page,), False

    def walks(self, level: int, shipped: Mapping[str, Path]) -> JourneyMix | None:
        """The journeys each virtual user walks at a level (None: the source has none)."""
        return None

    def plan(self, level: int, trial: int, shipped: Mapping[str, Path], proto: str = protocols.DEFAULT
             ) -> JourneyPlan | None:
        """What the load of one level and trial over `proto` is handed as `LoadSpec.traffic` (None: the engines'
        own)."""
        return None

    def result(self, summary: LoadSummary, warmup: float, dropped: list[int]) -> dict[str, Any]:
        """What a trial adds to its stored result."""
        return {}

    def labels(self, labels: list[str]) -> list[str]:
        """The result labels the source adds to the run's (findings may name them)."""
        return []

    def page_for(self, given: str | None) -> str | None:
        """The run's page: the one given, or the source's own (None: neither)."""
        return given

    def drawn(self) -> Self:
        """The value with its draw fixed, stored so that the run repeats it."""
        return self

    def sentence(self, levels: str) -> str | None:
        """Who sends what, in the report's words (None: the schedule says it)."""
        return None

    def what(self) -> str | None:
        """What is sent, in the report's words (None: the run's page)."""
        return None

    def lines(self, run: str) -> list[str]:
        """The source in words, one line per run, for the report's section of it."""
        return []

    def said(self, level: int | None = None) -> str:
        """The source and its parameters as a catalog's cell names them ("": one page); `level`: at that level
        (None: at every level)."""
        return ""


@dataclass(frozen=True)
class OnePage(Source):
    """Every request is the run's page (or each of a file's `pages = [...]`, one load each)."""


@dataclass(frozen=True)
class MixTraffic(Source):
    """A weighted mix (`--mix`, `[mix]`): each request drawn by weight from a seeded sequence (`traffic.mix`)."""

    weights: dict[str, float] = field(default_factory=dict)
    """page -> weight, in the order given."""
    seed: int | None = None
    """The draw's seed (`--seed`); None until `drawn`, which picks one at random."""
    kind: ClassVar[str] = "mix"
    flag: ClassVar[str] = "--mix"
    own_requests: ClassVar[bool] = True

    def fields(self) -> dict[str, Any]:
        return {**DEFAULTS, "mix": dict(self.weights), "seed": self.seed}

    def pages(self, target: Target) -> Pages | None:
        return mix_pages(tuple(self.weights.items()), self.seed or 0, target)

    def primed(self, page: str) -> tuple[tuple[str, ...], bool]:
        return tuple(pg for pg, w in self.weights.items() if w > 0) or (page,), True

    def labels(self, labels: list[str]) -> list[str]:
        # a mix's whole and each of its pages (`nginx[mix]`, `nginx[/?p=1042]`: `store.pagecells`)
        return [f"{label} {page}" for label in labels for page in (MIX_LABEL, *self.weights)]

    def page_for(self, given: str | None) -> str | None:
        if given is not None:
            raise UsageError("--mix and --page: give one (a mix names its pages)")
        return next(iter(self.weights))

    def drawn(self) -> Self:
        return self if self.seed is not None else replace(self, seed=new_seed())

    def said(self, level: int | None = None) -> str:
        return f"mix {','.join(f'{p}={w:g}' for p, w in self.weights.items())}"  # (a seed is a setting, not a load)

    def what(self) -> str | None:
        return "a mix of " + ", ".join(f"{p} ({w:g})" for p, w in self.weights.items())

    def lines(self, run: str) -> list[str]:
        pages = ", ".join(f"{p} ({w:g})" for p, w in self.weights.items())
        return [f"{run}: a mix of {pages}, drawn with seed {self.seed} (the same seed sends the same sequence: "
                "`--seed` repeats it)"]


@dataclass(frozen=True)
class ReplayTraffic(Source):
    """An access log replayed (`--replay`): its requests in its order at its own times (`traffic.logreplay`)."""

    log: str = ""
    """The log, absolute."""
    speed: str = "1x"
    """`Nx`: the log's own timing divided by N, an open schedule; `max`: the closed loop's pace."""
    methods: tuple[str, ...] = DEFAULT_METHODS
    """The methods sent; the log's others are counted and left out."""
    log_format: str | None = None
    """combined, common or json; None: told by its first lines."""
    kind: ClassVar[str] = "replay"
    flag: ClassVar[str] = "--replay"
    schedule_of: ClassVar[str | None] = "replay"  # its own times: no think time between them
    own_requests: ClassVar[bool] = True

    def fields(self) -> dict[str, Any]:
        return {**DEFAULTS, "replay": self.log, "replay_speed": self.speed, "replay_methods": self.methods,
                "log_format": self.log_format}

    @property
    def planned(self) -> ReplayPlan:
        """The log read and planned (once per run: `load_plan` keeps it); UsageError for one that cannot be."""
        return load_plan(self.log, self.log_format, self.speed, tuple(self.methods))

    def schedule(self, level: int, max_inflight: int | None, requests: int | None) -> Schedule | None:
        return replay_schedule(self.planned, level, max_inflight, requests)

    def window(self, warmup: float, fewest: int, timeout: float, requests: int | None
               ) -> tuple[int | None, float] | None:
        """A replay lasts as long as its log at its speed; at max it sends the log once (or -n of it)."""
        plan = self.planned
        whole = requests or (plan.sent if plan.dues is None else None)
        return whole, replay_window(plan, warmup, fewest, timeout)

    def pages(self, target: Target) -> Pages | None:
        return self.planned.pages(target)

    def result(self, summary: LoadSummary, warmup: float, dropped: list[int]) -> dict[str, Any]:
        return {"replay": replay_doc(self.planned, summary, warmup, dropped)}

    def page_for(self, given: str | None) -> str | None:
        return given if given is not None else primer_page(self.planned)

    def sentence(self, levels: str) -> str | None:
        how = (f"as fast as {levels} closed clients go" if self.speed == "max" else
               f"at its own timing{'' if self.speed == '1x' else f' divided by {self.speed[:-1]}'}, at most "
               f"{levels} in flight, the rest dropped")
        return f"the access log {Path(self.log).name} replayed in its order, {how}"

    def what(self) -> str | None:
        return "the log's pages"

    def said(self, level: int | None = None) -> str:
        methods = "" if tuple(self.methods) == tuple(DEFAULT_METHODS) else f" ({','.join(self.methods)})"
        return f"replay {Path(self.log).name}{methods} at {self.speed}"


@dataclass(frozen=True)
class JourneyTraffic(Source):
    """Journeys (`--journey`, `[journeys]`): virtual users walking weighted journeys step by step
    (`traffic.journeys`, their engine `traffic.sessions`)."""

    mix: str = ""
    """The journeys at every level, as given (`reader=80,author=20`, a name, a file)."""
    levels: dict[str, str] = field(default_factory=dict)
    """The mix at some levels (by level, `[journeys.levels]`), over `mix`."""
    seed: int | None = None
    """The users' draw (`--seed`); None: 0."""
    kind: ClassVar[str] = "journeys"
    flag: ClassVar[str] = "--journey"
    own_requests: ClassVar[bool] = True
    resumes_tls: ClassVar[bool] = False  # each user's connections are its own (aiohttp, QUIC): none resumed
    behaves: ClassVar[bool] = False  # the journeys' engine runs no client behaviour

    def fields(self) -> dict[str, Any]:
        return {**DEFAULTS, "journey": self.mix, "journey_levels": dict(self.levels), "seed": self.seed}

    def at(self, level: int) -> str:
        """The mix one level runs, as given."""
        return self.levels.get(str(level), self.mix)

    def what(self) -> str | None:
        return f"the pages of the journeys {self.mix}" + (", other journeys at some levels" if self.levels else "")

    def said(self, level: int | None = None) -> str:
        mix = self.at(level) if level is not None else self.mix + "".join(
            f", at {lv}: {m}" for lv, m in sorted(self.levels.items()))
        return f"journeys {mix}"

    def walks(self, level: int, shipped: Mapping[str, Path]) -> JourneyMix | None:
        from .journeys import load_mix

        return load_mix(self.at(level), shipped)

    def plan(self, level: int, trial: int, shipped: Mapping[str, Path], proto: str = protocols.DEFAULT
             ) -> JourneyPlan | None:
        from .journeys import load_mix
        from .sessions import JourneyPlan  # the load's engine: only when a trial runs

        mix, seed = load_mix(self.at(level), shipped), (self.seed or 0) * 1000 + trial
        row = protocols.get(proto)
        if row.transport == "udp":  # over QUIC: qh3's connections, not aiohttp's
            from .h3journeys import H3JourneyPlan

            return H3JourneyPlan(mix, seed)
        if row.multiplexed:  # h2, h2c: the `h2` package's connections
            from .h2journeys import H2JourneyPlan

            return H2JourneyPlan(mix, seed)
        return JourneyPlan(mix, seed)


Traffic = OnePage | MixTraffic | ReplayTraffic | JourneyTraffic
"""What a run sends: exactly one of the four."""
