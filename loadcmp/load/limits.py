"""The open-file limit: one check, one message, wherever clients are planned.

Every client connection is a file descriptor, and a process may hold only as
many as its RLIMIT_NOFILE allows. The soft limit can be raised up to the hard
one without privileges (`raise_nofile`, in the process that will hold the
connections); beyond the hard limit the only ways are more worker processes or
root. `check_nofile` says so up front, before containers start or workers spawn.
"""

from __future__ import annotations

import contextlib
import math
import resource

from ..errors import LoadError

HEADROOM = 64
"""Descriptors a client process needs besides its connections (stdio, pipes, the loop)."""


def files_needed(connections: int, workers: int) -> int:
    """Open files one client process needs for its share of `connections`."""
    return math.ceil(connections / max(1, workers)) + HEADROOM


def local_ports() -> tuple[int, int] | None:
    """The kernel's range of local ports for outgoing connections (None: not readable)."""
    with contextlib.suppress(OSError, ValueError):
        lo, hi = (int(x) for x in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
        return lo, hi
    return None


def check_ports(connections: int) -> None:
    """Refuse more connections than this machine can hold open to one server address:
    each takes a local port of its own, whatever the number of client processes."""
    ports = local_ports()
    if ports is None:
        return
    lo, hi = ports
    if connections > hi - lo + 1:
        raise LoadError(
            f"{connections:,} clients cannot be connected at once from this machine: each needs a local port of "
            f"its own and net.ipv4.ip_local_port_range gives {hi - lo + 1:,} ({lo}-{hi}); use fewer clients, or widen "
            "the range as root (sysctl -w net.ipv4.ip_local_port_range='1024 65535')"
        )


def check_limits(connections: int, workers: int) -> None:
    """Refuse, before anything starts, a load this machine cannot hold: more connections than
    local ports (`check_ports`), or a share per process above the open-file limit (`check_nofile`)."""
    check_ports(connections)
    check_nofile(connections, workers)


def check_nofile(connections: int, workers: int) -> None:
    """Refuse a load whose per-process share cannot fit the hard open-file limit."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY:
        _refuse_above(connections, workers, hard)


def raise_nofile(connections: int, workers: int = 1) -> int:
    """Raise this process's soft limit for its share (up to the hard limit) and
    return it; LoadError, with the same message as `check_nofile`, if short."""
    needed = files_needed(connections, workers)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft < wanted:
        with contextlib.suppress(ValueError, OSError):  # refused: the check below says why
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    _refuse_above(connections, workers, soft)
    return soft


def _refuse_above(connections: int, workers: int, allowed: int) -> None:
    per = files_needed(connections, workers)
    if per > allowed:
        need = math.ceil(connections / max(1, allowed - HEADROOM))
        raise LoadError(
            f"{connections} clients need about {per} open files per client process and this machine allows "
            f"{allowed}: use --workers {need} (or more), or raise the hard limit (ulimit -Hn) as root"
        )
