"""The client machine's limits: open files, and the kernel's connection tracking.

Every client connection is a file descriptor, and a process may hold only as
many as its RLIMIT_NOFILE allows. The soft limit can be raised up to the hard
one without privileges (`raise_nofile`, in the process that will hold the
connections); beyond the hard limit the only ways are more worker processes or
root. `check_nofile` says so up front, before containers start or workers spawn.

Where Docker's iptables rules are loaded, the kernel tracks every connection,
loopback ones too, and keeps each closed one for nf_conntrack_tcp_timeout_time_wait
(120 s by default): 18,000 new connections a second fill a table of 262,144 (the default here) in
15 s here. A full table drops new connections' packets, and a dropped SYN is sent
again only after a second or more, so connects stall and latencies jump to ~1 s as
if the server were slow. `conntrack_note` says so after a load (`make setup` makes
the table larger and its TIME_WAIT shorter).
"""

from __future__ import annotations

import contextlib
import math
import resource
from pathlib import Path

from ...errors import LoadError

UNLIMITED = resource.RLIM_INFINITY
"""What `nofile()` gives for a limit that is not set."""


def nofile() -> tuple[int, int]:
    """This process's (soft, hard) open-file limit: the one place it is read."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft, hard


HEADROOM = 64
"""Descriptors a client process needs besides its connections (stdio, pipes, the loop)."""


def files_needed(connections: int, workers: int) -> int:
    """Open files one client process needs for its share of `connections`."""
    return math.ceil(connections / max(1, workers)) + HEADROOM


def check_nofile(connections: int, workers: int) -> None:
    """Refuse a load whose per-process share cannot fit the hard open-file limit."""
    hard = nofile()[1]
    if hard != UNLIMITED:
        _refuse_above(connections, workers, hard)


def raise_nofile(connections: int, workers: int = 1) -> int:
    """Raise this process's soft limit for its share (up to the hard limit) and
    return it; LoadError, with the same message as `check_nofile`, if short."""
    needed = files_needed(connections, workers)
    soft, hard = nofile()
    wanted = hard if hard != UNLIMITED else max(soft, needed)
    if soft < wanted:
        with contextlib.suppress(ValueError, OSError):  # refused: the check below says why
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    soft = nofile()[0]
    _refuse_above(connections, workers, soft)
    return soft


MAX_WORKERS_ADVISED = 64
"""Beyond this many client processes, `--workers N` is no advice a machine can follow."""


def _refuse_above(connections: int, workers: int, allowed: int) -> None:
    per = files_needed(connections, workers)
    if per > allowed:
        need = math.ceil(connections / max(1, allowed - HEADROOM))
        if need > MAX_WORKERS_ADVISED:
            raise LoadError(
                f"{connections:,} clients are more than this machine can hold open: it allows {allowed:,} open "
                f"files per process, so they would need {need:,} client processes; use fewer clients"
            )
        raise LoadError(
            f"{connections} clients need about {per} open files per client process and this machine allows "
            f"{allowed}: use --workers {need} (or more), or raise the hard limit (ulimit -Hn) as root"
        )


CONNTRACK_STAT = Path("/proc/net/stat/nf_conntrack")
"""The connection tracker's counters, one row per CPU, in hex."""


def conntrack_drops(stat: Path = CONNTRACK_STAT) -> int | None:
    """Packets dropped so far because the connection-tracking table was full (its
    `drop` counter, over all CPUs); None where connections are not tracked."""
    try:
        head, *rows = stat.read_text().splitlines()
        col = head.split().index("drop")
        return sum(int(row.split()[col], 16) for row in rows if row.strip())
    except (OSError, ValueError, IndexError):
        return None


def conntrack_note(before: int | None, after: int | None) -> str | None:
    """A warning when packets were dropped between two readings of `conntrack_drops`."""
    if before is None or after is None or after <= before:
        return None
    return (f"this machine's kernel dropped {after - before:,} packets because its connection-tracking table "
            f"was full (nf_conntrack, which Docker's iptables rules turn on for loopback too): a dropped SYN is "
            f"sent again after 1 s or more, so connects stalled and latencies include that wait; raise "
            f"net.netfilter.nf_conntrack_max or lower net.netfilter.nf_conntrack_tcp_timeout_time_wait "
            f"(`make setup` does both)")
