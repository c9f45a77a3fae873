"""The report's set-up section and warnings: what was run, where, and what to know first.

Every line is a sentence a reader can check against the run's files; what was
not recorded is left out (a bench knows no Docker version), never shown as
None, nan or a raw dict.
"""

from __future__ import annotations


from typing import Any, cast

from .. import protocols
from ..load.pacing import Pacing
from ..net.words import path_text, proxy_text
from ..records import MachineInfo, ScheduleDoc, ServerInfo, SpecDoc
from ..store.reader import Results, Run, result_of, spec_tls
from ..traffic.fits import traffic_of
from ..units import format_bytes
from .tables import notes


KINDS = {"bench": "a bench of a URL", "capacity": "a capacity search", "tune": "a tuning study"}
"""What wrote a results folder, in words (a sweep otherwise)."""


def warnings(data: Results) -> list[str]:
    """What a reader must know before trusting the numbers."""
    out: list[str] = []
    for r in data.runs:
        if r.status == "interrupted":
            out.append(f"The run in {r.path} was interrupted: it holds only the trials finished before it stopped.")
        elif r.status == "abandoned":
            out.append(f"The run in {r.path} was abandoned: its process ended without finishing it (killed "
                       "outright, out of memory, or the machine stopped); it holds only the trials stored before.")
    for r in data.runs:
        if r.status == "failed":
            out.append(f"The run in {r.path} failed: {'; '.join(r.problems) or 'see run.json'}")
    for r in data.runs:
        out += [f"{name} ran your own config; not measured: {'; '.join(s['unmeasured'])}."
                for name, s in r.doc["servers"].items() if s.get("unmeasured")]
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
        when = " → ".join(x for x in (run["started"], run.get("ended")) if x)
        rows.append(("run", f"{r.name} ({KINDS.get(run['kind'], 'a sweep')}), "
                            f"{r.status}" + (f", {when}" if when else "")))
        rows += _load_rows(r)
        machine = machine_line(run["machine"])
        if machine:
            rows.append(("machine", machine))
        commit = run.get("git_commit")
        version = run["loadcmp_version"]
        if version or commit:
            rows.append(("loadcmp", " ".join(x for x in (version, f"(commit {commit[:10]})" if commit else "") if x)))
        for name, s in run["servers"].items():
            rows.append((name, _server_line(s)))
            if s.get("own_configs"):
                rows.append((name, "runs your own " + ", ".join(f"{k} ({v})" for k, v in s["own_configs"].items())
                             + "; its settings there are yours, not loadcmp's"))
            rows += [(name, f"not measured: {m}") for m in s.get("unmeasured", [])]
        rows += _net_rows(r)
    return rows


def _net_rows(r: Run) -> list[tuple[str, str]]:
    """--net: each trial's path, asked and seen, and what its proxy cost."""
    out = []
    for t in r.doc["trials"]:
        if net := cast(dict[str, Any], result_of(t) or {}).get("net"):
            proxy = proxy_text(net)
            out.append(("net", f"{t['server']} at {t['level']:,}: {path_text(net)}" + (f"; {proxy}" if proxy else "")))
    return out


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


def _schedule(r: Run) -> ScheduleDoc:
    """The schedule as the load described it (the first measured trial), else the spec's kind."""
    for t in r.doc["trials"]:
        res = result_of(t)
        if res and "schedule" in res:
            return res["schedule"]
    return ScheduleDoc(kind=r.doc["spec"]["schedule"])


def _multiplexed(spec: SpecDoc) -> tuple[int, list[str], list[str]] | None:
    """-m above 1 on the run's labels of protocols that multiplex (h2, h2c, h3): (the streams per connection, those
    protocols, the others that ran too: h1); None when each client is one request in flight."""
    streams = int(spec.get("streams") or 1)
    asked = [*spec.get("protos", [protocols.DEFAULT]),
             *(p for ps in (spec.get("variant_protos") or {}).values() for p in ps)]
    protos = list(dict.fromkeys(asked))
    multi = [p for p in protos if (row := protocols.find(p)) is None or row.multiplexed]
    return (streams, multi, [p for p in protos if p not in multi]) if streams > 1 and multi else None


def _streamed(spec: SpecDoc, levels: str, listed: bool, streams: int, protos: list[str], single: list[str]) -> str:
    """The closed loop's clients where a client is a connection carrying -m streams: '20 concurrent clients
    on h1 and 20 connections × 4 streams on h2 (80 requests in flight), ...'."""
    on = " and ".join(protos)
    if listed:
        flight = _and_list([lv * streams for lv in spec["levels"]])
        multi = f"{levels} connections × {streams} streams on {on} ({flight} requests in flight)"
    else:  # a capacity search's levels: connections, each carrying the streams
        multi = f"{levels} connections on {on}, each carrying {streams} streams"
    first = f"{levels} concurrent clients on {' and '.join(single)} and " if single else ""
    return (f"{first}{multi}, each {'client or stream' if single else 'stream'} sending its next request when the "
            "last one ends (webbench, ab; h2load's -c and -m)")


