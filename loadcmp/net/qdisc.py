"""The netem path (`--net via=netem`, and the one that takes `loss=`): the conditions laid on the loopback with tc
for the server's port (and the probe's) for as long as a load runs, removed whatever way it ends.

On loopback every packet leaves once through `lo`'s egress, both ways, so one qdisc there carries the whole
path: a `prio` root (its three usual bands left to all other traffic) with two bands of its own, each under a
netem of half the round trip: the server's packets (source port = its port) go down, the clients' (destination
port = its port) go up. Only the ports named are touched. Whether the kernel has it: `netem.missing`.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import LoadError
from .conditions import NetSpec

ROOT = "c0de:"
"""The root qdisc's handle: loadcmp's, so that a left-over one names itself (`tc qdisc show dev lo`)."""
DOWN, UP = "c0de:4", "c0de:5"
"""The prio bands of the server's packets (down to the clients) and of the clients' (up to the server)."""
PRIOMAP = "1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1".split()
LIMIT = 1_000_000
"""Packets each netem band may hold (its default, 1000, drops packets a loaded path delays)."""
"""Linux's default priomap: other traffic on `lo` keeps the three usual bands."""


def _netem(delay_ms: int, jitter_ms: int, bps: float | None, loss: float) -> list[str]:
    """One direction's netem arguments (a jitter as netem's normal spread around the delay)."""
    # netem's own queue holds 1000 packets by default: at a 30 ms delay that drops beyond ~33k packets/s, a loss
    # nobody asked for (Toxiproxy drops nothing), so it is made as long as a load can fill
    out = ["netem", "limit", str(LIMIT), "delay", f"{delay_ms}ms"]
    out += [f"{jitter_ms}ms", "distribution", "normal"] if jitter_ms else []
    if bps:
        out += ["rate", f"{round(bps)}bit"]
    if loss:
        out += ["loss", f"{loss * 100:g}%"]
    return out


def commands(spec: NetSpec, ports: list[int]) -> list[list[str]]:
    """The tc commands that lay `spec` on `lo` for `ports`: half the round trip (and of its jitter) each way, as
    Toxiproxy's toxics split it; `rate` down and `rate-up` up; `loss` each way."""
    rtt_ms, jitter_ms = round(spec.rtt_s * 1e3), round(spec.jitter_s * 1e3)
    down_ms, down_j = math.ceil(rtt_ms / 2), math.ceil(jitter_ms / 2)
    lo = ["tc", "qdisc", "add", "dev", "lo"]
    out = [[*lo, "root", "handle", ROOT, "prio", "bands", "5", "priomap", *PRIOMAP],
           [*lo, "parent", DOWN, "handle", "c0d4:", *_netem(down_ms, down_j, spec.rate_bps, spec.loss)],
           [*lo, "parent", UP, "handle", "c0d5:", *_netem(rtt_ms - down_ms, jitter_ms - down_j, spec.rate_up_bps,
                                                          spec.loss)]]
    for port in ports:
        for field, band in (("sport", DOWN), ("dport", UP)):
            out.append(["tc", "filter", "add", "dev", "lo", "parent", ROOT, "protocol", "ip", "prio", "1", "u32",
                        "match", "ip", field, str(port), "0xffff", "flowid", band])
    return out


def _tc(args: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LoadError(f"--net via=netem: {' '.join(args[:4])} did not run ({e})") from None


def _root_now() -> str:
    """`lo`'s root qdisc as tc shows it ('' when tc shows none)."""
    shown = _tc(["tc", "qdisc", "show", "dev", "lo"]).stdout.strip().splitlines()
    return next((line for line in shown if " root " in line or line.startswith("qdisc noqueue")), "")


@contextmanager
def applied(spec: NetSpec, ports: list[int]) -> Iterator[None]:
    """`spec` laid on `lo` for `ports` for as long as the block runs, removed whatever way it ends. Another root
    qdisc on `lo` (a left-over of a killed run, or the machine's own) is never replaced: LoadError, one line."""
    root = _root_now()
    if root and not root.startswith("qdisc noqueue"):
        own = root.split()[2:3] == [ROOT]
        hint = (" (loadcmp's own: another run using netem now, or one that was killed, which leaves it: "
                "tc qdisc del dev lo root)") if own else ""
        raise LoadError(f"--net via=netem: lo already has a root qdisc ({root.strip()}), which loadcmp does not "
                        f"replace{hint}")
    try:
        for args in commands(spec, ports):
            r = _tc(args)
            if r.returncode != 0:
                said = (r.stderr or r.stdout).strip().splitlines()
                raise LoadError(f"--net via=netem: {' '.join(args)} failed: {said[-1] if said else r.returncode}")
        yield
    finally:
        _tc(["tc", "qdisc", "del", "dev", "lo", "root", "handle", ROOT])
