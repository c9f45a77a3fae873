"""The servers' evidence in words: the one place a trial's cause records (`CauseDoc`) become sentences.

A record keeps the figures (the tunable and its value, the line quoted and how often it was logged,
the status pages' peak or count, the failure kinds it makes); its sentence is written here, when it is
shown: in Table 1's notes, the story's causes, a capacity search's edge. A record read from an older
run.json keeps that run's words (`said`, see `store.reader.causes_of`) and reads as it did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..facts import SlowConnects
from ..records import CauseDoc, TrialRecord
from .connects import share_said

def times(n: float) -> str:
    """'once', '1,234 times'."""
    return "once" if n == 1 else f"{n:,.0f} times"


def failures_said(kinds: list[str] | tuple[str, ...], failures: Mapping[str, int]) -> str:
    """The client failures a cause explains, in words; never a kind that was not seen."""
    total = sum(failures.values())
    if not total:
        return "no request failed: they waited"
    mine = {k: failures[k] for k in kinds if failures.get(k)}
    listed = ", ".join(f"{n:,} {k}" for k, n in mine.items())
    if mine and sum(mine.values()) == total:
        return f"the failures were {listed}"
    if mine:
        return f"the failures included {listed} (of {total:,})"
    seen = ", ".join(f"{n:,} {k}" for k, n in failures.items() if n)
    return f"it makes none of the failures seen ({seen})" if kinds else ""


def head(c: CauseDoc) -> str:
    """The limit: its phrase, with the tunable and its value ('… (nginx.worker_connections 768)') and any other
    its words name ('(apache.ListenBacklog 511, prefork.MaxRequestWorkers 150)')."""
    if c["cause"] == "oom" and "said" not in c:
        memory = c.get("memory")
        return c["phrase"] + (f" of {memory / 2**20:,.0f} MiB" if memory else "")
    named = ([f"{c['setting']} {c.get('value')}"] if "setting" in c else []) + [f"{k} {v}" for k, v in
                                                                               c.get("also", {}).items()]
    return c["phrase"] + (f" ({', '.join(named)})" if named else "")


def evidence(c: CauseDoc, failures: Mapping[str, int], slow: SlowConnects | None = None) -> str:
    """What shows the limit (the line quoted, the status pages, the kernel's count, with the trial's `slow`
    connects where its words place them: `{slow}`), then the failures it explains among the trial's
    (`result.failures`); '' when an older note said nothing after its limit."""
    if "said" in c:
        return c["said"]
    parts = []
    if c.get("logged") and "quote" in c:
        parts.append(f"'{c['quote']}' logged {times(c['logged'])}")
    if "peak" in c and "peak_said" in c:
        parts.append(c["peak_said"].format(limit=c.get("value")))
    if "held" in c and "held_said" in c:
        parts.append(c["held_said"].format(held=c["held"], busy=c.get("held_busy", 0), limit=c.get("value")))
    if c.get("rose") and "rose_said" in c:
        waited = f": {share_said(slow)}" if slow and slow["over_1s"] else ""
        parts.append(c["rose_said"].format(times=times(c["rose"]), slow=waited))
    if c.get("oom_kills"):
        parts.append(f"{c['oom_kills']:,} server process(es) killed (the cgroup's oom_kill count)")
    tail = failures_said(c["kinds"], failures) if c.get("kinds") else ""
    return "; ".join(parts + ([tail] if tail else []))


def note(c: CauseDoc, failures: Mapping[str, int], slow: SlowConnects | None = None) -> str:
    """The whole note: the limit — what shows it; the failures it explains."""
    said = evidence(c, failures, slow)
    return head(c) + (f" — {said}" if said else "")


Seen = tuple[CauseDoc, TrialRecord, list[int], int]
"""A cause across trials: its first record, that record's trial, the levels it was seen at, in how many trials."""


def by_cause(trials: Iterable[tuple[TrialRecord, list[CauseDoc]]]) -> list[Seen]:
    """Each cause of these trials (each with its records) once, in the order first seen."""
    seen: dict[str, Seen] = {}
    for t, records in trials:
        for c in records:
            first, trial, levels, n = seen.get(c["cause"], (c, t, [], 0))
            seen[c["cause"]] = (first, trial, levels + [t["level"]] if t["level"] not in levels else levels, n + 1)
    return list(seen.values())
