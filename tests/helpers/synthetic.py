"""Made-up results folders, written by the store's own writer, for the catalog's tests and its benchmark
(`bench/catalog_speed.py` imports this file by its path).

`make_runs` writes `n` runs an hour apart, each a few labels x levels x trials with a little
noise, and, from run `step_at` on, one metric moved by `step` (a fraction: -0.3 is 30 %
less) with a set-up difference at that run (`setting` set to `setting_after`). It adds
broken, abandoned and running folders on request. The figures hang together as a closed
loop's do: req/s x latency = clients, the server's CPU per request fixed, memory flat.
A plan also says what was sent, as run.json keeps it: the protocol asked (and negotiated), TLS, `-m`,
the traffic's flat keys (`traffic.source.DEFAULTS`: a mix, a journey, a replay and its speed) and the app;
`start` numbers runs on from an earlier call's, so that runs of several plans share one root.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

DURATION = 4.0
"""Measured seconds per made-up trial (its per-second tables hold this many rows)."""


@dataclass(frozen=True)
class Plan:
    """What the made-up runs are."""

    labels: tuple[str, ...] = ("nginx",)
    levels: tuple[int, ...] = (10,)
    trials: int = 3
    page: str = "/index.php"
    rps: float = 1000.0
    noise: float = 0.02  #: the trials' relative standard deviation
    metric: str = "rps"  #: what the step moves: rps (latency follows), p99, cpu_per_request or mem_peak
    setting: str = "fpm.max_children"
    before: int = 8
    after: int = 4
    proto: str = "h1"  #: --proto, stored as each label's `proto` and `negotiated`
    negotiated: str = ""  #: what the server spoke ("": as asked)
    tls: bool = False
    streams: int = 1  #: -m
    traffic: tuple[tuple[str, Any], ...] = ()  #: run.json's flat traffic keys given, e.g. (("mix", {...}), ("seed", 7))
    app: str | None = None
    duration: float = DURATION  #: the spec's measured seconds (the per-second tables keep DURATION rows)
    pages: tuple[tuple[str, float], ...] = ()  #: a load of several pages: each trial's ok split by these weights


def _config(setting: str, value: Any) -> str:
    return f"[www]\npm = static\npm.{setting.split('.')[-1]} = {value}\nlisten = 9000\n"


def _server(label: str, plan: Plan, value: Any) -> dict[str, Any]:
    info = {"stack": label, "description": f"{label}, made up", "settings": {plan.setting: value,
            "php.opcache": True}, "configs": {"web/php-fpm.conf": _config(plan.setting, value),
            "web/nginx.conf": "worker_processes auto;\n"}, "versions": {"nginx": "nginx/1.22.1", "php": "PHP 8.2.0"},
            "keepalive": False, "page": plan.page, "cpus": "1", "memory_bytes": None,
            "proto": plan.proto, "negotiated": plan.negotiated or plan.proto}
    return {**info, **({"app": plan.app} if plan.app else {})}


def _latency(ms: float) -> dict[str, float]:
    return {"p50": ms, "p75": ms * 1.1, "p90": ms * 1.3, "p95": ms * 1.5, "p99": ms * 2, "p99_9": ms * 3,
            "max": ms * 4, "min": ms / 3, "mean": ms * 1.05, "stdev": ms / 4}


def _trial(label: str, level: int, k: int, plan: Plan, factor: dict[str, float], rng: random.Random) -> Any:
    rps = plan.rps * factor["rps"] * (1 + plan.noise * rng.gauss(0, 1))
    ok = int(rps * DURATION)
    p50 = 1000 * level / rps * factor["p99"] * (1 + plan.noise * rng.gauss(0, 1))
    cpu_ms = 0.8 * factor["cpu_per_request"] * (1 + plan.noise * rng.gauss(0, 1))
    result = {"ok": ok, "failed": 0, "failures": {}, "unfinished": level, "started": ok + level, "dropped": 0,
              "completed": ok, "rps": round(rps, 3), "completions_per_s": round(rps, 3), "failed_rate": 0.0,
              "duration_s": DURATION, "bytes": ok * 1000, "bytes_per_s": rps * 1000, "latency_ms": _latency(p50),
              "service_ms": _latency(p50), "webbench": {"susceed": ok, "failed": 0, "pages_per_min": rps * 60,
                                                        "bytes_per_s": rps * 1000},
              "interrupted": False, "warnings": []}
    if plan.pages:
        result["pages"] = _split(ok, plan.pages, result["latency_ms"])
    metrics = {"cpu_pct": round(rps * cpu_ms / 10, 3), "mem_peak_bytes": int(40e6 * factor["mem_peak"]
                                                                              * (1 + plan.noise * rng.gauss(0, 1))),
               "samples": int(DURATION)}
    return {"server": label, "level": level, "trial": k, "stack": label, "keepalive": False, "status": "ok",
            "reason": None, "page": plan.page, "result": result, "server_metrics": metrics}


def _split(ok: int, weights: tuple[tuple[str, float], ...], latency: dict[str, float]) -> list[dict[str, Any]]:
    """A load's `pages` (`records.PageSummary`): its ok requests split by weight, the last page taking the rest."""
    total, out, left = sum(w for _, w in weights), [], ok
    for i, (page, w) in enumerate(weights):
        n = left if i == len(weights) - 1 else int(ok * w / total)
        left -= n
        out.append({"page": page, "ok": n, "failed": 0, "failures": {}, "completed": n, "share": round(n / ok, 4),
                    "rps": round(n / DURATION, 3), "bytes": n * 1000, "status_codes": {"200": n},
                    "latency_ms": latency})
    return out


