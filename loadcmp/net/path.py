"""The path with `--net`'s conditions: one toxiproxy-server, the load's proxy to the server and the probe's,
the conditions seen, and the proxy's CPU over the window; or (`via=netem`) the kernel's netem on the server's
port and the probe's. The sweep and bench hold it around the load and hand the engine the address it routes
to (`NetPath.route`: the proxy's; netem's is the server's own); the load itself never knows.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from ..errors import LoadError
from ..facts import NetFacts
from ..load.target import Target
from ..records import LoadSummary
from ..units import cpu_list
from . import qdisc
from .conditions import NetSpec
from .cost import ProxyUse, ProxyWatch, judge
from .seen import Seen, measure, probe_server
from .toxiproxy import Toxiproxy

DIFFERS = 0.10
"""A figure seen this far from the one asked (as a share of it) is said in the report."""
RTT_FLOOR_MS = 0.5
"""...and a round trip only when it is this far off too: loopback and the proxy themselves take about 0.2 ms."""


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
    proxy: Toxiproxy | None
    """None: netem carries the path, in the kernel (no process to watch)."""
    port: int
    """The load's proxy on 127.0.0.1: the address the engine is handed (netem: the server's own port)."""
    seen: Seen
    cpus: int
    watch: ProxyWatch | None = None
    use: ProxyUse | None = None
    died: int | None = None
    """The proxy's exit status when it ended before the window did (its cost is then not measured)."""

    @property
    def carrier(self) -> str:
        """What carries the path, in words (the console's)."""
        return f"toxiproxy on 127.0.0.1:{self.port}" if self.proxy is not None else f"netem on lo, port {self.port}"

    def route(self, target: Target) -> Target:
        """The target as the engine is handed it: 127.0.0.1 and the port of the proxy, or (netem) the server's own,
        the server's name kept in the Host header. An IPv4 address either way: netem's filters match IPv4, and a
        name such as localhost could resolve to ::1 in the engine and go around them."""
        return via_proxy(target, self.port)

    def watch_from(self, begin: float) -> None:
        """Sample the proxy's CPU from `begin` (the window's start, on `time.monotonic`) until `facts`."""
        if self.proxy is not None:
            self.watch = ProxyWatch(self.proxy.pid, begin)
            self.watch.start()

    def end_window(self) -> None:
        """The window is over: the proxy's use up to now is kept (before the proxy stops), unless it ended in the
        window, which `facts` says."""
        if self.proxy is not None and self.watch is not None and self.use is None and self.died is None:
            use = self.watch.stop()
            self.died = self.proxy.proc.poll()
            self.use = use if self.died is None else None

    def facts(self, completed: int) -> NetFacts:
        """Asked, seen, and the proxy's cost for the requests that ended in the window (`end_window` first)."""
        use = self.use
        asked = self.spec.describe()
        seen = {"rtt_ms": round(self.seen.rtt_s * 1e3, 2), "rtt_spread_ms": round(self.seen.rtt_spread_s * 1e3, 2),
                "rate_bps": _round(self.seen.rate_bps), "rate_up_bps": _round(self.seen.rate_up_bps)}
        out = NetFacts(asked=asked, seen=seen, differs=differs(self.spec, self.seen),
                       proxy=f"toxiproxy {self.proxy.version}" if self.proxy is not None else
                       "netem (the kernel's, on lo)", proxy_cpu_us=None, proxy_cpu_pct=None,
                       proxy_busy_pct=None, proxy_cpus=self.cpus, network_bound=False)
        if self.died is not None:
            out["proxy_died"] = (f"the proxy (toxiproxy) ended in the window (exit status {self.died}): the requests "
                                 "that failed after it are the proxy's, not the server's, and its cost is not measured")
        elif use is not None:
            judge(out, use, completed)
        return out


def _round(v: float | None) -> float | None:
    return None if v is None else round(v)


