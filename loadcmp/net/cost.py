"""What the proxy costs, measured as the client's is (`load.record.saturation`): its CPU seconds over the
window from /proc/<pid>/stat, per request that ended in it; and each second, the share of the time its threads
were on a CPU or waiting for one (/proc/<pid>/task/*/schedstat), over the CPUs it may use.

A proxy busy `BOUND_PCT` of its CPUs (the median over the seconds) is the bottleneck: the load is
network-bound, which the summary says as client-bound too, so that verdicts turn one-sided as they do for a
saturated client.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..facts import NetFacts

BOUND_PCT = 90.0
"""The median per-second busy share of the proxy's CPUs (on one or waiting for one) from which it is the
bottleneck: the client's own line (`saturation.CPU_BOUND_PCT`)."""
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process (None once it is gone)."""
    try:
        after = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(after[11]) + int(after[12])) / _TICK


def busy_seconds(pid: int) -> float:
    """Seconds its threads were on a CPU or runnable and waiting for one, summed over its threads."""
    total = 0
    for f in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            run, wait, _ = f.read_text().split()
        except (OSError, ValueError):
            continue
        total += int(run) + int(wait)
    return total / 1e9


@dataclass(frozen=True)
class ProxyUse:
    """What the proxy spent over the window."""

    cpu_s: float
    elapsed_s: float
    busy_pct: float | None
    """Median per second of its threads' busy share (100 = one CPU), summed over its threads."""


class ProxyWatch(threading.Thread):
    """Samples the proxy once a second from `begin` (time.monotonic) until `stop`."""

    def __init__(self, pid: int, begin: float) -> None:
        super().__init__(name="loadcmp-net-watch", daemon=True)
        self.pid, self.begin = pid, begin
        self.done = threading.Event()
        self.busy: list[float] = []
        self.cpu0: float | None = None
        self.t0 = begin

    def run(self) -> None:
        if self.done.wait(max(0.0, self.begin - time.monotonic())):
            return
        self.t0, self.cpu0 = time.monotonic(), cpu_seconds(self.pid)
        last_t, last_b = self.t0, busy_seconds(self.pid)
        while not self.done.wait(1.0):
            t, b = time.monotonic(), busy_seconds(self.pid)
            self.busy.append((b - last_b) / max(1e-6, t - last_t) * 100)
            last_t, last_b = t, b

    def stop(self) -> ProxyUse | None:
        """The proxy's use over the window; None when the window never began or the proxy is gone (its CPU with
        it: never a figure below zero)."""
        cpu = cpu_seconds(self.pid)
        self.done.set()
        self.join(timeout=2)
        if self.cpu0 is None or cpu is None or cpu < self.cpu0:
            return None
        return ProxyUse(cpu - self.cpu0, time.monotonic() - self.t0,
                        statistics.median(self.busy) if self.busy else None)


def judge(facts: NetFacts, use: ProxyUse, completed: int) -> None:
    """The proxy's cost into `facts`, and whether it was the bottleneck."""
    facts["proxy_cpu_us"] = round(use.cpu_s / completed * 1e6, 1) if completed > 0 else None
    facts["proxy_cpu_pct"] = round(use.cpu_s / use.elapsed_s * 100, 1) if use.elapsed_s > 0 else None
    cpus = max(1, facts["proxy_cpus"])
    busy = None if use.busy_pct is None else min(100.0, use.busy_pct / cpus)
    facts["proxy_busy_pct"] = None if busy is None else round(busy, 1)
    if busy is not None and busy >= BOUND_PCT:
        facts["network_bound"] = True
        facts["network_bound_reason"] = (
            f"the --net proxy (toxiproxy) was busy {busy:.0f}% of its {cpus} CPU{'s' if cpus > 1 else ''}, "
            f"{'on them or waiting for them' if cpus > 1 else 'on it or waiting for it'} (median per second; "
            f"network-bound from {BOUND_PCT:.0f}%): it, not the server, set the rate")
