"""A model server for capacity searches without Docker: trials as `sweep.trial.run_trial` returns them.

A server of capacity C answers a closed loop of L clients in 50 ms + 450 ms x L / C at the 99th
percentile (500 ms at C), a little slower trial after trial so that intervals have a width; above
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
from loadcmp.load.histogram import Histogram
from loadcmp.load.summary import latency_doc
from loadcmp.load.workers import Stopper
from loadcmp.records import LoadSummary, ServerInfo, TrialRecord
from loadcmp.store.writer import RunWriter, new_run_doc
from loadcmp.sweep.trial import Planned, Sweep, SweepHooks, TrialOutcome


@dataclass
class Model:
    capacity: dict[str, int]
    client_bound_from: dict[str, int] = field(default_factory=dict)
    interrupt_at: int | None = None
    """Send this process SIGINT during that trial (1-based), as Ctrl-C would."""
    runs: list[Planned] = field(default_factory=list)

    def __call__(self, sweep: Sweep, p: Planned) -> TrialOutcome | None:
        self.runs.append(p)
        if not sweep.writer.has_server(p.label):
            sweep.writer.add_server(p.label, ServerInfo(stack=p.server, cpus="1", keepalive=p.keepalive, page=p.page))
        interrupted = False
        if self.interrupt_at == len(self.runs):
            os.kill(os.getpid(), signal.SIGINT)  # the command's handler asks the stopper to stop
            interrupted = sweep.stopper.requested
        return TrialOutcome(self.trial(p, interrupted), [{"server": p.label, "level": p.level, "trial": p.trial,
                                                          "second": 0, "ok": 1}], [])

    def trial(self, p: Planned, interrupted: bool = False) -> TrialRecord:
        cap = self.capacity[p.server]
        load = p.level / cap
        p99 = (0.05 + 0.45 * load) * (1 + 0.01 * p.trial)
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
            rec["notes"] = [f"all php-fpm workers were busy (fpm.max_children 5) — the status page showed 5 of 5 "
                            f"busy; the failures were {refused:,} connect_refused" if refused else
                            "all php-fpm workers were busy (fpm.max_children 5) — the status page showed 5 of 5 busy"]
        return rec


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
