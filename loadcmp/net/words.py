"""`--net`'s facts in words, for the console (`cli.display`) and the report: the path asked and seen, and
what the proxy cost. Read from a stored summary's `net` (facts.NetFacts), never from a running proxy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _mbit(bps: Any) -> str:
    return f"{bps / 1e6:,.3g} Mbit/s" if isinstance(bps, (int, float)) else "-"


def path_text(net: Mapping[str, Any]) -> str:
    """`rtt=100ms` asked -> seen, in one line: round trip, then each rate asked."""
    a, s = net.get("asked") or {}, net.get("seen") or {}
    out = f"{a.get('spec')}: round trip {a.get('rtt_ms', 0):g} ms asked, {s.get('rtt_ms', 0):,.1f} ms seen"
    for key, what in (("rate_bps", "down"), ("rate_up_bps", "up")):
        if a.get(key):
            out += f"; rate {what} {_mbit(a[key])} asked, {_mbit(s.get(key))} seen"
    if a.get("loss"):
        out += f"; loss {a['loss']:.2%}"
    if a.get("via") == "netem":
        out += "; carried by the kernel's netem (packet-level, the rates shared by the connections)"
    return out


def proxy_text(net: Mapping[str, Any]) -> str | None:
    """The proxy's cost over the window (None: not measured)."""
    if net.get("proxy_cpu_pct") is None:
        return None
    cost = net.get("proxy_cpu_us")
    return (f"{net.get('proxy', 'toxiproxy')}: CPU {net['proxy_cpu_pct']:.0f}% (100 = one core)"
            + (f", {cost:,.0f} µs per request" if cost else "")
            + (f", busy {net['proxy_busy_pct']:.0f}% of its {net.get('proxy_cpus')} CPU(s)"
               if net.get("proxy_busy_pct") is not None else "")
            + ("; NETWORK-BOUND" if net.get("network_bound") else ""))


def rows(net: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The console's rows of a summary's `net` (none without --net)."""
    if not net:
        return []
    out = [("net", path_text(net))]
    if (proxy := proxy_text(net)) is not None:
        out.append(("proxy", proxy))
    return out
