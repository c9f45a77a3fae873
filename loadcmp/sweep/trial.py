"""One trial of a sweep, read top to bottom in `run_trial`:

    plan_trial        spec + stack -> a DeploymentPlan (settings, ports, rendered configs; --tls: its certificate)
    start             the plan -> a running Deployment (or the reused one)
    describe_server   the label's set-up into run.json, once: configs, versions, images
    handshake         --tls: one handshake, checked: version, cipher, ALPN, the chain (`loadcmp.sweep.primer`),
                      its facts added to the label's set-up
    prime             a few requests: the page must be the page expected (`loadcmp.sweep.primer`)
    measure           warm-up, then the measured window, the server sampled at 1 Hz (--net: through its proxy,
                      started first, `loadcmp.net`; --event: its events fired in it, `loadcmp.events.fire`)
    collect_evidence  Docker's container state, the server's figures, what the servers logged
    judge             all of it -> one TrialRecord (status and reason in words)
    stop              remove the containers (unless the server is reused)

`Sweep` is what the trials of one sweep share; `loadcmp.sweep.runner` sets it up, runs the
trials in order and stores each as it ends.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .. import protocols
from ..lab import containers, dockerhost, planning, render
from ..lab.certs import RunCA
from ..observe import evidence, ownlogs
from ..observe.tracelogs import TraceLines, read_trace_lines
from ..events import fire
from ..facts import EventDoc
from ..observe.apimetrics import ApiSampler
from ..errors import DockerUnavailable, LabError
from ..lab.containers import Deployment
from ..load.driver import Live, LoadSpec, now
from ..load.record.saturation import Machine, add_advice
from ..load.record.summary import note_ramp_cut, result_doc, timeline_rows
from ..load.target import Target, TlsOptions, make_target
from ..load.run.workers import SPAWN_DELAY, Fleet, Stopper, run_load
from ..load.pacing import pacing_of
from ..net.conditions import parse_net
from ..net.path import NetPath, add_net, maybe_path, seen_words
from ..observe.metrics import Sampler, summarize
from ..observe.statuspages import leave_out_unanswered, unmeasured
from .primer import KEPT_PATIENCE_S, handshake, negotiate, prime, wrong_protocol
from . import tracing
from ..records import (ContainerState, HistogramDoc, KernelDoc, LoadSummary, ServerInfo, ServerMetrics,
                       TrialRecord, TrialStatus)
from ..experiment.spec import RunSpec
from ..experiment import journeys
from ..experiment.apps import overrides_for, stack_for
from ..experiment.eventspec import events_for
from ..traffic.sessions import prime_journeys
from ..store.writer import Row, RunWriter, Watch
from ..units import cpu_list

if TYPE_CHECKING:
    from docker import DockerClient


@dataclass(frozen=True)
class Planned:
    """One trial of the sweep."""

    level: int
    trial: int
    server: str
    """The server's label (a stack's name, or a variant's)."""
    keepalive: bool
    label: str
    page: str
    proto: str = protocols.DEFAULT
    """The protocol loaded (`--proto`), a row of `loadcmp.protocols`: h1, h2, h2c or h3."""


@dataclass
class SweepHooks:
    """Hooks the console uses to show where the sweep is (all optional)."""

    trial_start: Callable[[Planned, int, int, float], None] = lambda p, i, n, d: None
    live: Callable[[Live], None] = lambda lv: None
    trial_end: Callable[[Planned, TrialRecord], None] = lambda p, rec: None
    say: Callable[[str], None] = lambda m: None
    sample: Callable[[Row], None] | None = None
    """Each server row as the sampler keeps it (the live page), from the sampler's thread."""
    stored: Watch | None = None
    """The results folder's writer after each change (`RunWriter.watch`: the live page)."""
    event: fire.Told | None = None
    """Each --event as it is fired and as it ends (the live page), from the event's thread."""


@dataclass
class Sweep:
    """What the trials of one sweep share, set up once by `runner.open_sweep`."""

    spec: RunSpec
    client: DockerClient
    images: dict[str, str]
    run_id: str
    writer: RunWriter
    stopper: Stopper
    progress: SweepHooks
    fleet: Fleet | None = None
    """--cluster: the Dask cluster the loads run on (open for the whole sweep)."""
    host: dockerhost.DockerHost = planning.LOCAL
    """--docker-host: the engine the stacks run on, and where the clients reach them."""
    reused: dict[str, Deployment] = field(default_factory=dict)
    """--reuse-server: the deployment of each label, kept across trials."""
    problems: list[str] = field(default_factory=list)
    """What went wrong, in words, for run.json's `problems`."""
    ca: RunCA | None = None
    """--tls: the run's CA (its certificate in the results folder's tls/ca.pem); None: no label serves https."""


