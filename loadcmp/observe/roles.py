"""The roles measured apart from the server (an app's database): their own columns of the 1 Hz samples
(`<role>_cpu_pct`, `<role>_mem_bytes`, their status columns `<role>_…`) summed up per trial."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..records import RoleMetrics

def summarize_apart(rows: list[dict[str, Any]], roles: Iterable[str]) -> dict[str, RoleMetrics]:
    """Each role measured apart: its CPU, its memory, and the peak of each status column it owns (`<role>_…`)."""
    out: dict[str, RoleMetrics] = {}
    for role in roles:
        pre = f"{role}_"
        cpu = [r[f"{pre}cpu_pct"] for r in rows if r.get(f"{pre}cpu_pct") is not None]
        mem = [r[f"{pre}mem_bytes"] for r in rows if r.get(f"{pre}mem_bytes") is not None]
        own = {f"{pre}{k}" for k in ("cpu_pct", "mem_bytes", "mem_rss_bytes", "mem_max_usage_bytes", "threads",
                                     "procs")}
        peaks: dict[str, float] = {}
        for r in rows:
            for k, v in r.items():
                if k.startswith(pre) and k not in own and isinstance(v, (int, float)) and v == v:
                    peaks[k] = max(peaks.get(k, v), v)
        out[role] = {"cpu_pct": round(sum(cpu) / len(cpu), 2) if cpu else None, "cpu_pct_max": max(cpu, default=None),
                     "mem_peak_bytes": int(max(mem)) if mem else None, "peaks": peaks}
    return out
