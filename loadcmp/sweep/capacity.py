"""`loadcmp capacity` on real servers: each label's search (`loadcmp.sweep.search`) driven
through the same trials `run` uses.

A probe is a trial (`trial.run_trial`: plan, start, prime, measure, evidence, judge, stop)
at one level, stored in the one results folder as it ends, then held to the target
(`verdicts.slo`). A confirmation adds trials at a level until it has `confirm` of them and
judges them with 95 % intervals, and adds one more at a time while they cannot decide, up to
`max_confirm`. The search's path and each label's result are stored in
run.json's `capacity` after every probe, so a Ctrl-C keeps what was measured and where the
search stood; the folder ends `interrupted` as a run's does (`runner.conclude`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict

from ..experiment.capacity import CapacitySpec
from ..experiment.spec import RunSpec
from ..lab import dockerhost
from ..load.run.workers import Fleet, Stopper
from ..records import CapacityDoc, CapacityEstimateDoc, CapacityServerDoc, CapacityStepDoc, RunStatus, TrialRecord
from ..verdicts.slo import Confirmed, confirm_level, edge_cause, judge_probe
from .runner import SweepOutcome, check_limits, conclude, default_pinning, open_sweep
from .search import Found, Plan, Probed, between, search
from . import tracing
from .trial import Planned, Sweep, SweepHooks, TrialOutcome, note_problem, run_trial, stop

TrialRunner = Callable[[Sweep, Planned, RunSpec], TrialOutcome | None]
"""Runs one planned trial (`trial.run_trial`; a test gives a fake)."""


def run_capacity(spec: RunSpec, cap: CapacitySpec, progress: SweepHooks | None = None, stopper: Stopper | None = None,
                 images: dict[str, str] | None = None, fleet: Fleet | None = None) -> SweepOutcome:
    """Every label's search, its probes stored as they end; nothing is left running."""
    progress = progress or SweepHooks()
    check_limits(cap.probe_spec(spec, cap.max))  # the most the search may ask of this machine, refused up front
    spec = default_pinning(spec, progress.say)
    with dockerhost.answering(spec.docker()):
        sweep = open_sweep(spec, progress, stopper or Stopper(), images, fleet, kind="capacity")
    progress.say(f"results: {sweep.writer.path}")
    return conclude(sweep, lambda: search_all(sweep, cap))


def new_doc(cap: CapacitySpec) -> CapacityDoc:
    return CapacityDoc(target=str(cap.target), unit=cap.unit, start=cap.start, max=cap.max, max_reason=cap.max_reason,
                       resolution=cap.resolution, factor=cap.factor, confirm=cap.confirm,
                       max_confirm=cap.most_trials, probe_s=cap.probe_time, servers={})


def search_all(sweep: Sweep, cap: CapacitySpec, run: TrialRunner | None = None) -> RunStatus:
    """Each label's search in turn, stored as it goes; a stop request ends them `interrupted`."""
    run = run or run_trial
    base = sweep.spec
    doc = new_doc(cap)
    sweep.writer.set_capacity(doc)
    plan = Plan(cap.start, cap.max, cap.max_reason, cap.resolution, cap.factor, cap.confirm, cap.most_trials)
    for server, keepalive, page, proto in base.variants():
        label = base.label(server, keepalive, page, proto)
        if sweep.stopper.requested:
            sweep.problems.append(f"stopped before {label}'s search")
            return "interrupted"
        prober = Prober(sweep, base, cap, Planned(cap.start, 1, server, keepalive, label, page, proto), run)

        def store(found: Found, prober: Prober = prober) -> None:
            doc["servers"][prober.label] = prober.server_doc(found, final=False)
            sweep.writer.set_capacity(doc)
            st = found.path[-1]
            sweep.progress.say(f"{'':>18}{st.stage} {st.level:,} {cap.unit}: {st.text}")

        found = search(plan, prober.probe, prober.confirm, on_step=store)
        if (kept := sweep.reused.pop(label, None)) is not None:
            stop(sweep, kept)  # --reuse-server: its search is over, and the next server's should not share
        doc["servers"][label] = prober.server_doc(found)
        sweep.writer.set_capacity(doc)
        sweep.progress.say(doc["servers"][label]["text"])
        if found.kind == "interrupted":
            return "interrupted"
    if not any("result" in t for t in sweep.writer.trials):
        return "failed"  # no server ever started: nothing was measured
    return "complete"