def note_problem(sweep: Sweep, message: str) -> None:
    """A problem of the run: kept for run.json and said at once."""
    sweep.problems.append(message)
    sweep.progress.say(message)


@dataclass(frozen=True)
class Measurement:
    """What the client and the sampler saw in one measured window."""

    summary: LoadSummary
    latency_hist: HistogramDoc
    service_hist: HistogramDoc
    timeline: list[Row]
    samples: list[Row]
    sampler_warnings: list[str]
    window: tuple[float, float]
    """The measured window on the wall clock (epoch seconds), the clock Docker stamps logs with."""
    page_hists: dict[str, HistogramDoc] = field(default_factory=dict)
    """A load of several pages (a mix): each page's latency histogram."""
    kernel: KernelDoc | None = None
    """The kernel's counters' scope and somaxconn, read once (`observe.kernel`); None: not read."""
    events: list[EventDoc] = field(default_factory=list)
    """--event: what each event fired in the window did (`loadcmp.events.fire`)."""


@dataclass(frozen=True)
class Evidence:
    """The server's side after the load: Docker's word, its figures, its logs, the limits they show."""

    containers: dict[str, ContainerState]
    server: ServerMetrics
    exit_log: str | None
    """The last log lines when a container exited during the load."""
    found: evidence.Causes


@dataclass(frozen=True)
class TrialOutcome:
    """A finished trial: its record and its rows for the two tables."""

    record: TrialRecord
    timeline: list[Row]
    samples: list[Row]
    trace: TraceLines | None = None
    """--trace: the servers' trace lines of the window, joined once the trial is stored (`tracing.join_trial`)."""


def run_trial(sweep: Sweep, p: Planned, spec: RunSpec) -> TrialOutcome | None:
    """One trial of `spec` (the sweep's, or a capacity probe's), step by step; None when a stop request came
    before the load."""
    dep = sweep.reused.get(p.label)
    kept, ready_s = dep is not None, None
    if dep is None:
        try:
            dep, ready_s = start(sweep, plan_trial(spec, p, sweep.host, sweep.ca))
        except DockerUnavailable:
            raise  # the engine is gone: the run ends, not only this trial
        except LabError as e:
            return TrialOutcome(not_started(spec, p, f"server did not start: {e}"), [], [])
        if spec.reuse_server:
            sweep.reused[p.label] = dep
    try:
        if sweep.stopper.requested:
            return None
        try:
            describe_server(sweep, p, dep)
            seen = handshake(dep, patience=KEPT_PATIENCE_S if kept else 0.0, proto=p.proto)
            if seen is not None:
                sweep.writer.add_server_tls(p.label, seen)
            pages, exact = spec.traffic.primed(p.page)  # each page the traffic sends (a mix's all)
            for page in pages:
                prime(dep, page, patience=KEPT_PATIENCE_S if kept else 0.0, exact=exact)
            spoke = negotiate(dep, p.proto) or p.proto
            sweep.writer.add_server_proto(p.label, p.proto, spoke)
            if spoke != p.proto:  # it speaks another protocol: this trial would measure the wrong one
                sweep.reused.pop(p.label, None)
                return TrialOutcome(not_started(spec, p, wrong_protocol(dep, p.proto, spoke), "wrong_protocol"), [], [])
            prime_journeys_of(dep, p, spec)
        except LabError as e:  # it does not answer: this trial is lost, not the sweep
            if sweep.reused.pop(p.label, None) is not None:
                stop(sweep, dep)  # a kept server gone bad: the next level starts a fresh one
            why = f"{e}" + (" (kept from the level before)" if kept else "")
            return TrialOutcome(not_started(spec, p, why), [], [])
        if sweep.stopper.requested:
            return None
        m = measure(sweep, dep, p, spec)
        found = collect_evidence(spec, dep, m)
        lines = read_trace_lines(dep) if tracing.traced(spec, p.server) else None
        return TrialOutcome(judge(spec, p, dep, ready_s, m, found), m.timeline, m.samples, lines)
    finally:
        if not spec.reuse_server:
            stop(sweep, dep)


