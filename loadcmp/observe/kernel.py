"""The kernel's own word on the server's listen queue: its TCP counters, read once a second.

No server logs a connection its listen queue had no room for. The kernel counts it: `TcpExt: ListenOverflows`
(the accept queue was full) and `ListenDrops` (a SYN dropped at the listening socket, those among them), and
`TCPSynRetrans` counts the SYNs and SYN-ACKs sent again after TCP's retransmission timeout (1 s, then 3 s) in
that network namespace (a client's retried SYN, a server's retried SYN-ACK). The counters are read from
`/proc/<pid>/net/netstat` of the front container's main process (the pid the engine reports), which is that
process's network namespace; its scope is the container's network mode (`host`: the host's). The lab's
containers run with host networking, so that namespace is the host's, shared with loadcmp's own client and
any other traffic on the machine: the figures say so (`SCOPE_SAID`), and a cause takes them as this server's
only where its own client saw them (`evidence`). A remote engine's processes cannot be read from
here, and the host's counters would be another machine's: the figures are then left out, and why said once.

Parsing is a pure function of the file's text (`parse_netstat`), tested on a copy of a real one in
tests/test_kernel.py. The sampler (`metrics.Sampler`) keeps the per-second deltas as server.parquet's columns
`listen_overflows`, `listen_drops` and `syn_retrans`; `totals` sums them over the window for the trial's
`ServerMetrics.kernel`, beside the scope and the host's `net.core.somaxconn` (the cap of every backlog).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..facts import KernelDoc

if TYPE_CHECKING:
    from ..lab.containers import Deployment

PROC = Path("/proc")
HOST_NETSTAT = PROC / "net" / "netstat"
SOMAXCONN = PROC / "sys" / "net" / "core" / "somaxconn"
COUNTERS = {"ListenOverflows": "listen_overflows", "ListenDrops": "listen_drops", "TCPSynRetrans": "syn_retrans"}
"""TcpExt's counter -> its column in server.parquet (and key of `KernelDoc`)."""
SCOPE_SAID = {"host": "the host's counters: other traffic on this machine counts too",
              "server": "the server's own network namespace"}
"""What the counters cover, in words, wherever their figures are shown."""


def parse_netstat(text: str) -> dict[str, int]:
    """/proc/net/netstat's text (a header line of names, then a line of values, per protocol) ->
    {'TcpExt.ListenOverflows': 12, ...}; a pair whose lines do not match is skipped."""
    out: dict[str, int] = {}
    lines = text.splitlines()
    for head, values in zip(lines[::2], lines[1::2], strict=False):
        proto, _, names = head.partition(":")
        proto2, _, nums = values.partition(":")
        if proto != proto2 or len(names.split()) != len(nums.split()):
            continue
        for name, num in zip(names.split(), nums.split(), strict=True):
            try:
                out[f"{proto}.{name}"] = int(num)
            except ValueError:
                continue
    return out


def counters(text: str) -> dict[str, int]:
    """The listen-queue counters of a netstat text, by their column names (a counter absent is left out)."""
    parsed = parse_netstat(text)
    return {col: parsed[f"TcpExt.{name}"] for name, col in COUNTERS.items() if f"TcpExt.{name}" in parsed}


def somaxconn() -> int | None:
    """The host's net.core.somaxconn: every listen backlog is cut to it (None: unreadable)."""
    try:
        return int(SOMAXCONN.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Counters:
    """Where the counters are read (None: they are not) and the last reading, for the per-second deltas."""

    path: Path | None
    facts: KernelDoc = field(default_factory=lambda: KernelDoc())
    """The trial's scope and somaxconn, read once; the window's totals are added by `totals`."""
    last: dict[str, int] | None = None

    def read(self) -> dict[str, int]:
        return {} if self.path is None else counters(self.path.read_text())

    def mark(self) -> None:
        """The reading the next deltas start from (the window's start)."""
        if self.path is not None:
            self.last = self.read()

    def deltas(self) -> dict[str, int]:
        """How much each counter rose since the last reading (0 at the first), as server row columns."""
        if self.path is None:
            return {}
        cur = self.read()
        last = cur if self.last is None else self.last
        self.last = cur
        return {k: max(0, v - last.get(k, v)) for k, v in cur.items()}


def open_counters(dep: Deployment, note: Callable[[str], None]) -> Counters:
    """The counters of the front container's network namespace, else this host's when the engine is local;
    none from another machine's engine. Each fallback is told to `note` once."""
    if dep.host.remote:
        note("the kernel's TCP counters (listen queue overflows) are not read: the engine runs on another machine")
        return Counters(None)
    pid = None
    try:
        pid = int(dep.front.attrs["State"]["Pid"])
        path = PROC / str(pid) / "net" / "netstat"
        counters(path.read_text())
        scope = "host" if dep.front.attrs["HostConfig"]["NetworkMode"] == "host" else "server"
    except (OSError, KeyError, TypeError, ValueError) as e:
        note(f"the kernel's TCP counters of the server's process {pid or '?'} could not be read "
             f"({type(e).__name__}: {e}): the host's are read instead")
        path, scope = HOST_NETSTAT, "host"
    cap, key = somaxconn(), dep.stack.backlog
    asked = dep.settings.get(key) if key else None
    if cap and isinstance(asked, int) and asked > cap and scope == "host":
        note(f"{key} {asked:,} is more than the kernel's net.core.somaxconn {cap:,}: the kernel cuts it to {cap:,}")
    return Counters(path, KernelDoc(scope=scope, somaxconn=cap))


def totals(rows: Iterable[Mapping[str, Any]], facts: KernelDoc | None) -> KernelDoc | None:
    """The window's totals of the per-second deltas with the trial's facts; None when none were read."""
    rows = list(rows)
    if not facts or not any(col in r for r in rows for col in COUNTERS.values()):
        return None
    doc = KernelDoc(**facts)
    for col in COUNTERS.values():
        if any(col in r for r in rows):  # a counter this kernel does not have is left out, not said to be 0
            doc[col] = int(sum(v for r in rows if isinstance(v := r.get(col), (int, float)) and v == v))  # type: ignore[literal-required]
    return doc