class Prober:
    """One label's probes and confirmations, as trials of the sweep."""

    def __init__(self, sweep: Sweep, base: RunSpec, cap: CapacitySpec, first: Planned, run: TrialRunner) -> None:
        self.sweep, self.base, self.cap, self.first, self.run = sweep, base, cap, first, run
        self.count = 0

    @property
    def label(self) -> str:
        return self.first.label

    def trials(self, level: int) -> list[TrialRecord]:
        """This label's stored trials at a level (measured or not)."""
        return [t for t in self.sweep.writer.trials if t["server"] == self.label and t["level"] == level]

    def measured(self, level: int) -> list[TrialRecord]:
        return [t for t in self.trials(level) if t.get("result")]

    def trial(self, level: int) -> TrialRecord | None:
        """One more trial at a level, stored as it ends; None: stopped."""
        sweep = self.sweep
        p = Planned(level, len(self.trials(level)) + 1, self.first.server, self.first.keepalive, self.label,
                    self.first.page, self.first.proto)
        where = f"{self.label} at {level:,} {self.cap.unit}, trial {p.trial}"
        if sweep.stopper.requested:
            sweep.problems.append(f"stopped before {where}")
            return None
        spec = self.cap.probe_spec(self.base, level)  # this probe's, handed to the trial: the sweep's stays
        sweep.progress.trial_start(p, self.count, self.count + 1, spec.duration + spec.warmup)
        self.count += 1
        outcome = self.run(sweep, p, spec)
        if outcome is None:
            sweep.problems.append(f"stopped while {where} was starting")
            return None
        rec = outcome.record
        sweep.writer.add_trial(rec, outcome.timeline, outcome.samples)
        if outcome.trace is not None:  # --trace: the probe's requests joined to its servers' lines
            for said in tracing.join_trial(sweep.writer.path, rec, spec.duration, outcome.trace):
                note_problem(sweep, said)
        sweep.progress.trial_end(p, rec)
        if rec["status"] != "ok":
            sweep.problems.append(f"{where}: {rec['reason']}")
        return None if rec["status"] == "interrupted" else rec

    def probe(self, level: int) -> Probed | None:
        rec = self.trial(level)
        if rec is None:
            return None
        judged = judge_probe(self.cap.target, rec)
        if judged is None:
            return Probed(level, None, False, rec.get("reason") or "nothing was measured")
        return Probed(level, judged.met, bool(rec["result"].get("client_bound")), judged.text)

    def confirm(self, level: int, wanted: int) -> Confirmed | None:
        """Trials at a level until it has `wanted` measured ones (a server that will not start gets two more
        tries), judged together."""
        tries = wanted - len(self.measured(level)) + 2
        while len(self.measured(level)) < wanted and tries > 0:
            tries -= 1
            if self.trial(level) is None:
                return None
        return confirm_level(self.cap.target, level, self.measured(level))

    def server_doc(self, found: Found, final: bool = True) -> CapacityServerDoc:
        """The label's entry of run.json's `capacity`: where the edge is, the path, the evidence."""
        evidence: list[str] = []
        if final and found.missed is not None and found.kind in ("capacity", "at_least", "below_start", "unsure"):
            at = self.trials(found.missed)
            judged = [j for t in at if (j := judge_probe(self.cap.target, t)) is not None]
            evidence = edge_cause(at, self.sweep.writer.run["servers"].get(self.label), os.cpu_count(), judged,
                                  self.cap.target)
        doc = CapacityServerDoc(
            kind=found.kind if final else "searching", level=found.level, missed=found.missed,
            path=[CapacityStepDoc(level=s.level, stage=s.stage, met=s.met, client_bound=s.client_bound, text=s.text)
                  for s in found.path],
            notes=list(found.notes), cause=evidence[0] if evidence else None, evidence=evidence,
            confirmed={str(lv): [CapacityEstimateDoc(**asdict(e)) for e in c.checks]  # type: ignore[typeddict-item]
                       for lv, c in sorted(found.confirmed.items())},
            text=sentence(self.label, found, self.cap, evidence[0] if evidence else None,
                          self.base.streams_for(self.first.proto)) if final else
            f"{self.label}: searching ({len(found.path)} steps so far)")
        if found.undecided:
            doc["undecided"] = list(found.undecided)
        return doc


def sentence(label: str, found: Found, cap: CapacitySpec, cause: str | None, streams: int = 1) -> str:
    """One label's result in one sentence; where each client is a connection carrying `streams` (-m on h2,
    h2c, h3), its unit says so."""
    unit: str = cap.unit
    lv, up = found.level, found.missed
    if unit == "clients" and streams > 1:
        unit = f"clients (connections, each carrying {streams} streams)"
    why = f"; at {up:,}: {cause}" if cause and up is not None else ""
    if found.kind == "capacity" and lv is not None and up is not None:
        return f"{label}: capacity {lv:,} {unit} (met at {lv:,}, missed at {up:,}){why}"
    if found.kind == "at_least" and lv is not None:
        return f"{label}: at least {lv:,} {unit} (client-bound: the client, not the server, was the limit){why}"
    if found.kind == "below_start":  # below the lowest level missed (the start, or where the search began)
        return f"{label}: below {up or cap.start:,} {unit}: the target is missed at the first level{why}"
    if found.kind == "unsure":
        at = " and ".join(f"{x:,}" for x in found.undecided)
        settled = [c for x in found.undecided if (c := found.confirmed.get(x)) is not None and c.settled]
        over = (f"over {settled[0].n} trials: {settled[0].settled}" if settled else
                f"over {cap.most_trials} trials (--max-confirm)")
        return (f"{label}: unsure, {between(lv, up, found.undecided[0], unit)}: the confirmation at {at} stayed "
                f"unsure {over}{why}")
    if found.kind == "not_reached" and lv is not None:
        return f"{label}: at least {lv:,} {unit}: the target was met at every level up to {lv:,} ({cap.max_reason})"
    if found.kind == "interrupted":
        return f"{label}: interrupted after {len(found.path)} steps; what was measured is kept"
    return f"{label}: no capacity: {'; '.join(found.notes) or 'nothing was measured'}"
