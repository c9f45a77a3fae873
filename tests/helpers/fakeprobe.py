"""A model server for capacity searches without Docker: trials as `sweep.trial.run_trial` returns them.

A server of capacity C answers a closed loop of L clients in 50 ms + 450 ms x L / C at the 99th
percentile (500 ms at C), 1 % slower and faster by turns so that intervals have a width (and narrow
with more trials, as they do around a steady mean); above
1.5 C it refuses connections. Beyond C its status page shows every worker busy and its CPU is
saturated, the evidence `observe.evidence` would have written. `client_bound_from` makes the client
the limit from that level on.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from loadcmp.experiment.capacity import CapacitySpec
from loadcmp.experiment.spec import RunSpec
from loadcmp.load.record.histogram import Histogram
from loadcmp.load.record.summary import latency_doc
from loadcmp.load.run.workers import Stopper
from loadcmp.records import CauseDoc, LoadSummary, ServerInfo, TrialRecord
from loadcmp.store.writer import RunWriter, new_run_doc
from loadcmp.sweep.trial import Planned, Sweep, SweepHooks, TrialOutcome


@dataclass
class Model:
    capacity: dict[str, int]
    client_bound_from: dict[str, int] = field(default_factory=dict)
    interrupt_at: int | None = None
    """Send this process SIGINT during that trial (1-based), as Ctrl-C would."""
    runs: list[Planned] = field(default_factory=list)

    def __call__(self, sweep: Sweep, p: Planned, spec: RunSpec) -> TrialOutcome | None:
        self.runs.append(p)
        if not sweep.writer.has_server(p.label):
            sweep.writer.add_server(p.label, ServerInfo(stack=p.server, cpus="1", keepalive=p.keepalive, page=p.page))
        interrupted = False
        if self.interrupt_at == len(self.runs):
            os.kill(os.getpid(), signal.SIGINT)  # the command's handler asks the stopper to stop
            interrupted = sweep.stopper.requested
        rec = self.trial(p, interrupted)
        return TrialOutcome(rec, seconds(rec), [])

    def trial(self, p: Planned, interrupted: bool = False) -> TrialRecord:
        cap = self.capacity[p.server]
        load = p.level / cap
        p99 = (0.05 + 0.45 * load) * (1 + 0.01 * (-1) ** p.trial)
        h = Histogram.of(np.linspace(p99 * 0.2, p99, 400))
        refused = 0 if load <= 1.5 else int(400 * (load - 1.5))
        ok = 400 if not interrupted else 150
        started = ok + refused
        bound = p.level >= self.client_bound_from.get(p.server, 10**12)
        result = LoadSummary(
            ok=ok, failed=refused, failures={"connect_refused": refused} if refused else {}, unfinished=0,
            started=started, dropped=0, completed=started, rps=ok / 5, completions_per_s=started / 5,
            failed_rate=refused / started, duration_s=5.0, bytes=ok * 1000, bytes_per_s=ok * 200,
            latency_ms=latency_doc(h), service_ms=latency_doc(h),
            webbench={"susceed": ok, "failed": refused, "pages_per_min": ok * 12, "bytes_per_s": ok * 200.0},
            interrupted=interrupted, warnings=[], client_bound=bound,
            client_bound_reason="the client was busy 97% of the time" if bound else None)
        rec = TrialRecord(server=p.label, level=p.level, trial=p.trial, stack=p.server, keepalive=p.keepalive,
                          status="interrupted" if interrupted else "ok", reason="interrupted" if interrupted else None,
                          page=p.page, result=result, latency_hist=h.to_dict(),
                          server_metrics={"cpu_pct": min(99.0, 60 + 40 * load), "mem_peak_bytes": 50 * 2**20})
        if load > 1:
            rec["causes"] = [CauseDoc(cause="fpm.max_children", phrase="all php-fpm workers were busy",
                                      setting="fpm.max_children", value=5, peak=5.0,
                                      peak_said="the status page showed {limit} of {limit} busy",
                                      kinds=["connect_refused"])]
        return rec


def seconds(rec: TrialRecord) -> list[dict[str, object]]:
    """timeline.parquet's rows of a model trial: its counts spread evenly over five seconds."""
    r = rec["result"]
    lat = r["latency_ms"]
    keys = {"server": rec["server"], "level": rec["level"], "trial": rec["trial"]}
    return [{**keys, "second": i, "started": r["started"] // 5, "dropped": 0, "ok": r["ok"] // 5,
             **{k: n // 5 for k, n in r["failures"].items()}, "failed": r["failed"] // 5,
             "completed": r["completed"] // 5, "bytes": r["bytes"] // 5, "inflight": rec["level"],
             "p50_ms": lat["p50"], "p90_ms": lat["p90"], "p99_ms": lat["p99"], "max_ms": lat["max"]}
            for i in range(5)]


def fake_sweep(spec: RunSpec, out: Path, name: str = "capacity-test") -> Sweep:
    """A sweep with its results folder and no Docker: what `runner.open_sweep` gives, bar the engine."""
    doc = new_run_doc("capacity", name, spec.to_dict(), {"cores": 2}, "test")
    return Sweep(spec, None, {}, "run-test", RunWriter.create(out, name, doc), Stopper(), SweepHooks())


def search_folder(model: Model, spec: RunSpec, cap: CapacitySpec, out: Path) -> Path:
    """A capacity search of `spec`'s servers on the model, stored as a results folder."""
    from loadcmp.sweep.capacity import search_all

    sweep = fake_sweep(cap.probe_spec(spec, cap.start), out)
    status = search_all(sweep, cap, run=model)
    sweep.writer.finish(status, sweep.problems)
    return sweep.writer.path


FIXTURE_SLO = "p99<500ms, failed_rate<1%"


def make_fixture(out: Path) -> Path:
    """tests/fixtures/capacity-2x: nginx (capacity 1,000, its client the limit from 800) and apache-prefork
    (capacity 90) searched on the model, as `loadcmp capacity` stores it, the paper's finding judged beside."""
    from loadcmp.experiment.capacity import CapacitySpec
    from loadcmp.store.reader import load_results
    from loadcmp.store.writer import save_findings
    from loadcmp.verdicts.findings import parse_findings
    from loadcmp.verdicts.judge import evaluate
    from loadcmp.verdicts.slo import parse_slo

    spec = RunSpec(servers=("nginx", "apache-prefork"), duration=5.0, server_cpus="1", client_cpus="0",
                   name="capacity-2x")
    cap = CapacitySpec(parse_slo(FIXTURE_SLO), max=19936, max_reason="the open-file limit (20,000 per process, "
                       "ulimit -Hn) lets 1 client process hold 19,936 connections")
    path = search_folder(Model({"nginx": 1000, "apache-prefork": 90}, {"nginx": 800}), spec, cap, out)
    claim = [{"claim": "Nginx holds far more clients than Apache.",
              "check": "nginx:capacity > 2 * apache-prefork:capacity"}]
    save_findings(path, [r.to_doc() for r in evaluate(load_results(path), parse_findings(claim))])
    return path
