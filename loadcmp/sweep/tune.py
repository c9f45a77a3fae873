"""`loadcmp tune` on real servers: an Optuna study (TPE) over a stack's settings, each trial measured on
fresh servers through the capacity search's probes (`sweep.capacity.Prober`).

In order:

1. the baseline: the settings without the study's parameters (the stack's defaults, and any --set);
2. the study's trials, each asked of Optuna (ask/tell). A trial's settings are held to the stack's own
   consistency rules first: settings the server would refuse are pruned with the rule's words before
   any container starts. The objective is a quick capacity search (steps and bisection, each probe
   judged alone) or, with `-c N`, one probe's requests/s at N among settings that meet the target;
3. the best and the baseline again at one level, alternately (A B A B), until each has `confirm`
   trials there, judged with 95 % intervals: the gain, and whether it is real.

The study lives in the results folder as Optuna's journal (`study.log`), so `--resume` extends it;
run.json's `tune` is rewritten after every trial, and a Ctrl-C keeps what was measured.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from ..errors import ConfigError
from ..experiment.capacity import CapacitySpec
from ..experiment.spec import RunSpec
from ..experiment.tune import TuneSpec, new_doc as new_tune_doc
from ..lab import dockerhost
from ..load.run.workers import Fleet, Stopper
from ..records import CapacityDoc, RunStatus, TrialRecord, TuneDoc, TuneGainDoc, TuneSideDoc, TuneTrialDoc
from ..verdicts.gain import (best_of, gain, name as _name, no_answer, no_trial, not_reached, rps_text as _rps,
                             ready_block, settings_text, side, tied, unreached, valued)
from ..verdicts.slo import Confirmed
from .capacity import Prober, TrialRunner, new_doc
from .runner import SweepOutcome, check_limits, conclude, default_pinning, open_sweep
from .search import Plan, Probed, search
from .sampler import distribution, exhausted, importance, space, violation
from .trial import Planned, Sweep, SweepHooks, run_trial

if TYPE_CHECKING:
    from optuna import Study, Trial
    from optuna.distributions import BaseDistribution

STUDY = "study.log"
"""The Optuna journal in the results folder."""
ASKS = 3
"""Asks per trial wanted before the study is taken as exhausted (repeats and pruned settings do not count)."""


class _Stopped(Exception):
    """A trial of the study was stopped (Ctrl-C): the study ends `interrupted`."""


class Tuner:
    """One study: the baseline, the trials, the comparison; run.json's `tune` kept current."""

    def __init__(self, sweep: Sweep, cap: CapacitySpec, tune: TuneSpec, run: TrialRunner | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sweep, self.cap, self.tune, self.run = sweep, cap, tune, run or run_trial
        self.base = sweep.spec
        self.clock = clock
        self.started = clock()
        self.stack = self.base.catalog().get(tune.stack)
        self.base_settings = self.base.settings_for(tune.label)
        self.probers: dict[str, Prober] = {}
        self.quick = replace(cap, confirm=1)
        fresh = cast(CapacityDoc, {**new_doc(cap), "confirm": 0, "max_confirm": 0})  # a trial's probes stand alone
        self.cap_doc: CapacityDoc = sweep.writer.run.get("capacity") or fresh
        doc = sweep.writer.run.get("tune")
        self.doc: TuneDoc = doc if doc is not None else new_tune_doc(tune, cap, self.base_settings, STUDY)
        if (left := self.doc.pop("comparing", None)) is not None:  # a process killed while it compared
            sweep.problems.append(f"the comparison of trial {left['best']} with the baseline at {left['level']:,} "
                                  f"{self.doc['unit']} was killed with its process: its trials are kept, and the "
                                  "comparison is made anew")

    # --- measuring one set of settings -----------------------------------------------------------------

    def spec_for(self, label: str, params: dict[str, Any]) -> RunSpec:
        """The run of one label: the tuned server's settings with these parameters laid over them."""
        b = self.base
        return replace(b, servers=(label,), stacks={**b.stacks, label: self.tune.stack},
                       variant_settings={**b.variant_settings, label: {**self.base_settings, **params}})

    def prober(self, label: str, params: dict[str, Any], start: int) -> Prober:
        if label not in self.probers:
            spec = self.spec_for(label, params)
            first = Planned(start, 1, label, spec.keepalive[0], label, spec.all_pages[0], spec.protos_for(label)[0])
            self.probers[label] = Prober(self.sweep, spec, self.quick, first, self.run)
        return self.probers[label]

    def measure(self, label: str, params: dict[str, Any], start: int) -> TuneTrialDoc | None:
        """One set of settings measured: its quick capacity, or its req/s at the level; None: stopped."""
        began = self.clock()
        pr = self.prober(label, params, start)
        if self.tune.clients is not None:
            probed = pr.probe(self.tune.clients)
            if probed is None:
                return None
            rec = pr.trials(self.tune.clients)[-1]
            rps = rec["result"]["rps"] if rec.get("result") else None
            return self._reached(self._trial(label, params, "complete" if probed.met is not None else "failed", rps,
                                             probed.met, probed.client_bound, began,
                                             f"{_rps(rps)} at {self.tune.clients:,} clients: {probed.text}"),
                                 [rec] if probed.met is False else [])
        said: dict[int, Probed] = {}

        def probe(level: int) -> Probed | None:
            p = pr.probe(level)
            if p is not None:
                said[level] = p
            return p

        def as_probed(level: int, _: int) -> Confirmed:  # while tuning a probe stands alone: no confirmation trials
            p = said[level]
            return Confirmed(level, "met" if p.met else "missed", 1, [], "the client" if p.client_bound else None)

        found = search(Plan(start, self.cap.max, self.cap.max_reason, self.cap.resolution, self.cap.factor, 1, 1),
                       probe, as_probed)
        # the quick search's "confirmations" only repeat its probes' word: they are not stored as confirmations
        found.path = [st for st in found.path if st.stage != "confirm"]
        found.confirmed = {}
        self.cap_doc["servers"][label] = pr.server_doc(found)  # an interrupted search's probes too
        self.sweep.writer.set_capacity(self.cap_doc)
        if found.kind == "interrupted":
            return None
        return self._reached(self._trial(label, params, "failed" if found.kind == "failed" else "complete",
                                         found.value, None, found.kind == "at_least", began,
                                         self.cap_doc["servers"][label]["text"].split(": ", 1)[-1]),
                             pr.trials(found.missed) if found.missed is not None else [])

    def _reached(self, t: TuneTrialDoc, missed: list[TrialRecord]) -> TuneTrialDoc:
        """The trial, with a line where the setting under study did not take effect at the level it missed."""
        line = not_reached(self.sweep.writer.run["servers"].get(t["label"]), {p.key for p in self.tune.params},
                           missed)
        return {**t, "unreached": line} if line else t

    def _trial(self, label: str, params: dict[str, Any], state: Any, value: float | None, met: bool | None,
               bound: bool, began: float, text: str) -> TuneTrialDoc:
        return TuneTrialDoc(number=-1, label=label, params=params, state=state, value=value, met=met,
                            client_bound=bound, seconds=round(self.clock() - began, 1), text=text)

    def keep(self, trial: TuneTrialDoc) -> TuneTrialDoc:
        self.doc["trials"].append(trial)
        self.sweep.writer.set_tune(self.doc)
        self.sweep.progress.say(f"{'':>4}{_name(trial)}: {settings_text(trial['params'])} -> {trial['text']}")
        if trial.get("unreached"):
            self.sweep.progress.say(f"{'':>6}{trial.get('unreached')}")
        return trial

    def killed(self, number: int, params: dict[str, Any]) -> None:
        """A trial asked by a process that was killed outright while it ran: said, and its probes kept."""
        if not any(t["number"] == number for t in self.doc["trials"]):
            label = self.tune.trial_label(number)
            kept = any(t["server"] == label for t in self.sweep.writer.run["trials"])
            self.sweep.problems.append(f"trial {number} of the study was killed with its process")
            self.keep({**self._trial(label, params, "interrupted", None, None, False, self.clock(),
                                     "killed with its process while it ran: " + (
                                         "its probes are kept" if kept else "before any probe of it was stored")),
                       "number": number})

    # --- the study ----------------------------------------------------------------------------------

    def baseline(self) -> TuneTrialDoc | None:
        """The settings the study starts from, measured first (once: a resumed study has it)."""
        done = [t for t in self.doc["trials"] if t["number"] == -1]
        if done:
            return done[0]
        self.sweep.progress.say(f"baseline {self.tune.base_label}: {settings_text(self.defaults())}")
        t = self.measure(self.tune.base_label, {}, self.cap.start)
        if t is not None:
            self.keep({**t, "params": self.defaults()})
        return self.doc["trials"][-1] if t is not None else None

    def defaults(self) -> dict[str, Any]:
        """The baseline's value of each parameter."""
        effective = self.stack.effective(self.base_settings)
        return {p.key: effective[p.key] for p in self.tune.params}

    def feasible(self, params: dict[str, Any]) -> str | None:
        """Why the stack refuses these settings (its own checks), or None."""
        try:
            self.stack.effective({**self.base_settings, **params})
        except ConfigError as e:
            return "; ".join(e.messages)
        return None

    def out_of_time(self, measured: list[TuneTrialDoc]) -> bool:
        """Whether another trial and the comparison would go past the budget."""
        if self.tune.budget_s is None:
            return False
        each = sum(t["seconds"] for t in measured) / len(measured) if measured else 0.0
        compare = 2 * self.cap.confirm * (self.cap.probe_time + self.base.warmup + 4)
        return self.clock() - self.started + each + compare > self.tune.budget_s

    def study(self, optuna: ModuleType, base: TuneTrialDoc) -> RunStatus:
        """Ask, check, measure, tell; until the trials or the budget are spent."""
        study = self._open(optuna, base)
        dists = {p.key: distribution(optuna, p) for p in self.tune.params}
        wanted = self.tune.trials
        measured = [t for t in self.doc["trials"] if t["number"] >= 0 and t["state"] == "complete"]
        goal = len(measured) + wanted if wanted is not None else None
        for _ in range(ASKS * (wanted or 100)):
            if goal is not None and len(measured) >= goal or self.out_of_time([base, *measured]):
                break
            if self.sweep.stopper.requested:
                self.sweep.problems.append("stopped before the next trial of the study")
                return "interrupted"
            if exhausted(self.tune.params, self.doc["trials"]):
                self.sweep.progress.say(f"every one of the {space(self.tune.params)} settings was measured or refused")
                break
            try:
                t = self._ask(optuna, study, dists, [base, *measured])
            except _Stopped:
                return "interrupted"
            if t is not None and t["state"] == "complete" and t["value"] is not None:
                measured.append(t)
        met = [t for t in [base, *measured] if t["met"] is not False]
        # one parameter decides everything; ties and settings that all miss the target rank noise
        flat = self.tune.clients is None and tied(met, self.cap.resolution)
        self.doc["importance"] = {} if len(self.tune.params) < 2 or flat or len(met) < 2 else importance(optuna, study)
        return "complete"

    def _open(self, optuna: ModuleType, base: TuneTrialDoc) -> Study:
        """The study from its journal: trials a killed process left running told as failed, and the baseline
        told first (its number has no row of its own: the baseline's row is `base`)."""
        storage = optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(self.sweep.writer.path / STUDY)))
        asked = [t for t in self.doc["trials"] if t["number"] >= 0]
        startup = max(3, min(10, (self.tune.trials or 12) // 3))
        seed = None if self.tune.seed is None else self.tune.seed + len(asked)  # a resumed study draws afresh
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)
        self.doc["sampler"] = (f"Optuna {optuna.__version__} TPE, the first {startup} trials at random"
                               + ("" if seed is None else f", seed {self.tune.seed}"))
        study = optuna.create_study(study_name="tune", storage=storage, direction="maximize", sampler=sampler,
                                    load_if_exists=True)
        for left in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            self.killed(left.number, left.params)
            study.tell(left.number, state=optuna.trial.TrialState.FAIL)
        dists = {p.key: distribution(optuna, p) for p in self.tune.params}
        defaults = self.defaults()
        if not study.trials and base["value"] is not None and all(p.holds(defaults[p.key]) for p in self.tune.params):
            study.add_trial(optuna.trial.create_trial(params=defaults, distributions=dists, value=base["value"],
                                                      constraints={"target": violation(base)}))
            self._unlisted(len(study.trials) - 1, "the baseline, told to the sampler as a trial of its own (its "
                           "row is 'base')")
        return study

    def _ask(self, optuna: ModuleType, study: Study, dists: dict[str, BaseDistribution],
             done: list[TuneTrialDoc]) -> TuneTrialDoc | None:
        """One trial asked of the study and answered: a row (repeat, pruned, measured), or None for settings
        refused or broken before (told again, without a row). `done`: the baseline and the measured trials."""
        ot = study.ask(dists)
        params = {p.key: ot.params[p.key] for p in self.tune.params}
        refused = next((t for t in self.doc["trials"] if t["params"] == params and t["state"] in ("pruned",
                                                                                                "failed")), None)
        if refused is not None:  # refused or broken once: the same again, without a new row
            study.tell(ot, state=optuna.trial.TrialState.PRUNED if refused["state"] == "pruned"
                       else optuna.trial.TrialState.FAIL)
            self._unlisted(ot.number, f"asked again for {settings_text(params)}, {refused['state']} as "
                           f"{_name(refused)}: not tried again")
            return None
        same = next((t for t in done if t["params"] == params), None)
        if same is not None and same["value"] is not None:
            self._tell(study, ot, same)
            return self.keep({**self._trial(same["label"], params, "repeat", same["value"], same["met"],
                                            same["client_bound"], self.clock(), f"as {_name(same)}: not run again"),
                              "number": ot.number})
        why = self.feasible(params)
        if why is not None:
            study.tell(ot, state=optuna.trial.TrialState.PRUNED)
            return self.keep({**self._trial("", params, "pruned", None, None, False, self.clock(),
                                            f"pruned before it ran: {why}"), "number": ot.number})
        label = self.tune.trial_label(ot.number)
        t = self.measure(label, params, self._start(done[0]))
        if t is None:
            study.tell(ot, state=optuna.trial.TrialState.FAIL)
            self.sweep.problems.append(f"stopped during trial {ot.number} of the study")
            self.keep({**self._trial(label, params, "interrupted", None, None, False, self.clock(),
                                     "stopped while it ran: its probes so far are kept"), "number": ot.number})
            raise _Stopped
        t["number"] = ot.number
        if t["state"] == "complete" and t["value"] is not None:
            self._tell(study, ot, t)
        else:
            study.tell(ot, state=optuna.trial.TrialState.FAIL)
        return self.keep(t)

    def _unlisted(self, number: int, why: str) -> None:
        """A study trial number that gets no row of the table, and why (the report explains the gap)."""
        self.doc.setdefault("unlisted", {})[str(number)] = why
        self.sweep.writer.set_tune(self.doc)

    def _tell(self, study: Study, ot: Trial, t: TuneTrialDoc) -> None:
        ot.set_constraint("target", violation(t))  # TPE prefers settings that meet the target (c-TPE)
        study.tell(ot, t["value"])

    def _start(self, base: TuneTrialDoc) -> int:
        """Where a trial's search starts: half the baseline's capacity (fewer probes than from --start)."""
        if self.tune.clients is not None or not base["value"]:
            return self.cap.start
        return max(self.cap.start, min(self.cap.max, int(base["value"]) // 2))

    # --- the best against the baseline ---------------------------------------------------------------

    def compare(self, base: TuneTrialDoc, best: TuneTrialDoc) -> TuneGainDoc | None:
        """Both at the best's level, `confirm` new trials each, alternately (A B, then B A); judged on those
        alone (the probe that made the best the best would lean the answer its way). None: stopped."""
        level = self.tune.clients or int(best["value"] or 0)
        sides = [self.prober(base["label"], {}, level), self.prober(best["label"], best["params"], level)]
        before = {pr.label: len(pr.trials(level)) for pr in sides}
        self.sweep.progress.say(f"comparing {best['label']} with {base['label']} at {level:,} {self.cap.unit}, "
                                f"{self.cap.confirm} new trials each")
        self.doc["comparing"] = {"best": best["number"], "level": level}  # a process killed now leaves it
        self.sweep.writer.set_tune(self.doc)
        try:
            for i in range(self.cap.confirm):
                for pr in sides if i % 2 == 0 else sides[::-1]:
                    if pr.trial(level) is None:
                        return None
        finally:
            self.doc.pop("comparing", None)
        b, w = (self._side(pr, level, before[pr.label]) for pr in sides)
        return gain(level, b, w, base, best, self.tune.objective, self.cap.unit)

    def _side(self, pr: Prober, level: int, since: int) -> TuneSideDoc:
        return side(self.cap.target, pr.label, level, [t for t in pr.trials(level)[since:] if t.get("result")])

    def conclude(self, status: RunStatus) -> RunStatus:
        """The best, its gain over the baseline and its ready block, stored."""
        base = next((t for t in self.doc["trials"] if t["number"] == -1), None)
        best = best_of(self.doc["trials"], self.tune.clients is not None)
        doc = self.doc
        doc["gain"], doc["best"], doc["block"] = None, None, ""  # a resumed study's answer is made anew
        if base is None or best is None:
            doc["text"] = no_answer(doc, base is not None)
            self._caveat()
            return status
        doc["best"] = best["number"]
        doc["block"] = ready_block(self.tune.stack, {**self.base_settings, **best["params"]})
        ended = status == "complete" and not self.sweep.stopper.requested
        ran = [t for t in doc["trials"] if t["number"] >= 0 and t["state"] == "complete"]
        if ended and not ran:
            doc["text"] = f"{no_trial(doc)}; the baseline ({settings_text(self.defaults())}): {valued(base, doc)}"
        elif ended and best is base:
            same = self.tune.clients is None and tied(doc["trials"], self.cap.resolution)
            doc["text"] = (f"the baseline ({settings_text(self.defaults())}) held the most: {valued(base, doc)}; "
                           + (f"every setting tried gave the same, to the search's {self.cap.resolution:.0%} "
                              "resolution: these parameters do not move the edge here (see its cause)" if same
                              else "no setting tried did better"))
        elif ended:
            gain = self.compare(base, best)
            doc["gain"] = gain
            doc["text"] = gain["text"] if gain else "stopped while comparing the best with the baseline"
            if gain is None:
                status = "interrupted"
        else:
            n = sum(1 for t in doc["trials"] if t["number"] >= 0 and t["state"] == "complete")
            doc["text"] = (f"stopped after {n} trial{'' if n == 1 else 's'} of the study; best so far: "
                           f"{settings_text(best['params'])}, {valued(best, doc)} (not compared with the baseline)")
        self._caveat()
        return status

    def _caveat(self) -> None:
        """Stores the answer, no finding where the setting under study did not take effect (`gain.unreached`)."""
        self.doc["text"] = unreached(self.doc)
        self.sweep.writer.set_tune(self.doc)


def run_tune(spec: RunSpec, cap: CapacitySpec, tune: TuneSpec, progress: SweepHooks | None = None,
             stopper: Stopper | None = None, fleet: Fleet | None = None, resume: str | None = None) -> SweepOutcome:
    """A study in a results folder of its own (or, `resume`, the one it was stored in); nothing left running."""
    progress = progress or SweepHooks()
    check_limits(cap.probe_spec(spec, tune.clients or cap.max))  # the most it may ask of this machine, up front
    spec = spec if resume else default_pinning(spec, progress.say)
    with dockerhost.answering(spec.docker()):
        sweep = open_sweep(spec, progress, stopper or Stopper(), None, fleet, kind="tune", reopen=resume)
    progress.say(f"results: {sweep.writer.path}")
    return conclude(sweep, lambda: run_study(sweep, cap, tune))


def run_study(sweep: Sweep, cap: CapacitySpec, tune: TuneSpec, run: TrialRunner | None = None) -> RunStatus:
    """The whole study in an open sweep (`runner.conclude` removes what is left and ends the folder)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    tuner = Tuner(sweep, cap, tune, run)
    base = tuner.baseline()
    if base is None:
        return tuner.conclude("interrupted")
    if base["value"] is None:
        sweep.problems.append(f"the baseline measured nothing: {base['text']}")
        return tuner.conclude("failed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        status = tuner.study(optuna, base)
    return tuner.conclude(status)

