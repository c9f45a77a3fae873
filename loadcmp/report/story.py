"""The report's opening: what happened, in plain sentences, each backed by a number.

Read from stored results only, in the order a performance engineer asks: who
handled more and by how much (`throughput`), where each server starts to fail
(`failures`, with `knee`), what it used to get there (`resources`), and why, as
far as the servers' own evidence says (`causes`: their log lines, the status
pages, OOM kills, and the CPU). A claim about a difference is made only where
the 95 % interval supports it (3 trials or more, see `tables.MIN_TRIALS`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from itertools import groupby
from typing import Literal

from ..records import TrialRecord
from ..store.reader import Results, causes_of, cpu_of_its_cpus, metrics_of
from ..traffic.logreplay import replay_lines
from ..units import format_bytes, ms
from .causes import by_cause, evidence, head
from .connects import slow_connects
from .handshakes import errors_said
from .role_usage import apart_lines, used
from .states import connection_states
from .streams import clients, unit_of
from .waiting import waiting
from .compare import Ratio, at_least, comparable, inverse, pair_unit, pairs, ratio
from .tables import MIN_TRIALS, Estimate, cell_estimate, per_core, rps

FAIL_LIMIT = 0.01
"""Failures begin at the first level where more than 1 % of the requests that ended failed."""

CPU_BOUND = 0.9
"""A server that used 90 % or more of the CPUs it had was limited by them."""


@dataclass(frozen=True)
class Knee:
    """Where a server's failures begin: the level, the share failed, and the main kind."""

    level: int
    rate: float  #: mean failed share of the requests that ended
    kind: str | None  #: the kind with the most failures there
    kind_count: float  #: its mean count per trial


def knee(data: Results, server: str) -> Knee | None:
    """The first level at which more than FAIL_LIMIT of a server's requests failed, or None."""
    for level in data.levels:
        cell = data.cell(server, level)
        if not cell:
            continue
        rate = sum(t["result"]["failed_rate"] for t in cell) / len(cell)
        if rate > FAIL_LIMIT:
            kind, count = _main_kind(data, server, level)
            return Knee(level, rate, kind, count)
    return None


def _main_kind(data: Results, server: str, level: int) -> tuple[str | None, float]:
    cell = data.cell(server, level)
    kinds: dict[str, float] = {}
    for t in cell:
        for k, n in t["result"]["failures"].items():
            kinds[k] = kinds.get(k, 0) + n / len(cell)
    if not kinds or max(kinds.values()) == 0:
        return None, 0.0
    kind = max(kinds, key=lambda k: kinds[k])
    return kind, kinds[kind]


def _kind_text(kind: str) -> str:
    """A failure kind in words; `dropped` is the client's doing (the rate schedule's in-flight cap)."""
    return "requests the client dropped at its in-flight cap (not sent)" if kind == "dropped" else kind


def _levels(levels: list[int], all_levels: list[int], unit: str = "clients") -> str:
    """'at 50 clients', 'at 50 and 400 clients', 'from 50 to 5,000 clients' (or another `unit`)."""
    if len(levels) == 1:
        return f"at {levels[0]:,} {unit}"
    run = all_levels[all_levels.index(levels[0]):all_levels.index(levels[-1]) + 1]
    if len(levels) > 2 and run == levels:
        return f"from {levels[0]:,} to {levels[-1]:,} {unit}"
    return "at " + ", ".join(f"{lv:,}" for lv in levels[:-1]) + f" and {levels[-1]:,} {unit}"


Outcome = Literal["more", "least", "same", "few", "bound", "none", "missing"]


@dataclass(frozen=True)
class _Step:
    level: int
    outcome: Outcome
    winner: str  #: the server that handled more ('' when none is named)
    ratio: Ratio  #: winner / the other; for "same": other / base
    trials: int  #: the fewer trials of the two sides


def _step(data: Results, base: str, other: str, level: int) -> _Step:
    ea, eb = cell_estimate(data, base, level, rps), cell_estimate(data, other, level, rps)
    n = min(ea.n, eb.n)
    none = Ratio(None, None, None)
    if ea.mean is None or eb.mean is None:
        return _Step(level, "missing", "", none, n)
    if (least := at_least(data, base, other, level)) is not None:
        return _Step(level, "least", least[0], least[2], n)
    if data.client_bound(base, level) or data.client_bound(other, level):
        return _Step(level, "bound", "", none, n)
    if not ea.mean or not eb.mean:
        return _Step(level, "none", other if eb.mean else base if ea.mean else "", none, n)
    r = ratio(eb, ea)
    winner, rr = (other, r) if (r.value or 0) >= 1 else (base, inverse(r))
    if r.significant is None:
        return _Step(level, "few", winner, rr, n)
    if not r.significant:
        return _Step(level, "same", "", r, n)
    return _Step(level, "more", winner, rr, n)


