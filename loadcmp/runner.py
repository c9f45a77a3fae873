"""One trial, and a sweep of servers x levels x trials (TechEmpower's discipline).

A trial: start the stack fresh -> ready -> primer (the page must be the page
expected) -> warm-up -> measured window with the server sampled at 1 Hz ->
stop. A sweep interleaves servers within each level (A B, then B A) so drift
spreads evenly, stores each trial as soon as it ends, and goes on past a
server that fails to start, dies or is OOM-killed, recording what happened.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import resource
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from . import __version__, lab
from . import stacks as st
from .errors import LabError, LoadError, PrimerError
from .load.driver import Live, LoadSpec, now
from .load.schedules import make_schedule
from .load.summary import result_doc, timeline_rows
from .load.target import make_target
from .load.workers import SPAWN_DELAY, Stopper, run_load
from .metrics import Sampler, summarize
from .spec import RunSpec
from .store import RunWriter
from .units import cpu_list, mem_total


@dataclass(frozen=True)
class Planned:
    """One trial of the sweep."""

    level: int
    trial: int
    server: str
    keepalive: bool
    label: str
    page: str


def plan(spec: RunSpec) -> list[Planned]:
    """Every variant at every level for every trial; order alternates per trial."""
    out: list[Planned] = []
    variants = spec.variants()
    for level in spec.levels:
        for trial in range(1, spec.trials + 1):
            order = variants if trial % 2 else list(reversed(variants))
            for server, ka, page in order:
                out.append(Planned(level, trial, server, ka, spec.label(server, ka, page), page))
    return out


def check_limits(spec: RunSpec) -> None:
    """Refuse up front a level the machine's open-file limit cannot hold."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        return
    for level in spec.levels:
        per = math.ceil(level / spec.workers) + 64
        if per > hard:
            need = math.ceil(level / max(1, hard - 64))
            raise LoadError(
                f"{level} clients need {per} open files per client process and this machine allows {hard}: "
                f"use --workers {need} (or more), or raise the hard limit (ulimit -Hn) as root"
            )


def default_pinning(spec: RunSpec, say: Callable[[str], None]) -> RunSpec:
    """On a 2-core machine: server on CPU 1, client on CPU 0, unless told otherwise."""
    if spec.server_cpus is None and spec.client_cpus is None and (os.cpu_count() or 1) == 2:
        say("2 CPUs: pinning the server to CPU 1 and the client to CPU 0 (set --server-cpus/--client-cpus to change)")
        return replace(spec, server_cpus="1", client_cpus="0")
    return spec


# --- primer ----------------------------------------------------------------------

PHP_ERRORS = ("Fatal error", "Parse error", "Warning</b>:", "Uncaught ")


def primer(dep: lab.Deployment, page: str, n: int = 3) -> None:
    """A few requests; the response must be the page, not an error page."""
    for _ in range(n):
        try:
            code, body = lab.http_get(dep.port, page, timeout=10)
        except OSError as e:
            raise PrimerError(f"{dep.stack.name}: GET {page} failed before the load started ({e})") from None
        text = body[:200000].decode(errors="replace")
        if code >= 400:
            raise PrimerError(f"{dep.stack.name}: GET {page} answered HTTP {code}, not the page; check --page")
        if page.split("?")[0].endswith(".php"):
            if "<?php" in text:
                raise PrimerError(f"{dep.stack.name}: GET {page} returned PHP source: PHP is not executing")
            bad = next((m for m in PHP_ERRORS if m in text), None)
            if bad:
                raise PrimerError(f"{dep.stack.name}: GET {page} returned a PHP error page ({bad.strip('<>/b:')})")
        if not body:
            raise PrimerError(f"{dep.stack.name}: GET {page} returned an empty body")


# --- machine and versions -------------------------------------------------------------