def plan_trial(spec: RunSpec, p: Planned, host: dockerhost.DockerHost = planning.LOCAL,
               ca: RunCA | None = None) -> render.DeploymentPlan:
    """The server of this trial as a plan: settings, free ports, rendered configs, limits; https with a
    certificate of the run's CA (`ca`) when its label runs with --tls."""
    stack, app = stack_for(spec, p.server, p.page)  # the app's pages on the app, other pages without it
    return planning.plan_deployment(stack, cpus=spec.server_cpus, memory=spec.server_memory,
                                    overrides={**overrides_for(spec, p.server, p.page),
                                               **tracing.trace_override(spec, p.server)}, host=host,
                                    www=Path(spec.www) if spec.www else None, own=spec.own_for(p.server), app=app,
                                    tls=ca if spec.tls_for(p.server) else None)


def start(sweep: Sweep, plan: render.DeploymentPlan) -> tuple[Deployment, float]:
    """Start the plan's containers and wait until they answer; also how long that took."""
    t0 = now()
    dep = containers.up(plan, run_id=sweep.run_id, client=sweep.client, images=sweep.images, host=sweep.host)
    leave_out_unanswered(dep)
    return dep, round(now() - t0, 3)


def describe_server(sweep: Sweep, p: Planned, dep: Deployment) -> None:
    """Store a label's set-up the first time it runs: configs, versions, images, limits (what its TLS
    handshake gave is added after it, `RunWriter.add_server_tls`)."""
    if sweep.writer.has_server(p.label):
        return
    stack = dep.stack
    info = ServerInfo(
        stack=stack.name, description=stack.description, php_api=stack.php_api, workers=stack.workers,
        settings=dep.settings, configs=dep.plan.config_files(), versions=dep.versions(), image_ids=dep.image_ids,
        cpus=dep.plan.cpus, memory_bytes=dep.plan.memory, keepalive=p.keepalive, page=p.page)
    if stack.busy_limit:
        info["busy_limit"] = stack.busy_limit
    if states := {col: said for page in dep.status_pages.values() for col, said in page.states}:
        info["states"] = states  # the columns that count connections by state, in words (report.states)
    if stack.goaway_after and protocols.get(p.proto).multiplexed:  # GOAWAY closes a connection of streams
        info["goaway_after"] = stack.goaway_after
    if dep.plan.app:
        info["app"] = dep.plan.app.name
    if dep.plan.own:
        info["own_configs"] = dep.plan.own
        info["unmeasured"] = unmeasured(stack, dep.unmeasured) + [g.words() for g in ownlogs.unreadable(dep)]
        sweep.progress.say(f"{p.label} runs your own " + ", ".join(f"{k} ({v})" for k, v in dep.plan.own.items())
                           + ("; not measured: " + "; ".join(info["unmeasured"]) if info["unmeasured"] else ""))
    sweep.writer.add_server(p.label, info)


def measure(sweep: Sweep, dep: Deployment, p: Planned, spec: RunSpec) -> Measurement:
    """Warm-up, then the measured window, with the server sampled at 1 Hz."""
    target = make_target(f"{dep.plan.scheme}://{dep.host.address}:{dep.port}{p.page}", keepalive=p.keepalive,
                         resolve=False, tls=TlsOptions(cafile=dep.plan.cafile, resume=spec.tls_resume), proto=p.proto,
                         streams=spec.streams_for(p.proto))
    net = spec.net_for(p.server)
    with maybe_path(parse_net(net) if net else None, target, spec.client_cpus) as netp:  # --net: the proxy first
        if netp is not None:
            sweep.progress.say(f"{p.label}: --net {net}, {seen_words(netp)}")
        return _window(sweep, dep, p, spec, target, netp)


