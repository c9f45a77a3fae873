"""A sweep of servers x levels x trials (TechEmpower's discipline); one trial is `loadcmp.sweep.trial`.

A sweep (`run_sweep`) interleaves servers within each level (A B, then B A) so
drift spreads evenly, stores each trial as soon as it ends, and goes on past a
server that fails to start, dies or is OOM-killed, recording what happened.
It installs no signal handler: the command's handler calls `Stopper.stop()`,
and the sweep looks at `stopper.requested` between trials and between a
trial's steps. Ctrl-C ends a run `interrupted`; any other exception `failed`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import __version__
from ..lab import cleanup, containers, dockerhost
from ..lab.certs import RunCA
from ..lab.images import build_images
from ..lab.www import www_digest
from ..errors import LabError, LoadcmpError, signal_name
from ..load.run.limits import check_nofile
from ..load.run.workers import Fleet, Stopper
from ..lab.provenance import git_commit, machine_info, this_host, this_process
from ..records import RunKind, RunStatus
from ..experiment.spec import RunSpec
from ..experiment.apps import images_needed
from ..store.writer import RunWriter, new_run_doc
from . import tracing
from .trial import Planned, Sweep, SweepHooks, note_problem, run_trial, stop


def plan_sweep(spec: RunSpec) -> list[Planned]:
    """Every variant at every level for every trial; order alternates per trial."""
    out: list[Planned] = []
    variants = spec.variants()
    for level in spec.levels:
        for trial in range(1, spec.trials + 1):
            order = variants if trial % 2 else list(reversed(variants))
            for server, ka, page, proto in order:
                out.append(Planned(level, trial, server, ka, spec.label(server, ka, page, proto), page, proto))
    return out


def check_limits(spec: RunSpec) -> None:
    """Refuse up front a level the machine's open-file limit cannot hold."""
    for level in spec.levels:
        check_nofile(spec.schedule_for(level).connections, spec.workers)


def default_pinning(spec: RunSpec, say: Callable[[str], None]) -> RunSpec:
    """On a 2-core machine: server on CPU 1, client on CPU 0, unless told otherwise (or either is elsewhere)."""
    elsewhere = spec.cluster is not None or spec.docker().remote
    if spec.server_cpus is None and spec.client_cpus is None and (os.cpu_count() or 1) == 2 and not elsewhere:
        say("2 CPUs: pinning the server to CPU 1 and the client to CPU 0 (set --server-cpus/--client-cpus to change)")
        return replace(spec, server_cpus="1", client_cpus="0")
    return spec


# --- a sweep ------------------------------------------------------------------------------


@dataclass
class SweepOutcome:
    """Where the results are and how the run ended."""

    path: str
    status: RunStatus
    problems: list[str] = field(default_factory=list)
    signum: int = 2
    """The signal that stopped an interrupted run (SIGINT: Ctrl-C)."""
    only_wrong_protocol: bool = False
    """A failed run whose every trial found its server speaking another protocol than the one asked."""


def run_sweep(spec: RunSpec, progress: SweepHooks | None = None, stopper: Stopper | None = None,
              images: dict[str, str] | None = None, fleet: Fleet | None = None) -> SweepOutcome:
    """Run every planned trial and store each as it ends; nothing is left running.

    A stop request (Ctrl-C, SIGTERM, SIGHUP) ends the run `interrupted`, as does a
    second one (KeyboardInterrupt); any other exception ends it `failed` with its
    cause; an exception is re-raised after the folder is final."""
    progress = progress or SweepHooks()
    check_limits(spec)
    spec = default_pinning(spec, progress.say)
    with dockerhost.answering(spec.docker()):
        sweep = open_sweep(spec, progress, stopper or Stopper(), images, fleet)
    progress.say(f"results: {sweep.writer.path}")
    return conclude(sweep, lambda: run_trials(sweep, plan_sweep(spec)))


def conclude(sweep: Sweep, body: Callable[[], RunStatus]) -> SweepOutcome:
    """Run the trials of an open sweep (`body`), then remove what is left and write the folder's
    final status: a stop request ends it `interrupted`, as does a second one (KeyboardInterrupt);
    any other exception `failed` with its cause, and is re-raised once the folder is final."""
    try:
        status = body()
    except BaseException as e:
        gone = dockerhost.stopped_answering(e, sweep.host)  # one line, not docker-py's traceback
        sweep.problems.append(_cause(gone or e, sweep.stopper))
        clean_up(sweep)
        sweep.writer.finish("interrupted" if isinstance(e, KeyboardInterrupt) else "failed", sweep.problems)
        if gone is not None:
            raise gone from None
        raise
    clean_up(sweep)
    sweep.writer.finish(status, sweep.problems)
    trials = sweep.writer.trials
    wrong = status == "failed" and bool(trials) and all(t["status"] == "wrong_protocol" for t in trials)
    return SweepOutcome(str(sweep.writer.path), status, sweep.problems, sweep.stopper.signum, wrong)


