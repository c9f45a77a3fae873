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
