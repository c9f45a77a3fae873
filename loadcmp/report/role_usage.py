"""What the roles measured apart from a server used (an app's database beside the web server), per level:
from the trials' stored summaries (`ServerMetrics.apart`, `limits`), for the report's "what the servers
used". Such a role runs on the server's CPUs: its share is said against those cores, beside the server's
own, never summed into the server's (`used`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..records import TrialRecord
from ..store.reader import Results, cpu_of_its_cpus, metrics_of
from ..units import format_bytes
from .tables import cell_estimate


def apart_lines(data: Results, server: str, cores: int | None = None) -> list[str]:
    """What each role measured apart from a server (an app's database) used per level: CPU (100 % = one of
    the server's `cores`, which it shares), memory, and the status peaks that a limit is known for
    (connections in use against max_connections)."""
    levels: dict[str, dict[int, list[Any]]] = {}
    limits: dict[str, list[Any]] = {}
    for t in data.of_server(server):
        m = metrics_of(t)
        limits.update(m.get("limits") or {})
        for role, rm in (m.get("apart") or {}).items():
            levels.setdefault(role, {}).setdefault(t["level"], []).append(rm)
    out = []
    for role, by_level in levels.items():
        parts = []
        for lv, rms in sorted(by_level.items()):
            cpu = [r["cpu_pct"] for r in rms if r.get("cpu_pct") is not None]
            mem = [r["mem_peak_bytes"] for r in rms if r.get("mem_peak_bytes")]
            said = [f"{sum(cpu) / len(cpu):,.0f} % CPU"] if cpu else []
            said += [f"{format_bytes(max(mem))}"] if mem else []
            for col, (setting, limit) in limits.items():
                peak = max((r.get("peaks", {}).get(col, -1) for r in rms), default=-1)
                if peak >= 0:
                    said.append(f"{col} {peak:,.0f} of {setting} {limit:,}")
            if said:
                parts.append(f"at {lv:,} clients {', '.join(said)}")
        if parts:
            on = ("its one CPU core" if cores == 1 else f"its {cores} CPU cores" if cores else "its CPUs")
            out.append(f"Beside {server}, its {role} (measured apart from the server, on {on}; 100 % = one core): "
                       + "; ".join(parts) + ".")
    return out


def _span(data: Results, server: str, get: Callable[[TrialRecord], float | None]) -> str | None:
    """A figure's mean per level, from its lowest to its highest: '74 %', '60–74 %' (None: never measured)."""
    means = [float(e.mean or 0) for lv in data.levels if (e := cell_estimate(data, server, lv, get)).mean is not None]
    if not means:
        return None
    lo, hi = min(means), max(means)
    return f"{lo:,.0f} %" if round(lo) == round(hi) else f"{lo:,.0f}–{hi:,.0f} %"


def _role_cpu(role: str) -> Callable[[TrialRecord], float | None]:
    """A trial's CPU of one role measured apart (100 % = one core)."""
    return lambda t: cpu_of_its_cpus(t)[1].get(role)


def used(data: Results, server: str, cores: int | None, saturated: str) -> str | None:
    """The server CPU a label used of its `cores`, and each role measured apart on those cores (an app's
    database) beside it, each against the same cores; then whether they were `saturated` together (the
    levels in words, '' for none)."""
    used = _span(data, server, lambda t: metrics_of(t).get("cpu_pct"))
    if used is None:
        return None
    text = (f"{server} used {used} of its one CPU core" if cores == 1 else
            f"{server} used {used} of server CPU (100 % = one core" + (f"; it had {cores})" if cores else ")"))
    shares = [(role, got) for role in sorted({r for t in data.of_server(server) for r in cpu_of_its_cpus(t)[1]})
              if (got := _span(data, server, _role_cpu(role))) is not None]
    same = "the same core" if cores == 1 else "the same cores"
    text += "".join(f", and its {role} {got} of {same}" for role, got in shares)
    if saturated:
        text += f": together saturated {saturated}" if shares else f": saturated {saturated}"
    return text + "."