def _window(sweep: Sweep, dep: Deployment, p: Planned, spec: RunSpec, target: Target,
            netp: NetPath | None) -> Measurement:
    """The load to `target` (through `netp`'s proxy, when given), its warm-up and its window, the server sampled."""
    schedule = spec.schedule_for(p.level)
    sent = target if netp is None else netp.route(target)  # --net: every page (a mix's, a log's) goes by the path
    pages = spec.traffic.pages(sent)  # several pages (a mix, a log) in one sequence; the loops see only these
    traffic = spec.traffic.plan(p.level, p.trial, journeys.shipped(spec.app), p.proto)
    load = LoadSpec(sent, schedule, spec.duration, warmup=spec.warmup, timeout=spec.timeout, engine=spec.engine,
                    pages=pages, traffic=traffic, trace=spec.trace_share_for(p.server),
                    pacing=pacing_of(spec.think, spec.send_rate, spec.read_rate))
    start_at = now() + (0.5 if spec.workers == 1 and sweep.fleet is None else SPAWN_DELAY)
    keys = {"server": p.label, "level": p.level, "trial": p.trial}
    since = time.time() - now() + start_at + spec.warmup  # Docker stamps log lines on the wall clock
    sampler = (ApiSampler if dep.host.remote else Sampler)(dep, start_at + spec.warmup, keys, math.ceil(spec.duration),
                                                           on_row=sweep.progress.sample, warmup=spec.warmup)
    planned = fire.plan(events_for(spec.events, p.server), dep.stack, spec.duration)
    firer = fire.Firer(dep, planned, start_at + spec.warmup, since, told=sweep.progress.event)
    try:  # the events' timer and the proxy's watch end whatever way the load or the sampler ends
        if netp is not None:  # --net: the proxy watched over the window
            netp.watch_from(start_at + spec.warmup)
        try:
            sampler.start()
            firer.start()
            # the command owns SIGINT and calls sweep.stopper.stop(): the load installs no handler
            result = run_load(load, workers=spec.workers, cpus=spec.client_cpus, live=sweep.progress.live,
                              stopper=sweep.stopper, start_at=start_at, fleet=sweep.fleet)
        finally:
            samples = sampler.stop()
    finally:
        if netp is not None:
            netp.end_window()
        fired = firer.finish()
    summary = result_doc(result, {
        "schedule": {**schedule.describe(), "keepalive": p.keepalive},
        "engine": "journey (aiohttp)" if traffic else spec.engine, **(traffic.describe() if traffic else {}),
        "workers": sweep.fleet.size if sweep.fleet is not None else spec.workers, "url": target.url,
        **({"lost": result.lost} if result.lost else {}),
        **({"pacing": load.pacing.describe()} if load.pacing is not None else {})})
    note_ramp_cut(summary, schedule, spec.warmup)
    if result.traced is not None:  # --trace: the trial's rows added to requests.parquet (docs/tracing.md)
        summary["traced_bytes"] = sweep.writer.add_requests(result.traced, p.label, p.level, p.trial)
    if netp is not None:
        add_net(summary, netp.facts(summary["completed"]))
    cast(dict[str, Any], summary).update(spec.traffic.result(summary, spec.warmup, [s.dropped for s in result.seconds]))
    # the servers' CPUs are this machine's only on this machine's engine
    server_cpus = 0 if dep.host.remote else len(cpu_list(spec.server_cpus)) if spec.server_cpus else None
    add_advice(summary, Machine(os.cpu_count() or 1, server_cpus, max(1, len(result.client_use)), p.keepalive))
    return Measurement(
        summary=summary,
        latency_hist=result.latency().to_dict(),
        service_hist=result.service().to_dict(),
        timeline=[{**keys, **row} for row in timeline_rows(result)],
        samples=samples,
        # the sampler keeps going past a bad sample and says so (metrics.Sampler.warnings)
        sampler_warnings=list(sampler.warnings),
        window=(since, since + summary["duration_s"] + summary.get("teardown_s", 0.0) + evidence.LOG_LAG),
        page_hists={name: result.page_latency(j).to_dict() for j, name in enumerate(result.pages)},
        kernel=sampler.kernel.facts if sampler.kernel.path is not None else None,
        events=fired,
    )


def prime_journeys_of(dep: Deployment, p: Planned, spec: RunSpec) -> None:
    """With journeys, each is walked once before the load: one that cannot complete stops the run, its step
    named (a PrimerError), rather than measuring failures."""
    walks = spec.traffic.walks(p.level, journeys.shipped(spec.app))
    if walks is not None:
        target = make_target(f"{dep.plan.scheme}://{dep.host.address}:{dep.port}/", resolve=False,
                             tls=TlsOptions(cafile=dep.plan.cafile))
        prime_journeys(walks, target, spec.timeout, p.label)


