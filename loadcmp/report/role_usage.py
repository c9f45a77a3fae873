"""What the roles measured apart from a server used (an app's database beside the web server), per level:
from the trials' stored summaries (`ServerMetrics.apart`, `limits`), for the report's "what the servers
used"."""

from __future__ import annotations

from typing import Any

from ..store.reader import Results, metrics_of
from ..units import format_bytes


def apart_lines(data: Results, server: str) -> list[str]:
    """What each role measured apart from a server (an app's database) used per level: CPU, memory, and the
    status peaks that a limit is known for (connections in use against max_connections)."""
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
            out.append(f"Beside {server}, its {role} (measured apart from the server): " + "; ".join(parts) + ".")
    return out

