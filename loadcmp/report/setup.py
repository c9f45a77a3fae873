"""The report's set-up section and warnings: what was run, where, and what to know first.

Every line is a sentence a reader can check against the run's files; what was
not recorded is left out (a bench knows no Docker version), never shown as
None, nan or a raw dict.
"""

from __future__ import annotations

from typing import Any

from ..records import MachineInfo, ServerInfo
from ..store.reader import Results, Run, result_of
from ..units import format_bytes
from .tables import notes


def warnings(data: Results) -> list[str]:
    """What a reader must know before trusting the numbers."""
    out: list[str] = []
    for p in data.interrupted:
        out.append(f"The run in {p} was interrupted: it holds only the trials finished before it stopped.")
    for r in data.runs:
        if r.status == "failed":
            out.append(f"The run in {r.path} failed: {'; '.join(r.problems) or 'see run.json'}")
    out += notes(data)
    seen: set[str] = set()
    for t in data.trials:
        result = result_of(t)
        for w in result["warnings"] if result else []:
            key = w.split(" in worker")[0].split(": worker")[0][:60]
            if key not in seen:
                seen.add(key)
                out.append(f"{t['server']} at {t['level']:,} clients: {w}")
    return out


def setup_rows(data: Results) -> list[tuple[str, str]]:
    """(what, line) for each run: the run, its load and limits, the machine, loadcmp, each server."""
    rows: list[tuple[str, str]] = []
    for r in data.runs:
        run = r.doc
        when = " → ".join(x for x in (run.get("started"), run.get("ended")) if x)
        rows.append(("run", f"{r.name} ({'a bench of a URL' if run.get('kind') == 'bench' else 'a sweep'}), "
                            f"{r.status}" + (f", {when}" if when else "")))
        rows += _load_rows(r)
        machine = machine_line(run.get("machine") or MachineInfo())
        if machine:
            rows.append(("machine", machine))
        commit = run.get("git_commit")
        version = run.get("loadcmp_version")
        if version or commit:
            rows.append(("loadcmp", " ".join(x for x in (version, f"(commit {commit[:10]})" if commit else "") if x)))
        for name, s in run.get("servers", {}).items():
            rows.append((name, _server_line(s)))
    return rows


def machine_line(m: MachineInfo) -> str:
    """The machine as far as it was recorded."""
    parts = [m.get("cpu_model") or "",
             f"{m['cores']} cores" if m.get("cores") else "",
             format_bytes(m["mem_total_bytes"]) + " of memory" if m.get("mem_total_bytes") else "",
             f"kernel {m['kernel']}" if m.get("kernel") else "",
             f"Docker {m['docker_version']}" if m.get("docker_version") else "",
             f"Python {m['python']}" if m.get("python") else "",
             f"open files {m['nofile_hard']:,}" if m.get("nofile_hard") else "",
             f"somaxconn {m['somaxconn']:,}" if m.get("somaxconn") else ""]
    return ", ".join(p for p in parts if p)


def _and_list(levels: list[int]) -> str:
    """'50', '50 and 400', '50, 100 and 400'."""
    text = [f"{lv:,}" for lv in levels]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]


def _schedule(r: Run) -> dict[str, Any]:
    """The schedule as the load described it (the first measured trial), else from the spec."""
    for t in r.doc.get("trials", []):
        res = result_of(t)
        if res and res.get("schedule"):
            return dict(res["schedule"])
    spec = r.doc.get("spec", {})
    sched = spec.get("schedule")
    return dict(sched) if isinstance(sched, dict) else {"kind": sched}


def load_sentence(r: Run) -> str:
    """The load in words: who sends what, how often, for how long, and how it is counted."""
    spec = r.doc.get("spec", {})
    sched = _schedule(r)
    kind = sched.get("kind") or spec.get("schedule") or "closed"
    levels = [int(x) for x in spec.get("levels") or []] or [int(t["level"]) for t in r.doc.get("trials", [])[:1]]
    if kind == "ramp":
        ramp, pace = sched.get("ramp_up_s", spec.get("ramp_up")), sched.get("pace_s", spec.get("pace"))
        who = (f"{_and_list(levels)} users started evenly over {ramp:g} s, each sending a request every {pace:g} s "
               "(JMeter's thread group)")
    elif kind == "rate":
        rate = sched.get("rate", spec.get("rate"))
        who = f"{rate:,g} requests/s at a fixed rate (wrk2, k6), at most {_and_list(levels)} in flight, the rest dropped"
    else:
        who = f"{_and_list(levels)} concurrent clients, each sending its next request when the last one ends (webbench, ab)"
    target = spec.get("url") if r.doc.get("kind") == "bench" else f"page {spec.get('page')}"
    keep = spec.get("keepalive")
    keeps = keep if isinstance(keep, list) else [keep]
    conn = " and ".join("over kept-alive connections" if k else "on a new connection per request" for k in keeps)
    if spec.get("requests"):
        span = f"{spec['requests']:,} requests per trial (stopped by time after {spec.get('duration'):,.0f} s at most)"
    else:
        span = f"measured for {spec.get('duration'):g} s"
    warm = spec.get("warmup") or 0
    span += f" after {warm:g} s of warm-up" if warm else ", no warm-up"
    trials = spec.get("trials") or 1
    workers = spec.get("workers") or 1
    return (f"{who}, to {target}, {conn}; {span}; timeout {spec.get('timeout'):g} s; "
            f"{trials} trial{'s' if trials > 1 else ''} per level; {spec.get('engine', 'fast')} engine in "
            f"{workers} client process{'es' if workers > 1 else ''}.")


def _load_rows(r: Run) -> list[tuple[str, str]]:
    """The load and limits a run used (bench runs load a URL; runs load a page of the stacks)."""
    spec = r.doc.get("spec", {})
    if not spec:
        return []
    rows = [("load", load_sentence(r))]
    if r.doc.get("kind") != "bench":
        memory = spec.get("server_memory")
        rows.append(("limits", f"server on CPUs {spec.get('server_cpus') or 'all'}, client on CPUs "
                               f"{spec.get('client_cpus') or 'all'}, server memory "
                               f"{format_bytes(memory) if memory else 'not capped'}"))
    elif spec.get("client_cpus"):
        rows.append(("limits", f"client on CPUs {spec['client_cpus']}"))
    return rows


def _server_line(s: ServerInfo) -> str:
    vers = ", ".join(s.get("versions", {}).values())
    return "; ".join(x for x in (s.get("description") or s.get("url", ""), vers) if x)


def settings(data: Results) -> dict[str, dict[str, Any]]:
    """Each server's tunables in effect, by label as stored."""
    return {name: s["settings"] for r in data.runs for name, s in r.doc.get("servers", {}).items() if s.get("settings")}