def peaks(data: Results) -> list[str]:
    """Each server's highest mean rate where the client kept up, where it was reached, and its latency there."""
    out = []
    for s in data.servers:
        cells = [(lv, e) for lv in data.levels if (e := cell_estimate(data, s, lv, rps)).mean is not None]
        free = [(lv, e) for lv, e in cells if not data.client_bound(s, lv)]
        if not free:
            continue
        lv, e = max(free, key=lambda c: c[1].mean or 0)
        p99 = data.pooled_latency(s, lv).percentile(99)
        last = data.levels[-1]
        out.append(f"{s} peaked at a mean of {e.mean:,.0f} requests/s, at {clients(data, s, lv)}"
                   + (f" (pooled p99 latency {ms(p99):,.1f} ms)" if p99 is not None else "")
                   + (f"; at {clients(data, s, last)}, {_at(data, s, last)}"
                      if lv != last and data.cell(s, last) else "")
                   + ".")
    return out


def _at(data: Results, server: str, level: int) -> str:
    return f"{cell_estimate(data, server, level, rps).text()} requests/s"


def throughput(data: Results) -> list[str]:
    """Each server's peak rate; then per compared pair, one sentence per run of levels with the same outcome."""
    out = peaks(data)
    for base, other in pairs(data):
        steps = [_step(data, base, other, lv) for lv in data.levels]
        unit = pair_unit(data, base, other)
        for (kind, winner), group in groupby(steps, key=lambda s: (s.outcome, s.winner)):
            g = list(group)
            where = _levels([s.level for s in g], data.levels, unit)
            loser = other if winner == base else base
            if kind == "more":
                out.append(f"{winner} handled more requests/s than {loser} {where}: {_ratios(g)}.")
            elif kind == "least":
                out.append(f"{winner} handled at least {_ratios(g, least=True)} the requests/s of {loser} {where}: "
                           f"{winner} was client-bound there, so its rate is a lower bound on what it serves.")
            elif kind == "same":
                out.append(f"No difference in requests/s could be shown between {other} and {base} {where}: "
                           f"{other}/{base} {_ratios(g)}, each 95 % interval including 1.")
            elif kind == "few":
                n = min(s.trials for s in g)
                out.append(f"{winner} handled more requests/s than {loser} {where} ({_ratios(g)}), from "
                           f"{'one trial' if n == 1 else f'{n} trials'} on the smaller side: too few for an "
                           f"interval ({MIN_TRIALS} or more are needed), so this is a hint, not a finding.")
            elif kind == "none":
                out.append(f"{winner} served requests {where} where {loser} served none." if winner else
                           f"Neither {base} nor {other} served a request {where}.")
            elif kind == "bound":
                out.append(f"{where[0].upper() + where[1:]}, the client, not the servers, limited the rate of "
                           f"{base} or {other}: these levels say nothing about the servers (see the notes).")
    return out


def _ratios(steps: list[_Step], least: bool = False) -> str:
    """'1.45× (1.30–1.60)' for one level, each level for a few, the extremes for many; `least`:
    the lower ends alone ('1.30×'), all a client-bound rate shows."""
    def one(s: _Step) -> str:
        shown = f"{s.ratio.low or 0:.2f}×" if least else s.ratio.text()
        return shown + (f" at {s.level:,}" if len(steps) > 1 else "")

    if len(steps) <= 3:
        return ", ".join(one(s) for s in steps)
    lo = min(steps, key=lambda s: s.ratio.value or 0)
    hi = max(steps, key=lambda s: s.ratio.value or 0)
    return f"between {one(lo)} and {one(hi)}"


def failures(data: Results) -> list[str]:
    """Per server: where failures begin and of what kind, how far they go, and the levels that could not run."""
    out: list[str] = []
    clean: list[str] = []
    for s in data.servers:
        missing = [lv for lv in data.levels if not data.cell(s, lv) and any(t["server"] == s and t["level"] == lv
                                                                             for t in data.trials)]
        if missing:
            out.append(_not_measured(data, s, missing))
        k = knee(data, s)
        measured = [lv for lv in data.levels if data.cell(s, lv)]
        if not measured:
            continue
        if k is not None:
            why = errors_said(data.cell(s, k.level)) if k.kind == "tls_error" else ""  # the handshakes' reasons
            what = (f", mostly {_kind_text(k.kind)} ({k.kind_count:,.0f} per trial{': ' + why if why else ''})"
                    if k.kind else "")
            text = f"{s}'s failures begin at {clients(data, s, k.level)}: {k.rate:.1%} of its requests failed{what}"
            last = measured[-1]
            if last != k.level:
                rate = _rate(data, s, last)
                text += f"; at {clients(data, s, last)}, {rate:.1%}"
            out.append(text + ".")
        else:
            worst = max(measured, key=lambda lv: _rate(data, s, lv))
            rate = _rate(data, s, worst)
            if rate > 0:
                out.append(f"{s} kept its failures under {FAIL_LIMIT:.0%} at every level measured "
                           f"(at most {rate:.2%}, at {worst:,} clients).")
            else:
                clean.append(s)
    if clean:
        who = clean[0] if len(clean) == 1 else ", ".join(clean[:-1]) + " or " + clean[-1]
        out.insert(0, f"No request to {who} failed at any level measured.")
    return out