def load_sentence(r: Run) -> str:
    """The load in words: who sends what, how often, for how long, and how it is counted."""
    spec = r.doc["spec"]
    sched = _schedule(r)
    cap = r.doc.get("capacity")
    # a capacity search chose its levels (and, by rate, its rates) as it went
    levels = (_and_list(spec["levels"]) if cap is None
              else f"as many as a capacity search chose (from {cap['start']:,})")
    if sched["kind"] == "ramp":
        ramp, pace = sched.get("ramp_up_s", spec.get("ramp_up")), sched.get("pace_s", spec.get("pace"))
        who = (f"{levels} users started evenly over {ramp:g} s, each sending a request every {pace:g} s "
               "(JMeter's thread group)")
    elif sched["kind"] == "rate":
        rate = sched.get("rate", spec.get("rate"))
        inflight = spec.get("max_inflight")
        who = (f"{rate:,g} requests/s at a fixed rate (wrk2, k6), at most {levels} in flight, the rest dropped"
               if cap is None else f"the rates a capacity search chose (from {cap['start']:,} requests/s) at a fixed "
               f"rate (wrk2, k6), at most {f'{inflight:,}' if inflight else 'one second of requests'} in flight, "
               "the rest dropped")
    elif (multiplexed := _multiplexed(spec)) is not None:
        who = _streamed(spec, levels, cap is None, *multiplexed)
    else:
        who = (f"{levels} concurrent clients, each sending its next request when the last one ends "
               "(webbench, ab)")
    traffic = traffic_of(spec)[0]  # a replayed access log says what is sent and when
    who = traffic.sentence(levels) or who
    target = spec.get("url") if r.doc["kind"] == "bench" else traffic.what() or f"page {spec['page']}"
    if spec_tls(spec)[0] and r.doc["kind"] != "bench":  # a bench's URL says https itself
        target = f"{target} over https"
    streamed = all((row := protocols.find(p)) is not None and row.multiplexed
                   for p in spec.get("protos", [protocols.DEFAULT]))  # streams share a connection whatever -k says
    conn = " and ".join("over kept-alive connections" if k or streamed else "on a new connection per request"
                        for k in spec["keepalive"])
    if spec.get("requests"):
        span = f"{spec.get('requests'):,} requests per trial (stopped by time after {spec['duration']:,.0f} s at most)"
    else:
        span = f"measured for {spec['duration']:g} s"
    warm = spec["warmup"]
    span += f" after {warm:g} s of warm-up" if warm else ", no warm-up"
    trials = spec.get("trials", 1)
    workers = spec["workers"]
    per = (f"{trials} trial{'s' if trials > 1 else ''} per level" if cap is None else
           f"one trial per probe, {cap['confirm']} at the level found and at the one above")
    return (f"{who}, to {target}, {conn}; {span}; timeout {spec['timeout']:g} s; "
            f"{per}; {spec['engine']} engine in "
            f"{workers} client process{'es' if workers > 1 else ''}.")


def _load_rows(r: Run) -> list[tuple[str, str]]:
    """The load and limits a run used (bench runs load a URL; runs load a page of the stacks)."""
    spec = r.doc["spec"]
    rows = [("load", load_sentence(r))]
    if r.doc["kind"] != "bench":
        memory = spec.get("server_memory")
        rows.append(("limits", f"server on CPUs {spec.get('server_cpus') or 'all'}, client on CPUs "
                               f"{spec.get('client_cpus') or 'all'}, server memory "
                               f"{format_bytes(memory) if memory else 'not capped'}"))
    elif spec.get("client_cpus"):
        rows.append(("limits", f"client on CPUs {spec.get('client_cpus')}"))
    if any(spec.get(k) for k in ("think", "send_rate", "read_rate")):  # --think, --send-rate, --read-rate
        pacing = Pacing(spec.get("think"), spec.get("send_rate"), spec.get("read_rate"))
        rows.append(("clients", f"each client behaves as a person: {pacing.words()}"))
    return rows


def _server_line(s: ServerInfo) -> str:
    vers = ", ".join(s.get("versions", {}).values())
    return "; ".join(x for x in (s.get("description") or s.get("url", ""), vers) if x)


def settings(data: Results) -> dict[str, dict[str, Any]]:
    """Each server's tunables in effect, by label as stored."""
    return {name: s["settings"] for r in data.runs for name, s in r.doc["servers"].items() if s.get("settings")}
