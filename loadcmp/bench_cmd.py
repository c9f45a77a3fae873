"""`loadcmp bench URL`: one load against any URL, printed and optionally stored."""

from __future__ import annotations

import json
import platform
import time
from typing import Any, cast

from . import __version__
from .console import LiveLine, err, out, print_result
from .errors import UsageError
from .load.engine import LoadSpec, make_target
from .load.summary import result_doc, timeline_rows
from .load.workers import Stopper, run_load
from .store import HistogramDoc, LoadSummary, save_bench
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
    with LiveLine(f"{url} ") as live:
        result = run_load(spec, workers=workers, cpus=cpus, live=live, stopper=stopper)
    doc = result_doc(result, {
        "url": url, "engine": engine, "workers": workers, "schedule": {**sched.describe(), "keepalive": keepalive},
        "timeout_s": spec.timeout, "warmup_s": spec.warmup, "clients": levels[0],
    })
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
    summary = cast(LoadSummary, {k: v for k, v in doc.items() if k != "timeline"})
    path = save_bench(out_dir, url=spec.target.url, label=f"{spec.target.host}:{spec.target.port}",
                      clients=doc["clients"], schedule=str(doc["schedule"]["kind"]),
                      keepalive=bool(doc["schedule"]["keepalive"]), duration=spec.duration, warmup=spec.warmup,
                      timeout=spec.timeout, engine=spec.engine, workers=doc["workers"], summary=summary,
                      latency_hist=cast(HistogramDoc, hist), timeline=doc["timeline"], started=started,
                      machine={"kernel": platform.release(), "python": platform.python_version()},
                      loadcmp_version=__version__)
    return str(path)