def differs(spec: NetSpec, seen: Seen) -> list[str]:
    """Each figure seen more than DIFFERS from the one asked (a round trip: and RTT_FLOOR_MS), in words (a
    figure not asked, or of 0: none)."""
    out = []
    pairs = [("round trip", spec.rtt_s * 1e3, seen.rtt_s * 1e3, "ms", RTT_FLOOR_MS),
             ("rate down", (spec.rate_bps or 0) / 1e6, (seen.rate_bps or 0) / 1e6, "Mbit/s", 0.0),
             ("rate up", (spec.rate_up_bps or 0) / 1e6, (seen.rate_up_bps or 0) / 1e6, "Mbit/s", 0.0)]
    for what, asked, got, unit, floor in pairs:
        if asked > 0 and abs(got - asked) > max(DIFFERS * asked, floor):
            off = (got - asked) / asked
            out.append(f"{what} seen {got:,.3g} {unit} against {asked:,.3g} {unit} asked ({off:+.0%})")
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


@contextmanager
def open_netem(spec: NetSpec, port: int, cpus: list[int] | None) -> Iterator[NetPath]:
    """netem laid on the server's `port` and the probe's for as long as the block runs, the conditions seen through
    it first; removed whatever way the block ends."""
    with probe_server() as probe, qdisc.applied(spec, [port, probe[1]]):
        try:
            seen = measure(spec, probe[1])
        except OSError as e:
            raise LoadError(f"--net via=netem: the probe's connection failed through netem: {e}") from None
        yield NetPath(spec, None, port, seen, len(cpus) if cpus else (len(os.sched_getaffinity(0)) or 1))


def via_proxy(target: Target, port: int) -> Target:
    """The target as the engine is handed it: the proxy's address on 127.0.0.1, the server's own name kept in
    the Host header (h2: :authority) unless the user gave one."""
    default = 443 if target.scheme == "https" else 80
    authority = target.host + (f":{target.port}" if target.port != default else "")
    headers = target.headers
    if not any(k.lower() == "host" for k, _ in headers):
        headers = (("Host", authority), *headers)
    return replace(target, url=f"{target.scheme}://127.0.0.1:{port}{target.path}", host="127.0.0.1", port=port,
                   headers=headers)


@contextmanager
def maybe_path(spec: NetSpec | None, target: Target, cpus: str | None) -> Iterator[NetPath | None]:
    """`open_path` to the target's server, pinned to the client's CPUs (`--client-cpus`), or `open_netem` on its
    port (`via=netem`); None without --net."""
    if spec is None:
        yield None
        return
    try:
        addr = socket.getaddrinfo(target.host, target.port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except (socket.gaierror, IndexError):
        raise LoadError(f"--net: cannot resolve {target.host} to an IPv4 address for the proxy") from None
    pinned = cpu_list(cpus) if cpus else None
    if spec.via == "netem":
        if not str(addr).startswith("127."):
            raise LoadError(f"--net via=netem shapes the loopback: {target.host} is {addr}, not on 127.0.0.0/8")
        with open_netem(spec, target.port, pinned) as path:
            yield path
        return
    with open_path(spec, (str(addr), target.port), pinned) as path:
        yield path


def add_net(doc: LoadSummary, facts: NetFacts) -> None:
    """`--net`'s facts into a load's summary: `net`, a warning for each figure seen off the one asked and for a
    proxy that ended in the window, and network-bound said as client-bound too (the verdicts then read the figures
    as a lower bound)."""
    doc["net"] = facts
    said = [*facts["differs"], *([facts["proxy_died"]] if "proxy_died" in facts else [])]
    doc["warnings"] = [*doc["warnings"], *(f"--net {facts['asked']['spec']}: {x}" for x in said)]
    if facts["network_bound"]:
        reason = facts.get("network_bound_reason", "")
        doc["client_bound"] = True
        doc["client_bound_reason"] = "; ".join(x for x in ("network-bound: " + reason, doc.get("client_bound_reason"))
                                               if x)


def seen_words(path: NetPath) -> str:
    """The conditions seen before the window, in a line (the console's)."""
    s = path.seen
    out = f"round trip seen {s.rtt_s * 1e3:,.1f} ms (asked {path.spec.rtt_s * 1e3:g} ms)"
    for what, got, asked in (("down", s.rate_bps, path.spec.rate_bps), ("up", s.rate_up_bps, path.spec.rate_up_bps)):
        if asked:
            out += f", rate {what} {(got or 0) / 1e6:,.3g} Mbit/s (asked {asked / 1e6:g})"
    return out