def _not_measured(data: Results, server: str, levels: list[int]) -> str:
    """'X could not be measured at L: why' — one reason for all, or each level's own."""
    why: dict[int, str] = {}
    for t in data.trials:
        if t["server"] == server and t["level"] in levels and t.get("reason") and t["level"] not in why:
            why[t["level"]] = str(t["reason"])
    reasons = set(why.values())
    if len(reasons) <= 1:
        return (f"{server} could not be measured {_levels(levels, data.levels)}"
                + (f": {reasons.pop()}" if reasons else "") + ".")
    return f"{server} could not be measured: " + "; ".join(f"at {lv:,} clients, {r}" for lv, r in why.items()) + "."


def _rate(data: Results, server: str, level: int) -> float:
    cell = data.cell(server, level)
    return sum(t["result"]["failed_rate"] for t in cell) / len(cell) if cell else 0.0


def _cores(data: Results, server: str) -> int | None:
    """How many CPUs the server could use: its cpuset, else the machine's (of the run it comes from)."""
    found = data.info(server)
    if found is None:
        return None
    run, info = found
    cpus = info.get("cpus") or run.doc["spec"].get("server_cpus")
    if cpus:
        from ..units import cpu_list

        return len(cpu_list(str(cpus)))
    cores = run.doc.get("machine", {}).get("cores")
    return int(cores) if cores else None


def _on_its_cpus(t: TrialRecord) -> float | None:
    return cpu_of_its_cpus(t)[0]


def _sharing(data: Results, server: str) -> str:
    """The roles measured apart that used the server's CPUs (an app's database), in words ('' for none)."""
    return " and ".join(sorted({r for t in data.of_server(server) for r in cpu_of_its_cpus(t)[1]}))


def _saturated(data: Results, server: str) -> str:
    """The levels at which a server (with the roles measured apart on its CPUs) used CPU_BOUND of the CPUs it
    had, in words ('' for none)."""
    cores = _cores(data, server)
    if not cores:
        return ""
    levels = [lv for lv in data.levels if (e := cell_estimate(data, server, lv, _on_its_cpus)).mean is not None
              and e.mean >= CPU_BOUND * 100 * cores]
    measured = [lv for lv in data.levels if data.cell(server, lv)]
    if not levels:
        return ""
    return "at every level" if levels == measured and len(levels) > 1 else _levels(levels, data.levels,
                                                                                   unit_of(data, server))


def resources(data: Results) -> list[str]:
    """The server CPU each used and what it got per core; peak memory and processes."""
    out = []
    per = []
    for s in data.servers:
        if (text := used(data, s, _cores(data, s), _saturated(data, s))) is None:
            continue
        out.append(text)
        core = {lv: e for lv in data.levels if (e := cell_estimate(data, s, lv, per_core)).mean is not None}
        if core:
            per.append((s, core))
    if len(per) > 1:
        common = set.intersection(*(set(c) for _, c in per))
        # the client's ceiling says nothing of what a server gets from its cores
        free = [lv for lv in sorted(common) if not any(data.client_bound(s, lv) for s, _ in per)]
        if free:
            level = free[-1]
            cells = [(s, c[level]) for s, c in per]
            out.append(f"Per core of server CPU at {level:,} clients: "
                       + ", ".join(f"{s} {e.text()} req/s" for s, e in cells) + _per_core_verdict(data, cells) + ".")
    memory = []
    for s in data.servers:
        # the same figure as Table 1: per level, the mean of the trials' peaks
        mem = {lv: e.mean for lv in data.levels
               if (e := cell_estimate(data, s, lv, lambda t: metrics_of(t).get("mem_peak_bytes"))).mean}
        procs = [p for lv in data.levels for t in data.cell(s, lv) if (p := metrics_of(t).get("procs_peak"))]
        if mem:
            lv = max(mem, key=lambda k: mem[k] or 0)
            memory.append(f"{s} {format_bytes(mem[lv])} (at {clients(data, s, lv)})"
                          + (f", at most {max(procs):,} processes" if procs else ""))
    if memory:
        out.append("Peak server memory (mean of the trials' peaks): " + "; ".join(memory) + ".")
    return out + [line for s in data.servers for line in apart_lines(data, s, _cores(data, s))]