def machine_info(client: Any) -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = mem_total()
    docker_version = None
    with contextlib.suppress(Exception):
        docker_version = client.version().get("Version")
    somaxconn = None
    with contextlib.suppress(OSError, ValueError):
        somaxconn = int(open("/proc/sys/net/core/somaxconn").read())
    return {
        "kernel": platform.release(),
        "cpu_model": cpu,
        "cores": os.cpu_count(),
        "mem_total_bytes": mem,
        "docker_version": docker_version,
        "python": platform.python_version(),
        "nofile_hard": resource.getrlimit(resource.RLIMIT_NOFILE)[1],
        "somaxconn": somaxconn,
        "hostname": platform.node(),
    }


def git_commit() -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        r = subprocess.run(["git", "-C", str(st.project_root()), "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=5)
        if r.returncode == 0:
            return r.stdout.strip()
    return None


# --- a sweep ----------------------------------------------------------------------------


@dataclass
class Progress:
    """Hooks the console uses to show where the sweep is (all optional)."""

    trial_start: Callable[[Planned, int, int, float], None] = lambda p, i, n, d: None
    live: Callable[[Live], None] = lambda lv: None
    trial_end: Callable[[Planned, dict[str, Any]], None] = lambda p, rec: None
    say: Callable[[str], None] = lambda m: None


@dataclass
class SweepOutcome:
    path: str
    status: str
    problems: list[str] = field(default_factory=list)


def run_sweep(spec: RunSpec, progress: Progress | None = None, stopper: Stopper | None = None,
              images: dict[str, str] | None = None) -> SweepOutcome:
    """Run every planned trial and store each as it ends."""
    progress = progress or Progress()
    stopper = stopper or Stopper()
    check_limits(spec)
    spec = default_pinning(spec, progress.say)
    stacks = st.resolve_servers(list(spec.servers))
    client = lab.docker_client()
    if images is None:
        needed = list(dict.fromkeys(i for s in stacks for i in s.images))
        images = lab.build_images(client, needed, log=progress.say)
    run_id = lab.new_run_id()
    name = spec.name or "-".join(s.name for s in stacks)
    run_doc: dict[str, Any] = {
        "kind": "run",
        "name": name,
        "run_id": run_id,
        "description": spec.description,
        "spec": spec.to_dict(),
        "loadcmp_version": __version__,
        "git_commit": git_commit(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(client),
        "images": images,
        "servers": {},
    }
    writer = RunWriter.create(spec.out, name, run_doc)
    progress.say(f"results: {writer.path}")
    planned = plan(spec)
    problems: list[str] = []
    reused: dict[str, lab.Deployment] = {}
    status = "complete"
    try:
        for i, p in enumerate(planned):
            if stopper.requested:
                status = "interrupted"
                break
            progress.trial_start(p, i, len(planned), spec.duration + spec.warmup)
            rec, tl, srv = _one_trial(spec, p, client, images, run_id, writer, stopper, progress, reused)
            writer.add_trial(rec, tl, srv)
            progress.trial_end(p, rec)
            if rec["status"] not in ("ok",):
                problems.append(f"{p.label} at {p.level} clients, trial {p.trial}: {rec['reason']}")
            if rec["status"] == "interrupted":
                status = "interrupted"
                break
    except PrimerError as e:
        status = "failed"
        problems.append(str(e))
        writer.finish(status, problems=problems)
        raise
    except BaseException:
        status = "interrupted"
        writer.finish(status, problems=problems + ["stopped by an error or Ctrl-C"])
        raise
    finally:
        for d in reused.values():
            d.stop()
        lab.down(client, run_id)
    measured = [t for t in writer.run["trials"] if t.get("result")]
    if status == "complete" and planned and not measured:
        status = "failed"  # no server ever started: nothing was measured
    writer.finish(status, problems=problems)
    return SweepOutcome(str(writer.path), status, problems)


def _one_trial(spec: RunSpec, p: Planned, client: Any, images: dict[str, str], run_id: str, writer: RunWriter,
               stopper: Stopper, progress: Progress, reused: dict[str, lab.Deployment]
               ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    stack = st.get_stack(p.server)
    labels = {"server": p.label, "level": p.level, "trial": p.trial}
    rec: dict[str, Any] = {**labels, "stack": stack.name, "keepalive": p.keepalive, "page": p.page, "status": "ok",
                           "reason": None}
    key = p.label
    dep = reused.get(key) if spec.reuse_server else None
    fresh = dep is None
    t_up = now()
    if dep is None:
        try:
            dep = lab.up(stack, cpus=spec.server_cpus, memory=spec.server_memory, overrides=spec.settings,
                         run_id=run_id, client=client, images=images)
        except LabError as e:
            rec.update(status="server_failed", reason=f"server did not start: {e}")
            return rec, [], []
        if spec.reuse_server:
            reused[key] = dep
    rec["ready_s"] = round(now() - t_up, 3) if fresh else None
    try:
        if p.label not in writer.run["servers"]:
            writer.run["servers"][p.label] = {
                "stack": stack.name,
                "description": stack.description,
                "php_api": stack.php_api,
                "mpm": stack.mpm,
                "settings": dep.settings,
                "configs": dep.config_files(),
                "versions": dep.versions(),
                "image_ids": dep.image_ids,
                "cpus": spec.server_cpus,
                "memory_bytes": spec.server_memory,
                "keepalive": p.keepalive,
                "page": p.page,
            }
        primer(dep, p.page)
        target = make_target(f"http://127.0.0.1:{dep.port}{p.page}", keepalive=p.keepalive, resolve=False)
        sched = make_schedule(spec.schedule, p.level, ramp_up=spec.ramp_up, pace=spec.pace, rate=spec.rate,
                              max_inflight=spec.max_inflight)
        lspec = LoadSpec(target, sched, spec.duration, warmup=spec.warmup, timeout=spec.timeout, engine=spec.engine)
        start_at = now() + (0.5 if spec.workers == 1 else SPAWN_DELAY)
        sampler = Sampler(dep, start_at + spec.warmup, labels, math.ceil(spec.duration)).start()
        try:
            result = run_load(lspec, workers=spec.workers, cpus=spec.client_cpus, live=progress.live,
                              stopper=stopper, start_at=start_at)
        finally:
            srv_rows = sampler.stop()
        doc = result_doc(result, {"schedule": {**sched.describe(), "keepalive": p.keepalive}, "engine": spec.engine,
                                  "workers": spec.workers, "url": target.url})
        srv = summarize(srv_rows)
        state = dep.state()
        died = [n for n, s in state.items() if s.get("Status") != "running"]
        rec["result"] = doc
        rec["latency_hist"] = result.latency().to_dict()
        rec["service_hist"] = result.service().to_dict()
        rec["server_metrics"] = srv
        rec["container_state"] = {n: {k: s.get(k) for k in ("Status", "ExitCode", "OOMKilled")} for n, s in state.items()}
        reasons = []
        if any(s.get("OOMKilled") for s in state.values()):
            rec["status"] = "oom"
            reasons.append("the server was killed for memory (OOMKilled)")
        elif died:
            rec["status"] = "server_died"
            reasons.append(f"the server exited during the run: {dep.logs(5)[-300:]}")
        if srv.get("oom_kills"):
            if rec["status"] == "ok":
                rec["status"] = "oom"
            reasons.append(f"{srv['oom_kills']} server process(es) OOM-killed at the memory cap")
        elif srv.get("mem_limit_hits") and spec.server_memory:
            reasons.append(f"the memory cap was reached {srv['mem_limit_hits']} times (reclaim, no kill)")
        if result.interrupted:
            rec["status"] = "interrupted"
            reasons.append("interrupted")
        rec["reason"] = "; ".join(reasons) or None
        ncpu = len(cpu_list(spec.server_cpus)) if spec.server_cpus else (os.cpu_count() or 1)
        notes = st.capacity_notes(stack, dep.settings, p.level, ncpu, p.page.split("?")[0].endswith(".php"))
        if notes:
            rec["notes"] = notes
        if doc["warnings"]:
            rec["warnings"] = doc["warnings"]
        tl = [{**labels, **row} for row in timeline_rows(result)]
        return rec, tl, srv_rows
    finally:
        if not spec.reuse_server:
            dep.stop()
