"""The path with `--net`'s conditions: one toxiproxy-server, the load's proxy to the server and the probe's,
the conditions seen, and the proxy's CPU over the window. The sweep and bench hold it around the load and hand
the engine the proxy's address (the load itself never knows).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import LoadError
from ..facts import NetFacts
from .conditions import NetSpec
from .cost import ProxyWatch, judge
from .seen import Seen, measure, probe_server
from .toxiproxy import Toxiproxy

DIFFERS = 0.10
"""A figure seen this far from the one asked (as a share of it) is said in the report."""


def toxics(spec: NetSpec) -> list[dict[str, Any]]:
    """Toxiproxy's toxics for a spec: half the round trip (and of its jitter) each way; the rates as bandwidth
    toxics in KB/s (1000 bytes), as Toxiproxy takes them."""
    out: list[dict[str, Any]] = []
    rtt_ms, jitter_ms = round(spec.rtt_s * 1e3), round(spec.jitter_s * 1e3)
    down_ms, down_j = math.ceil(rtt_ms / 2), math.ceil(jitter_ms / 2)
    for stream, lat, jit in (("downstream", down_ms, down_j), ("upstream", rtt_ms - down_ms, jitter_ms - down_j)):
        if lat or jit:
            out.append({"name": f"latency_{stream}", "type": "latency", "stream": stream, "toxicity": 1.0,
                        "attributes": {"latency": lat, "jitter": jit}})
    for stream, bps in (("downstream", spec.rate_bps), ("upstream", spec.rate_up_bps)):
        if bps:
            out.append({"name": f"bandwidth_{stream}", "type": "bandwidth", "stream": stream, "toxicity": 1.0,
                        "attributes": {"rate": max(1, round(bps / 8000))}})
    return out


@dataclass
class NetPath:
    """A running path: where the clients connect, what was seen, the proxy watched over the window."""

    spec: NetSpec
    proxy: Toxiproxy
    port: int
    """The load's proxy on 127.0.0.1: the address the engine is handed."""
    seen: Seen
    cpus: int
    watch: ProxyWatch | None = None

    def watch_from(self, begin: float) -> None:
        """Sample the proxy's CPU from `begin` (the window's start, on `time.monotonic`) until `facts`."""
        self.watch = ProxyWatch(self.proxy.pid, begin)
        self.watch.start()

    def facts(self, completed: int) -> NetFacts:
        """Asked, seen, and the proxy's cost for the requests that ended in the window."""
        use = self.watch.stop() if self.watch is not None else None
        asked = self.spec.describe()
        seen = {"rtt_ms": round(self.seen.rtt_s * 1e3, 2), "rtt_spread_ms": round(self.seen.rtt_spread_s * 1e3, 2),
                "rate_bps": _round(self.seen.rate_bps), "rate_up_bps": _round(self.seen.rate_up_bps)}
        out = NetFacts(asked=asked, seen=seen, differs=differs(self.spec, self.seen), proxy="toxiproxy 2.5.0",
                       proxy_cpu_us=None, proxy_cpu_pct=None, proxy_busy_pct=None, proxy_cpus=self.cpus,
                       network_bound=False)
        if use is not None:
            judge(out, use, completed)
        return out


def _round(v: float | None) -> float | None:
    return None if v is None else round(v)


def differs(spec: NetSpec, seen: Seen) -> list[str]:
    """Each figure seen more than DIFFERS from the one asked, in words (a round trip of 0 asked: none)."""
    out = []
    pairs = [("round trip", spec.rtt_s * 1e3, seen.rtt_s * 1e3, "ms"),
             ("rate down", (spec.rate_bps or 0) / 1e6, (seen.rate_bps or 0) / 1e6, "Mbit/s"),
             ("rate up", (spec.rate_up_bps or 0) / 1e6, (seen.rate_up_bps or 0) / 1e6, "Mbit/s")]
    for what, asked, got, unit in pairs:
        if asked > 0 and abs(got - asked) > DIFFERS * asked:
            out.append(f"{what} seen {got:,.3g} {unit} against {asked:,.3g} asked ({(got - asked) / asked:+.0%})")
    return out


@contextmanager
def open_path(spec: NetSpec, upstream: tuple[str, int], cpus: list[int] | None) -> Iterator[NetPath]:
    """Start the proxy pinned to `cpus` (None: not pinned), carrying to `upstream`, measure the conditions seen,
    and stop it when the block ends, whatever way."""
    tp = Toxiproxy.start(cpus)
    try:
        port = tp.proxy("load", upstream, toxics(spec))
        with probe_server() as probe:
            pport = tp.proxy("probe", probe, toxics(spec))
            try:
                seen = measure(spec, pport)
            except OSError as e:
                raise LoadError(f"--net: the proxy did not carry the probe's connection: {e}") from None
        tp.call("DELETE", "/proxies/probe")
        yield NetPath(spec, tp, port, seen, len(cpus) if cpus else (len(os.sched_getaffinity(0)) or 1))
    finally:
        tp.stop()
