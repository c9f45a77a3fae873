"""run.json's records of a search: a capacity search (`loadcmp capacity`) and a tuning study (`loadcmp tune`).

Typed as `loadcmp.records` types the rest of run.json (and re-exported there), kept apart so that
each file stays one screenful of contract.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from .units import Setting


class CapacityStepDoc(TypedDict):
    """One entry of a capacity search's path: a probe, or a level's confirmation."""

    level: int  #: clients, or requests/s (`CapacityDoc.unit`)
    stage: Literal["step", "bisect", "confirm"]
    met: bool | None  #: None: nothing measured (a probe), or unsure (a confirmation)
    client_bound: bool
    text: str  #: what decided it: the checks and their values


class CapacityEstimateDoc(TypedDict):
    """One check of the target over a level's confirmation trials."""

    check: str
    mean: float | None  #: in the metric's scale (ratio 0..1, ms, bytes)
    low: float | None  #: the 95 % interval (None: fewer than 2 trials)
    high: float | None
    n: int
    verdict: Literal["met", "missed", "unsure"]
    shown: str  #: the mean and its interval as people read them


class CapacityServerDoc(TypedDict):
    """One server label's search: where its edge is and why."""

    kind: Literal["searching", "capacity", "at_least", "below_start", "not_reached", "unsure", "interrupted",
                  "failed"]
    level: int | None  #: capacity / at_least: the highest level met; below_start: the start; not_reached: the last;
    #: unsure: the highest level met below the undecided edge (None: none was)
    missed: int | None  #: the lowest level missed above it (below_start: the start; unsure: None when none was)
    undecided: NotRequired[list[int]]  #: unsure: the levels whose confirmation stayed unsure
    path: list[CapacityStepDoc]
    notes: list[str]  #: disagreements, unsure confirmations, where and why it stopped
    cause: str | None  #: what broke at the first missed level, from the trials' evidence
    evidence: list[str]  #: every piece of evidence there, strongest first
    confirmed: dict[str, list[CapacityEstimateDoc]]  #: level (as a string) -> the target's checks over its trials
    text: str  #: one sentence: the capacity and its interval, or why there is none


class CapacityDoc(TypedDict):
    """run.json's `capacity`: what was searched for and what each server label gave."""

    target: str  #: the checks, as written (`--slo`)
    unit: Literal["clients", "requests/s"]  #: what a level is (`--schedule rate`: a rate)
    start: int
    max: int
    max_reason: str  #: why the search may not go past `max`
    resolution: float  #: the edge is bracketed to within this fraction
    factor: float  #: the geometric step
    confirm: int  #: trials at the level found and at the next one up
    max_confirm: NotRequired[int]  #: the most trials an unsure confirmation may grow to, one at a time
    probe_s: float  #: the measured seconds of one probe
    servers: dict[str, CapacityServerDoc]


class TuneParamDoc(TypedDict):
    """One setting a study varies."""

    key: str
    low: int | None  #: a range's ends (None: a list of values)
    high: int | None
    log: bool  #: searched on a log scale
    choices: list[Any]  #: the values of a list ([] for a range)
    text: str  #: as given: `fpm.max_children=5..200`


class TuneTrialDoc(TypedDict):
    """One trial of a study: the settings tried and what they gave."""

    number: int  #: the study's trial number (-1: the baseline, run before the study)
    label: str  #: the server label its measurements are stored under (pruned: none ran)
    params: dict[str, Any]
    state: Literal["complete", "pruned", "failed", "interrupted", "repeat"]
    value: float | None  #: the capacity (clients or requests/s), or the req/s at the level; None: no value
    met: bool | None  #: rps objective: whether the target was met at the level
    client_bound: bool  #: the client set the pace: the value is a lower bound
    seconds: float  #: wall time of the trial
    text: str  #: one sentence: what it gave, or why it did not run
    unreached: NotRequired[str]  #: the setting under study did not take effect (`verdicts.gain.not_reached`)


class TuneSideDoc(TypedDict):
    """The baseline or the best at the comparison level, over its trials there."""

    label: str
    n: int
    verdict: Literal["met", "missed", "unsure"]  #: the target, judged with 95 % intervals
    checks: list[CapacityEstimateDoc]
    rps: CapacityEstimateDoc  #: requests/s there


class TuneGainDoc(TypedDict):
    """The best settings against the baseline's, both measured again at one level (A B A B)."""

    level: int
    base: TuneSideDoc
    best: TuneSideDoc
    gain: float | None  #: the best's objective over the baseline's, minus 1 (0.25: 25 % more)
    verdict: Literal["better", "not better", "unsure"]
    text: str


class TuneDoc(TypedDict):
    """run.json's `tune`: what was tuned, for what, each trial, the best and its gain over the baseline."""

    server: str  #: the label tuned (its trials: LABEL-tN; the baseline: LABEL-base)
    stack: str
    objective: Literal["capacity", "rps"]
    target: str
    unit: str  #: the objective's unit: clients, requests/s, or req/s
    clients: int | None  #: rps objective: the level
    params: list[TuneParamDoc]
    search: dict[str, Any]  #: the probes' settings (experiment.capacity.CapacitySpec's, the target as written)
    base_settings: dict[str, Setting]  #: the settings every trial starts from (--set, the variant's)
    trials_asked: int | None
    budget_s: float | None
    seed: int | None  #: the sampler's seed (--seed), kept for --resume
    sampler: str  #: how the study chose settings (Optuna's TPE, its seed, its random start)
    study: str  #: the Optuna journal in the folder, which `--resume` extends
    trials: list[TuneTrialDoc]
    best: int | None  #: the number of the best trial (-1: the baseline held the most)
    gain: TuneGainDoc | None
    importance: dict[str, float]  #: how much each parameter decides whether a trial is among the best (PED-ANOVA)
    block: str  #: the best settings as a ready `[variants.tuned]` table
    text: str  #: the result in one sentence
    unlisted: NotRequired[dict[str, str]]  #: study trial numbers with no row (number -> why)
    comparing: NotRequired[dict[str, int]]  #: the comparison under way ({best, level}); gone once it ends