def _per_core_verdict(data: Results, cells: list[tuple[str, Estimate]]) -> str:
    """Which server got the most from each core, when the interval says so, among servers that may be
    compared (`compare.comparable`)."""
    compared = {frozenset(p) for p in pairs_of(data, cells)}
    best, second = sorted(cells, key=lambda c: -(c[1].mean or 0))[:2]
    if frozenset((best[0], second[0])) not in compared:
        return ""
    r = ratio(best[1], second[1])
    return f": {best[0]} got {r.text()} as much from each core as {second[0]}" if r.significant else ""


def pairs_of(data: Results, cells: list[tuple[str, Estimate]]) -> list[tuple[str, str]]:
    """Every two of these servers that may be compared (the same page and keep-alive; with several
    protocols, the same protocol or the same stack)."""
    names = [s for s, _ in cells]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if comparable(data, a, b)]


def _cap(data: Results, server: str) -> tuple[str, int] | None:
    """The setting that busy workers are counted against (the stack's `busy_limit`, stored with the label)
    and its value."""
    found = data.info(server)
    if found is None:
        return None
    info = found[1]
    key = info.get("busy_limit")
    settings = info.get("settings") or {}
    return (key, int(settings[key])) if key is not None and key in settings else None


def causes(data: Results, only: Collection[str] | None = None) -> list[str]:
    """Why, as far as the servers' own evidence says: their notes (log lines, status pages, OOM
    kills) once per cause with where they were seen, and worker pools full at every level;
    of every server, or `only` of these."""
    out = []
    for s in (data.servers if only is None else [s for s in data.servers if s in only]):
        for first, trial, levels, n in by_cause((t, causes_of(t)) for t in data.of_server(s)):
            total = sum(1 for t in data.of_server(s) if t["level"] in levels and t.get("result"))
            where = _levels(sorted(levels), data.levels, unit_of(data, s)) + (
                f" ({n} of {total} trials)" if total > 1 else "")
            said = evidence(first, trial["result"]["failures"], trial["result"].get("slow_connects"))
            out.append(f"{s}: {head(first)} {where}" + (f" — {'for example ' if total > 1 else ''}{said}"
                                                         if said else "") + ".")
        cpu = _saturated(data, s)
        if cpu:
            roles = _sharing(data, s)
            out.append(f"{s}: its CPU was saturated {cpu} (at least {CPU_BOUND:.0%} of the cores it had"
                       + (f", counting its {roles} on the same cores" if roles else "")
                       + "), so CPU time limited its rate there, whatever else did too.")
        cap = _cap(data, s)
        busy = [b for lv in data.levels for t in data.cell(s, lv) if (b := metrics_of(t).get("busy_workers_peak"))]
        full = [lv for lv in data.levels if data.cell(s, lv) and all(
            (b := metrics_of(t).get("busy_workers_peak")) is not None and b >= cap[1] - 1 for t in data.cell(s, lv))
            ] if cap else []
        if cap and full and full == [lv for lv in data.levels if data.cell(s, lv)]:
            where = "at every level" if len(full) > 1 else _levels(full, data.levels, unit_of(data, s))
            lo, hi = min(busy), max(busy)
            peak = f"{lo:,.0f}" if lo == hi else f"{lo:,.0f}–{hi:,.0f}"
            out.append(f"{s}'s workers were all busy {where}: busy workers peaked at {peak} of "
                       f"{cap[0]} {cap[1]:,} (a status page takes one itself), so requests queued for a worker.")
    return out


def replayed(data: Results) -> list[str]:
    """A replayed access log, trial by trial: the rate the log asked and the rate sent (or `max`), the answers
    as in the log and those differing from it with the pages most often so, and what was left out."""
    out = []
    for t in data.trials:
        doc = t.get("result", {}).get("replay")
        if doc:
            out.append(f"{t['server']} at {t['level']:,} (trial {t['trial']}): " + "; ".join(replay_lines(doc)) + ".")
    return out


SECTIONS = (("Requests served", throughput), ("Where failures begin", failures),
            ("Users who got no answer", waiting),
            ("What the servers used", resources), ("Connections by state", connection_states),
            ("Why, from the servers' own evidence", causes),
            ("Connects TCP's SYN retry delayed", slow_connects),
            ("The access log replayed", replayed))


def story(data: Results) -> list[tuple[str, list[str]]]:
    """The report's opening: (heading, sentences) in the order they are read; empty ones left out."""
    return [(head, lines) for head, make in SECTIONS if (lines := make(data))]