def collect_evidence(spec: RunSpec, dep: Deployment, m: Measurement) -> Evidence:
    """Docker's state of each container, the server's figures, and the limits its logs,
    status pages and OOM kills show (before the containers stop: their logs go with them)."""
    states = dep.state()
    containers = {name: ContainerState(Status=s.get("Status"), ExitCode=s.get("ExitCode"),
                                       OOMKilled=s.get("OOMKilled"))
                  for name, s in states.items()}
    exited = any(c["Status"] != "running" for c in containers.values())
    stack = dep.stack
    limits = {c.peak: [key, dep.settings[key]] for c in stack.causes
              if c.peak and (key := stack.setting_of(c)) is not None and key in dep.settings}
    server = summarize(m.samples, [r.name for r in stack.roles if r.apart], limits, m.kernel)
    found = evidence.examine(dep, m.window, m.summary["failures"], m.samples, server.get("oom_kills", 0),
                             spec.server_memory, server.get("kernel"),
                             slow["over_1s"] if (slow := m.summary.get("slow_connects")) else 0)
    return Evidence(containers, server, "; ".join(dep.exit_notes(states)) if exited else None, found)


def judge(spec: RunSpec, p: Planned, dep: Deployment, ready_s: float | None, m: Measurement,
          ev: Evidence) -> TrialRecord:
    """The trial's record: its status and, in words, why it is not `ok`."""
    status: TrialStatus = "ok"
    reasons: list[str] = []
    if any(c["OOMKilled"] for c in ev.containers.values()):
        status = "oom"
        reasons.append("the server was killed for memory (OOMKilled)")
    elif ev.exit_log is not None:
        status = "server_died"
        reasons.append(f"the server exited during the run: {ev.exit_log}")
    oom_kills = ev.server.get("oom_kills")
    if oom_kills:
        status = "oom" if status == "ok" else status
        reasons.append(f"{oom_kills} server process(es) OOM-killed at the memory cap")
    elif ev.server.get("mem_limit_hits") and spec.server_memory:
        reasons.append(f"the memory cap was reached {ev.server.get('mem_limit_hits')} times (reclaim, no kill)")
    if m.summary.get("lost"):
        status = "partial" if status == "ok" else status
        reasons += m.summary.get("lost", [])
    if m.summary["interrupted"]:
        status = "interrupted"
        reasons.append("interrupted")
    record = TrialRecord(
        server=p.label, level=p.level, trial=p.trial, stack=dep.stack.name, keepalive=p.keepalive, status=status,
        reason="; ".join(reasons) or None, page=p.page, ready_s=ready_s, result=m.summary,
        latency_hist=m.latency_hist, service_hist=m.service_hist, server_metrics=ev.server,
        container_state=ev.containers, window_start=round(m.window[0], 3),
    )
    if m.page_hists:
        record["page_hists"] = m.page_hists
    if "tls" in m.summary:  # https: what the handshakes negotiated and how many (None: plain http)
        record["tls"] = m.summary["tls"]
    if ev.found.log_evidence is not None:
        record["log_evidence"] = ev.found.log_evidence
    if ev.found.causes:
        record["causes"] = ev.found.causes
    warnings = [*m.summary["warnings"], *m.sampler_warnings, *ev.found.warnings, *fire.failures(m.events)]
    if m.events:  # kept beside the record's fields (records.py is full): read back by `facts.events_of`
        cast(dict[str, Any], record)["events"] = m.events
    if warnings:
        record["warnings"] = warnings
    return record


def not_started(spec: RunSpec, p: Planned, reason: str, status: TrialStatus = "server_failed") -> TrialRecord:
    """The record of a trial whose server did not start or answer, or spoke another protocol than the one asked
    (`wrong_protocol`); the sweep goes on."""
    return TrialRecord(server=p.label, level=p.level, trial=p.trial, stack=spec.stack_of(p.server),
                       keepalive=p.keepalive, status=status, reason=reason, page=p.page)


def stop(sweep: Sweep, dep: Deployment) -> None:
    """Remove the trial's containers; one that will not go is a problem of the run."""
    try:
        dep.stop()
    except LabError as e:
        note_problem(sweep, f"{e} (run `loadcmp down`)")