def open_sweep(spec: RunSpec, progress: SweepHooks, stopper: Stopper, images: dict[str, str] | None,
               fleet: Fleet | None = None, kind: RunKind = "run", reopen: str | None = None) -> Sweep:
    """Docker client, images, a run id and the results folder with run.json started; the servers'
    CPUs, memory and open files checked against the engine that runs them. `reopen`: a folder to add
    to instead (`tune --resume`), its run.json kept but for this run's id, images and engine."""
    host = spec.docker()
    client = dockerhost.docker_client(host)
    dockerhost.check_server_limits(host, spec.server_cpus, spec.server_memory, client)
    reaped = cleanup.reap_orphans(client)
    if reaped:
        progress.say(f"removed {len(reaped)} container(s) left by runs whose process is gone: {', '.join(reaped)}")
    if images is None:
        needed = images_needed(spec)  # an app's over its stacks' images
        images = build_images(client, needed, log=progress.say)
    host = dockerhost.with_engine_limits(client, host, images)
    run_id = containers.new_run_id()
    name = spec.name or "-".join(spec.servers)
    doc = new_run_doc(kind, name, spec.to_dict(), machine_info(client), __version__)
    doc["run_id"] = run_id
    if spec.www:
        doc["www"] = www_digest(Path(spec.www))
    doc["owner"], doc["host"] = this_process(), this_host()
    doc["description"] = spec.description
    doc["git_commit"] = git_commit()
    doc["images"] = images
    if fleet is not None:
        doc["cluster"] = fleet.describe()
    doc["docker_host"] = host.describe(client)
    if reopen is not None:
        writer = RunWriter.reopen(reopen)
        writer.run.update({k: doc[k] for k in ("run_id", "owner", "host", "images", "docker_host")})  # type: ignore
    else:
        writer = RunWriter.create(spec.out, name, doc)
    # --tls: the run's CA, its certificate beside the results (tls/ca.pem) for the user's own clients
    ca = RunCA(writer.path, keep=reopen is not None) if any(spec.tls_for(label) for label in spec.servers) else None
    writer.watch = progress.stored
    if progress.stored is not None:
        progress.stored(writer, [], [])
    return Sweep(spec, client, images, run_id, writer, stopper, progress, fleet, host, ca=ca)


def run_trials(sweep: Sweep, planned: list[Planned]) -> RunStatus:
    """The trials in order, each stored as it ends; a stop request ends the loop."""
    for i, p in enumerate(planned):
        where = f"{p.label} at {p.level} clients, trial {p.trial}"
        if sweep.stopper.requested:
            sweep.problems.append(f"stopped by {_by(sweep.stopper.signum)} before {where}")
            return "interrupted"
        sweep.progress.trial_start(p, i, len(planned), sweep.spec.duration + sweep.spec.warmup)
        outcome = run_trial(sweep, p, sweep.spec)
        if outcome is None:
            sweep.problems.append(f"stopped by {_by(sweep.stopper.signum)} while {where} was starting")
            return "interrupted"
        sweep.writer.add_trial(outcome.record, outcome.timeline, outcome.samples)
        if outcome.trace is not None:  # --trace: the client's rows are stored now; the servers' lines join them
            for said in tracing.join_trial(sweep.writer.path, outcome.record, sweep.spec.duration, outcome.trace):
                note_problem(sweep, said)
        sweep.progress.trial_end(p, outcome.record)
        if outcome.record["status"] != "ok":
            sweep.problems.append(f"{where}: {outcome.record['reason']}")
        if outcome.record["status"] == "interrupted":
            return "interrupted"
    if planned and not any("result" in t for t in sweep.writer.trials):
        return "failed"  # no server ever started: nothing was measured
    return "complete"


def clean_up(sweep: Sweep) -> None:
    """Remove the reused servers and anything else of this run; failures go to `problems`."""
    for dep in sweep.reused.values():
        stop(sweep, dep)
    sweep.reused.clear()
    try:
        cleanup.down(sweep.client, sweep.run_id)
    except LabError as e:
        note_problem(sweep, f"{e} (run `loadcmp down`)")


def _by(signum: int) -> str:
    """Ctrl-C, SIGTERM, SIGHUP: what stopped a run, in the words a user knows."""
    return "Ctrl-C" if signum == 2 else signal_name(signum)


def _cause(e: BaseException, stopper: Stopper) -> str:
    """An exception in words for run.json; a bug names its type."""
    if isinstance(e, KeyboardInterrupt):
        return f"stopped by {_by(getattr(e, 'signum', stopper.signum))}"
    if isinstance(e, LoadcmpError):
        return str(e)
    return f"{type(e).__name__}: {e}"


