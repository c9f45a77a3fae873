"""`loadcmp bench URL`: one load against any URL, printed and optionally stored."""

from __future__ import annotations

import json
import platform
import signal
import time
from typing import Any

from . import __version__
from .console import LiveLine, err, out, print_result
from .errors import UsageError
from .load.driver import LoadSpec
from .load.summary import result_doc, timeline_rows
from .load.target import make_target
from .load.workers import Stopper, run_load
from .store import RunWriter
from .units import parse_cpus, parse_duration, parse_levels


def run_bench(*, url: str, clients: str, duration: str, schedule: str, keepalive: bool, ramp_up: str | None,
              pace: str | None, rate: float | None, max_inflight: int | None, warmup: str, req_timeout: str,
              method: str, headers: tuple[str, ...], body: str | None, http10: bool, engine: str, workers: int,
              client_cpus: str | None, out_dir: str | None, as_json: bool) -> int:
    """Returns the exit code (0, or 130 when interrupted)."""
    from .cli import build_schedule

    levels = parse_levels(clients)
    if len(levels) != 1:
        raise UsageError("bench takes one concurrency level; `loadcmp run` sweeps several")
    dur = parse_duration(duration, "-t/--time", allow_zero=False)
    sched = build_schedule(schedule, levels[0], ramp_up, pace, rate, max_inflight)
    if workers < 1:
        raise UsageError("--workers must be >= 1")
    target = make_target(url, method=method, headers=headers, body=body, http10=http10, keepalive=keepalive)
    spec = LoadSpec(target, sched, dur, warmup=parse_duration(warmup, "--warmup"),
                    timeout=parse_duration(req_timeout, "--timeout", allow_zero=False), engine=engine)
    cpus = parse_cpus(client_cpus)
    stopper = Stopper()
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    old_sigint = signal.signal(signal.SIGINT, lambda *_: stopper.stop())  # the command owns Ctrl-C
    try:
        with LiveLine(f"{url} ") as live:
            result = run_load(spec, workers=workers, cpus=cpus, live=live, stopper=stopper)
    finally:
        signal.signal(signal.SIGINT, old_sigint)
    doc: dict[str, Any] = dict(result_doc(result, {
        "url": url, "engine": engine, "workers": workers, "schedule": {**sched.describe(), "keepalive": keepalive},
        "timeout_s": spec.timeout, "warmup_s": spec.warmup, "clients": levels[0],
    }))
    doc["timeline"] = timeline_rows(result)
    hist = result.latency()
    if out_dir:
        path = store_bench(out_dir, spec, doc, hist.to_dict(), started)
        err.print(f"stored in {path}")
    if as_json:
        out.file.write(json.dumps(doc, indent=2) + "\n")
    else:
        print_result(doc, hist)
    if result.interrupted:
        err.print("[yellow]interrupted[/yellow]: the numbers above cover the measured part only")
        return 130
    return 0


def store_bench(out_dir: str, spec: LoadSpec, doc: dict[str, Any], hist: dict[str, Any], started: str) -> str:
    """A bench result as a one-trial results folder, readable by `loadcmp report`."""
    server = f"{spec.target.host}:{spec.target.port}"
    run = {
        "kind": "bench",
        "name": f"bench {spec.target.url}",
        "loadcmp_version": __version__,
        "started": started,
        "spec": {"url": spec.target.url, "schedule": doc["schedule"], "duration_s": spec.duration,
                 "warmup_s": spec.warmup, "timeout_s": spec.timeout, "engine": spec.engine, "workers": doc["workers"]},
        "machine": {"kernel": platform.release(), "python": platform.python_version()},
        "servers": {server: {"url": spec.target.url}},
    }
    w = RunWriter.create(out_dir, f"bench-{spec.target.host}", run)
    summary = {k: v for k, v in doc.items() if k != "timeline"}
    trial = {"server": server, "level": doc["clients"], "trial": 1,
             "status": "interrupted" if doc["interrupted"] else "ok", "result": summary, "latency_hist": hist}
    tl = [{"server": server, "level": doc["clients"], "trial": 1, **r} for r in doc["timeline"]]
    w.add_trial(trial, tl, [])
    w.finish("interrupted" if doc["interrupted"] else "complete")
    return str(w.path)