def _seconds(t: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A trial's per-second rows, as timeline.parquet and server.parquet keep them (a few columns)."""
    keys = {"server": t["server"], "level": t["level"], "trial": t["trial"]}
    per_s = t["result"]["ok"] // int(DURATION)
    timeline = [{**keys, "second": s, "started": per_s, "ok": per_s, "failed": 0, "completed": per_s,
                 "p50_ms": t["result"]["latency_ms"]["p50"], "p99_ms": t["result"]["latency_ms"]["p99"]}
                for s in range(int(DURATION))]
    server = [{**keys, "second": s, "cpu_pct": t["server_metrics"]["cpu_pct"],
               "mem_bytes": t["server_metrics"]["mem_peak_bytes"]} for s in range(int(DURATION))]
    return timeline, server


def run_doc(i: int, plan: Plan, stepped: bool, step: float, rng: random.Random) -> dict[str, Any]:
    """The run.json of made-up run `i` (`stepped`: from the step on)."""
    started = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(hours=i)
    value = plan.after if stepped else plan.before
    factor = {m: 1.0 for m in ("rps", "p99", "cpu_per_request", "mem_peak")}
    if stepped:
        factor[plan.metric] = 1 + step  # a step in req/s moves the latency too: a closed loop's wait is level / req/s
    trials = [_trial(label, level, k, plan, factor, rng)
              for k in range(1, plan.trials + 1) for level in plan.levels for label in plan.labels]
    spec = {"servers": list(plan.labels), "stacks": {x: x for x in plan.labels}, "levels": list(plan.levels),
            "duration": plan.duration, "warmup": 1.0, "page": plan.page, "schedule": "closed", "keepalive": [False],
            "timeout": 10.0, "engine": "fast", "workers": 1, "trials": plan.trials, "name": f"synthetic-{i}",
            "tls": plan.tls, "protos": [plan.proto], "streams": plan.streams, "app": plan.app, **dict(plan.traffic)}
    return {"format": 1, "kind": "run", "name": f"synthetic-{i}", "status": "complete", "spec": spec,
            "loadcmp_version": "0.1.0", "started": started.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "run_id": f"synthetic{i:06d}", "ended": (started + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": {"kernel": "6.1.0", "cpu_model": "Made-up CPU", "cores": 2, "hostname": "synthetic"},
            "servers": {x: _server(x, plan, value) for x in plan.labels}, "trials": trials, "problems": []}


def write_run(folder: Path, doc: dict[str, Any]) -> Path:
    """A results folder for `doc`, written by `store.writer.RunWriter` as a run writes one."""
    from loadcmp.store.writer import RunWriter

    folder.mkdir(parents=True, exist_ok=True)
    timeline, server = [], []
    for t in (t for t in doc["trials"] if t.get("result")):  # a trial that measured nothing has no seconds
        rows = _seconds(t)
        timeline += rows[0]
        server += rows[1]
    RunWriter(folder, doc, timeline, server).flush()  # type: ignore[arg-type]
    return folder


def make_runs(root: Path, n: int, *, step_at: int | None = None, step: float = 0.0, seed: int = 0,
              plan: Plan | None = None, broken: int = 0, abandoned: int = 0, running: int = 0, start: int = 0,
              **fields: Any) -> list[Path]:
    """`n` complete runs under `root` (oldest first, named so, numbered from `start`), a step from run number
    `step_at` on, and the
    extra folders asked for after them: broken (no run.json; not JSON; another format, in turn), abandoned
    (a `running` run whose process is gone) and running (owned by this process). `fields` are `Plan`'s, laid
    over `plan` (labels=("nginx", "apache"), levels=(10, 50), trials=2 ...). Returns the runs' folders."""
    plan = replace(plan or Plan(), **fields)
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    paths = [write_run(root / f"run-{i:05d}", run_doc(i, plan, step_at is not None and i >= step_at, step, rng))
             for i in range(start, start + n)]
    for j in range(broken):
        folder = root / f"broken-{j:03d}"
        folder.mkdir(exist_ok=True)
        if j % 3 == 1:
            (folder / "run.json").write_text('{"format": 1, "status": ')
        elif j % 3 == 2:
            (folder / "run.json").write_text(json.dumps({"format": 0, "status": "complete"}))
    for j, kind in [(j, "abandoned") for j in range(abandoned)] + [(j, "running") for j in range(running)]:
        _unfinished(root / f"{kind}-{j:03d}", run_doc(n + j, plan, False, 0.0, rng), kind == "running")
    return paths


def _unfinished(folder: Path, doc: dict[str, Any], alive: bool) -> None:
    """A run left `running`: by this process (alive) or by one that is gone (abandoned)."""
    from loadcmp.lab.provenance import this_host, this_process

    doc.update(status="running", owner=this_process() if alive else "999999999:1", host=this_host())
    doc.pop("ended", None)
    write_run(folder, doc)
