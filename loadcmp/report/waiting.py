"""The users who got no answer in the window, in words: per cell, how many of its users (a closed loop's
clients, a ramp's users) got no answer at all in it (`LoadSummary.users_unanswered`): every request they had
in the window failed (a timeout, a refused or reset connection) or was still in flight at its close (waiting in
the server's listen backlog or for a free worker, for example).

Their requests are counted (`timeout`, `unfinished`), but a percentile holds only answers: a server that
answers a quarter of its users and keeps the rest waiting can show a low p99. This says how many waited.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .connects import cell_section
from .streams import clients

if TYPE_CHECKING:
    from ..store.reader import Results


def users_of(result: Mapping[str, Any]) -> int | None:
    """The users a trial's schedule ran (ramp users, closed clients); None: not stored."""
    sched = result.get("schedule") or {}
    n = sched.get("users") or sched.get("clients") or result.get("clients")
    return int(n) if n else None


def cell_line(data: Results, server: str, level: int) -> str | None:
    """'apache-prefork at 600 clients: 450 of 600 users got no answer in the window'; None when all got one."""
    results = [r for t in data.cell(server, level) if (r := t.get("result"))]
    held = [r.get("users_unanswered", 0) for r in results]
    if not any(held):
        return None
    users = users_of(results[0]) or level
    lo, hi = min(held), max(held)
    got = f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"
    per = f" (per trial, over {len(held)} trials)" if len(held) > 1 else ""
    return f"{server} at {clients(data, server, level)}: {got} of {users:,} users got no answer in the window{per}."


def waiting(data: Results) -> list[str]:
    """The report's section: every cell where some users got no answer in the window (none: no section)."""
    return cell_section(data, cell_line,
                        "Every request those users had in the window (one held since the warm-up included) failed (a "
                        "timeout, a refused or reset connection) or was still in flight at its close: they are "
                        "counted by kind and as unfinished, and are in no latency percentile, which holds only "
                        "answers: the percentiles describe the users who were served.")
